import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { startBot } from '../helpers/stack.js';
import { type TestStore, testStore } from '../helpers/stores.js';

/** A raw keep-alive connection: what it was answered, and when the bot closed it. */
interface Client {
  socket: Socket;
  answer: () => string;
  closed: Promise<void>;
}

async function open(port: number): Promise<Client> {
  const socket = connect(port, '127.0.0.1');
  let answer = '';
  socket.on('data', (chunk: Buffer) => {
    answer += chunk.toString('latin1');
  });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, answer: () => answer, closed };
}

describe('stopping', () => {
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let prepared: TestStore;
  beforeAll(async () => {
    prepared = await testStore();
    slack = await FakeSlack.start();
    agent = await AgentServiceEmulator.start();
  });
  afterAll(async () => {
    await Promise.all([slack.stop(), agent.stop(), prepared.remove()]);
  });

  // A load balancer's probe (or Slack's delivery) in flight when SIGTERM comes leaves its keep-alive connection
  // idle once answered: the bot must not wait on it (seconds of a drain bound spent on nothing).
  it('does not wait on a keep-alive connection whose request was in flight when stopping began', async () => {
    const bot = await startBot({ slack, agent, store: prepared.store });
    const ports = [bot.port, Number(new URL(bot.adminUrl).port)];
    const clients = await Promise.all(ports.map(open));
    // Headers not finished yet: the connection is busy, so stopping cannot close it as idle.
    for (const [i, client] of clients.entries())
      client.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${ports[i]}\r\n`);
    const started = Date.now();
    const stopped = bot.bot.stop(0).then(() => Date.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (const client of clients) client.socket.write('Connection: keep-alive\r\n\r\n');
    await Promise.all(clients.map((client) => client.closed));
    for (const client of clients) expect(client.answer()).toMatch(/^HTTP\/1\.1 \d{3}/);
    // The public port cuts busy connections at 5 s, the admin port idle ones at 3 s: well under either.
    expect(await stopped).toBeLessThan(2_000);
  });
});
