import type { IncomingMessage } from 'node:http';
import { Server } from 'node:net';

export const LOOPBACK = '127.0.0.1';

const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/i;

/**
 * Whether a request to the demo comes from this machine's own page (or the bot), not from another site.
 * The servers listen on loopback only, but a browser on this machine can still be made to reach them:
 * a DNS-rebound name carries a foreign Host, another site's page a foreign Origin (on POSTs and on
 * fetches) or a cross-site Sec-Fetch-Site (even on a plain GET such as an <img>). A link followed to the
 * page itself (a GET navigation) is fine: only what the page's own script does has effects.
 */
export function isLocalRequest(req: IncomingMessage): boolean {
  const host = req.headers.host ?? '';
  if (!LOOPBACK_HOST.test(host)) return false;
  const origin = req.headers.origin;
  if (origin !== undefined && origin.toLowerCase() !== `http://${host.toLowerCase()}`) return false;
  const site = req.headers['sec-fetch-site'];
  if (site === undefined || site === 'same-origin' || site === 'none') return true;
  return req.headers['sec-fetch-mode'] === 'navigate' && (req.method === 'GET' || req.method === 'HEAD');
}

type Listen = (...args: unknown[]) => Server;

/**
 * Runs `start` with every server it starts without naming an address bound to loopback instead of every
 * interface. The bot's HTTP receiver takes only a port (src/ has no listen-address setting yet), and the
 * demo's bot must not be reachable from the network: its health and metrics routes need no signature.
 * Nothing else in the process starts a server while the bot starts.
 */
export async function onLoopback<T>(start: () => Promise<T>): Promise<T> {
  const prototype = Server.prototype as unknown as { listen: Listen };
  const original = prototype.listen;
  prototype.listen = function (this: Server, ...args: unknown[]) {
    const [port, second] = args;
    // listen(port), listen(port, callback), listen({ port }): no address, so Node would take every interface.
    if (typeof port === 'number' && (args.length === 1 || typeof second === 'function'))
      return original.call(this, port, LOOPBACK, ...args.slice(1));
    if (isRecord(port) && port.host === undefined && port.path === undefined)
      return original.call(this, { ...port, host: LOOPBACK }, ...args.slice(1));
    return original.apply(this, args);
  };
  try {
    return await start();
  } finally {
    prototype.listen = original;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
