import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { appMentionEvent, nextTs } from '../helpers/slack-events.js';
import { metric, type RunningBot, startBot } from '../helpers/stack.js';
import { type TestStore, testStore } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

// One bot in Socket Mode for the file's cases: each talks in a channel of its own or only asks the
// endpoints, and the one that cuts the WebSocket waits until the bot has reconnected.
let slack: FakeSlack;
let agent: AgentServiceEmulator;
let bot: RunningBot;
let store: TestStore;

beforeAll(async () => {
  store = await testStore();
  slack = await FakeSlack.start();
  agent = await AgentServiceEmulator.start();
  bot = await startBot({
    slack,
    agent,
    store: store.store,
    socketMode: true,
  });
  await slack.waitForSocketConnection();
});
afterAll(async () => {
  await bot?.stop();
  await Promise.all([slack?.stop(), agent?.stop(), store?.remove()]);
});

describe('Socket Mode', () => {
  it('answers a mention delivered over the WebSocket, acknowledging the envelope', async () => {
    const rootTs = nextTs();
    const { envelopeId } = await slack.sendSocketEvent(
      appMentionEvent({ channel: 'C0SOCK', user: 'U0ALICE', text: '<@U0BOT> over the socket', ts: rootTs }),
    );
    expect(envelopeId).toBeTruthy();
    const reply = await slack.waitForCall('chat.postMessage', (call) => call.args.thread_ts === rootTs);
    expect(reply.args).toMatchObject({ channel: 'C0SOCK', text: 'echo[s-1#1]: over the socket' });

    await slack.sendSocketEvent(
      appMentionEvent({ channel: 'C0SOCK', user: 'U0ALICE', text: '<@U0BOT> again', threadTs: rootTs }),
    );
    const second = await slack.waitForCall('chat.postMessage', (call) =>
      String(call.args.text).includes('again'),
    );
    expect(second.args.text).toBe('echo[s-1#2]: again');
    // The app-level token opened the connection; the bot token posted.
    expect(slack.callsOf('apps.connections.open')[0]?.tokenKind).toBe('app');
    expect(second.tokenKind).toBe('bot');
  });

  it('serves only the health endpoints on PORT, and metrics on ADMIN_PORT', async () => {
    expect((await fetch(`${bot.baseUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${bot.baseUrl}/readyz`)).status).toBe(200);
    expect((await fetch(`${bot.baseUrl}/metrics`)).status).toBe(404);
    expect((await fetch(`${bot.baseUrl}/slack/events`, { method: 'POST', body: '{}' })).status).toBe(404);
    expect((await fetch(`${bot.adminUrl}/metrics`)).status).toBe(200);
    expect((await fetch(`${bot.adminUrl}/readyz`)).status).toBe(200);
  });
});

describe('Socket Mode readiness', () => {
  it('drops while the WebSocket to Slack stays closed past a short grace, counts the reconnect, and recovers', async () => {
    const ready = async () => (await fetch(`${bot.baseUrl}/readyz`)).status;
    expect(await ready()).toBe(200);
    expect(await metric(bot, 'slack_socket_connected')).toBe(1);
    const reconnects = (await metric(bot, 'slack_socket_reconnects_total')) ?? Number.NaN;
    // Slack goes away: the socket drops and new connections are refused for a while.
    // (The client notices the drop and starts reconnecting a few seconds later.)
    slack.failFor('apps.connections.open', { type: 'http', status: 503 }, 14_000);
    slack.dropSocketConnections();
    await waitFor(async () => (await ready()) === 503, 'not ready once the grace period is over', 14_000);
    expect(await (await fetch(`${bot.adminUrl}/readyz`)).json()).toMatchObject({ slack: 'disconnected' });
    expect(await metric(bot, 'slack_socket_connected')).toBe(0);
    // Slack is back: the client reconnects by itself and the bot is ready again.
    await waitFor(async () => (await ready()) === 200, 'ready after the reconnect', 40_000);
    expect(await metric(bot, 'slack_socket_reconnects_total')).toBe(reconnects + 1);
  });
});
