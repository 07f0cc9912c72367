import { createServer } from 'node:net';

/** Ports already handed out in this process: the system may offer a just-closed port again at once. */
const handedOut = new Set<number>();

function probePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A TCP port that was free a moment ago (for servers that cannot report the port they bound), never one this
 * process was given before: two calls in a row (PORT and ADMIN_PORT, say) once got the same port.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await probePort();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}
