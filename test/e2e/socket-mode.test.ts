import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { freshDataDir, type TempDataDir } from '../helpers/embedded-store.js';
import { appMentionEvent, nextTs } from '../helpers/slack-events.js';
import { type RunningBot, startBot } from '../helpers/stack.js';

describe('Socket Mode', () => {
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let bot: RunningBot;
  let dataDir: TempDataDir;

  beforeEach(async () => {
    dataDir = await freshDataDir();
    slack = await FakeSlack.start();
    agent = await AgentServiceEmulator.start();
    bot = await startBot({
      slack,
      agent,
      store: { kind: 'embedded', dataDir: dataDir.path },
      socketMode: true,
    });
    await slack.waitForSocketConnection();
  });
  afterEach(async () => {
    await bot.stop();
    await Promise.all([slack.stop(), agent.stop(), dataDir.remove()]);
  });

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

  it('still serves health and readiness on PORT', async () => {
    expect((await fetch(`${bot.baseUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${bot.baseUrl}/readyz`)).status).toBe(200);
  });
});
