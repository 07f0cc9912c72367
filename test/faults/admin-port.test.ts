import { get } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { type BotProcess, spawnBot } from '../helpers/bot-process.js';
import { type TestStore, testStore } from '../helpers/stores.js';
import { sleep, waitFor } from '../helpers/wait.js';

/**
 * The admin port (/metrics, /healthz, /readyz) against slow and many clients: Kubernetes' liveness probe asks
 * it, so whoever can hold its connections must not get the pod restarted. The bot runs in its own process.
 */

let slack: FakeSlack;
let agent: AgentServiceEmulator;
let prepared: TestStore;
let bot: BotProcess;
const clients: Socket[] = [];

beforeAll(async () => {
  prepared = await testStore();
  slack = await FakeSlack.start();
  agent = await AgentServiceEmulator.start();
  bot = await spawnBot({ slack, agent, store: prepared.store });
}, 60_000);
afterEach(() => {
  for (const socket of clients.splice(0)) socket.destroy();
});
afterAll(async () => {
  if (bot.child.exitCode === null) {
    bot.child.kill('SIGKILL');
    await bot.exited;
  }
  await Promise.all([slack.stop(), agent.stop(), prepared.remove()]);
});

const adminPort = () => Number(new URL(bot.adminUrl).port);

/** A client that opens a connection and sends `first`, then (if given) one more byte every `dripMs`. */
async function slowClient(first: string, dripMs?: number): Promise<void> {
  const socket = connect(adminPort(), '127.0.0.1');
  socket.on('error', () => {});
  // Whatever the bot answers (a 408) is read, so its closing the connection is seen.
  socket.resume();
  clients.push(socket);
  await new Promise<void>((resolve) => {
    socket.once('connect', resolve);
    socket.once('close', () => resolve());
  });
  if (first) socket.write(first);
  if (dripMs === undefined) return;
  const drip = setInterval(() => {
    if (socket.destroyed) clearInterval(drip);
    else socket.write('x');
  }, dripMs);
  socket.once('close', () => clearInterval(drip));
}

/**
 * How long /healthz takes to answer 200 (Infinity when it fails or takes over 3 s). On a new connection each
 * time, as the kubelet probes: a kept-alive one from an earlier test would be the oldest idle connection, which
 * the cap closes first, and the next probe would then fail on the client's side.
 */
function probe(): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => {
    const request = get(`${bot.adminUrl}/healthz`, { agent: false, timeout: 3_000 }, (response) => {
      response.resume();
      response.once('end', () =>
        resolve(response.statusCode === 200 ? performance.now() - started : Number.POSITIVE_INFINITY),
      );
      response.once('error', () => resolve(Number.POSITIVE_INFINITY));
    });
    request.once('timeout', () => request.destroy());
    request.once('error', () => resolve(Number.POSITIVE_INFINITY));
  });
}

/** Probes /healthz every 250 ms for `ms`, as a kubelet would (more often), and returns each probe's time. */
async function probeFor(ms: number, meanwhile?: () => Promise<void>): Promise<number[]> {
  const times: number[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    times.push(await probe());
    await meanwhile?.();
    await sleep(250);
  }
  return times;
}

describe('the admin port under slow and many clients', () => {
  it('answers /healthz within a second while 150 clients hold connections open, sending nothing', async () => {
    for (let i = 0; i < 150; i++) await slowClient('');
    // The connections beyond the cap of 100 are closed at once (the oldest ones), long before the 3 s a silent
    // one may last.
    await waitFor(
      () => clients.filter((socket) => socket.closed).length >= 50,
      'the connections over the cap closed',
      1_500,
    );
    const times = await probeFor(4_000);
    expect(times.filter((ms) => ms > 1_000)).toEqual([]);
    // And none is held much longer than the 3 s a connection may stay silent.
    await waitFor(() => clients.every((socket) => socket.closed), 'every silent client closed', 2_000);
  });

  it('answers /healthz within a second while 150 clients send their headers a byte at a time', async () => {
    for (let i = 0; i < 150; i++)
      await slowClient('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', 300);
    const times = await probeFor(4_000);
    expect(times.filter((ms) => ms > 1_000)).toEqual([]);
  });

  it('answers /healthz within a second while new slow clients keep arriving, 40 a probe', async () => {
    for (let i = 0; i < 120; i++) await slowClient('GET /healthz HTTP/1.1\r\n', 500);
    const times = await probeFor(6_000, async () => {
      for (let i = 0; i < 40; i++) await slowClient('GET /healthz HTTP/1.1\r\n', 500);
    });
    expect(times.filter((ms) => ms > 1_000)).toEqual([]);
  });
});
