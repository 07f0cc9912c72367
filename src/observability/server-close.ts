import type { Server } from 'node:http';

const SWEEP_MS = 50;

/**
 * While `server` closes: its idle keep-alive connections are closed at once and again every few milliseconds,
 * so one whose request was still in flight when closing began goes as soon as it is answered (Node would keep
 * it open for its keep-alive timeout, and close() would wait for it); after `cutMs`, busy ones are cut too.
 * Returns the function that ends this once the server is closed.
 */
export function dropConnectionsWhileClosing(server: Server, cutMs?: number): () => void {
  server.closeIdleConnections();
  const sweep = setInterval(() => server.closeIdleConnections(), SWEEP_MS).unref();
  const cut = cutMs === undefined ? undefined : setTimeout(() => server.closeAllConnections(), cutMs).unref();
  return () => {
    clearInterval(sweep);
    clearTimeout(cut);
  };
}
