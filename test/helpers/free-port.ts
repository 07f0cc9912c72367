import { randomInt } from 'node:crypto';
import { createServer } from 'node:net';

/**
 * Ports for servers that cannot report the port they bound (the bot's PORT and ADMIN_PORT) come from a band
 * below Linux's ephemeral range (32768-60999). A port probed there and closed was once taken, before the bot
 * bound it, by a fake listening on port 0 in another test process: the system hands out ephemeral ports
 * from the range above, never from this band.
 */
const BAND_START = 15_000;
const SLICE_SIZE = 1_000;
const SLICES = 17;

/**
 * Each test worker walks a slice of the band of its own (Vitest numbers the workers running at once), so two
 * workers never hand out the same port: a bot in a child process binds its port seconds after it was
 * probed, and another worker probing the same port meanwhile found it free (EADDRINUSE, or a readiness
 * probe answered by the other worker's bot). A second run beside this one (two test files run by hand at once)
 * shifts its slices by TEST_PORT_SLICE_OFFSET.
 */
const worker =
  Number(process.env.VITEST_POOL_ID ?? randomInt(SLICES)) + Number(process.env.TEST_PORT_SLICE_OFFSET ?? 0);
const SLICE_START = BAND_START + (worker % SLICES) * SLICE_SIZE;
const SLICE_END = SLICE_START + SLICE_SIZE;

/** Each process walks its slice from a random point. */
let next = randomInt(SLICE_START, SLICE_END);

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
  for (let tries = 0; tries < SLICE_SIZE; tries++) {
    const port = next;
    next = next + 1 >= SLICE_END ? SLICE_START : next + 1;
    if (handedOut.has(port) || !(await isFree(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port between ${SLICE_START} and ${SLICE_END}`);
}
