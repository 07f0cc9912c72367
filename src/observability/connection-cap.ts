import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Bounds a server's open connections without ever turning a newcomer away: at the cap, the oldest connection
 * that is not being answered (one still sending its request, or idle between requests) is closed instead.
 * Node's own `maxConnections` refuses newcomers, so whoever holds that many connections open (slow or idle
 * clients) shuts out every health probe; here a probe's connection, answered at once, outlives theirs.
 */
export function capConnections(server: Server, max: number): void {
  // Insertion order is age order: the first entry is the oldest connection.
  const open = new Map<Socket, { answering: number }>();
  server.on('connection', (socket: Socket) => {
    open.set(socket, { answering: 0 });
    socket.once('close', () => open.delete(socket));
    if (open.size <= max) return;
    for (const [candidate, state] of open) {
      if (state.answering === 0 && candidate !== socket) {
        candidate.destroy();
        return;
      }
    }
    // Every other connection is being answered (each briefly: see the server's timeouts): this one waits out.
    socket.destroy();
  });
  server.on('request', (req, res) => {
    const state = open.get(req.socket);
    if (!state) return;
    state.answering++;
    res.once('close', () => {
      state.answering--;
    });
  });
}
