import { randomInt } from 'node:crypto';
import { createServer } from 'node:net';

/**
 * Ports for servers that cannot report the port they bound (the bot's PORT and ADMIN_PORT) come from a band
 * below Linux's ephemeral range (32768-60999). A port probed there and closed was once taken, before the bot
 * bound it, by a fake listening on port 0 in another test process: the system hands out ephemeral ports
 * from the range above, never from this band.
 */
const BAND_START = 15_000;
const BAND_END = 32_000;

/** Each process walks the band from its own random point, so parallel test processes seldom meet. */
let next = randomInt(BAND_START, BAND_END);

/** Ports already handed out in this process: never the same one twice (PORT and ADMIN_PORT once were). */
const handedOut = new Set<number>();

/** Whether `port` can be bound now, on every interface as the bot binds it. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A TCP port that is free now, outside the system's ephemeral range, never one this process was given. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < BAND_END - BAND_START; tries++) {
    const port = next;
    next = next + 1 >= BAND_END ? BAND_START : next + 1;
    if (handedOut.has(port) || !(await isFree(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port between ${BAND_START} and ${BAND_END}`);
}
