import { Agent, request as httpRequest } from 'node:http';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PreparedStatements } from '../../src/store/prepared-statements.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import type { TcpProxy } from '../fakes/tcp-proxy.js';
import { type FaultStack, readiness, startFaultStack } from '../faults/support.js';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import {
  appMentionEvent,
  channelLifecycleEvent,
  messageEvent,
  nextTs,
  postSignedEvent,
  postSignedForm,
  signSlackRequest,
  slashCommandFields,
} from '../helpers/slack-events.js';
import { deliver, metric, type RunningBot, SIGNING_SECRET, startBot } from '../helpers/stack.js';
import { type TestStore, testStore } from '../helpers/stores.js';
import { sleep, waitFor } from '../helpers/wait.js';

const CHANNEL = 'C0OPS';
const runPostgres = await shouldRunPostgresTests();

interface Stack {
  slack: FakeSlack;
  agent: AgentServiceEmulator;
  bot: RunningBot;
  store: TestStore;
}

let stack: Stack | undefined;

/** A bot of its own for the test, with these settings: stopped after the test. */
async function startStack(
  env: Record<string, string> = {},
  options: { scopes?: string[]; botToken?: string; apiKey?: string } = {},
): Promise<Stack> {
  stack = await openStack(env, options);
  return stack;
}

async function openStack(
  env: Record<string, string> = {},
  options: { scopes?: string[]; botToken?: string; apiKey?: string } = {},
): Promise<Stack> {
  const store = await testStore();
  const slack = await FakeSlack.start({
    ...(options.scopes ? { scopes: options.scopes } : {}),
    ...(options.botToken ? { botToken: options.botToken } : {}),
  });
  const agent = await AgentServiceEmulator.start(options.apiKey ? { apiKey: options.apiKey } : {});
  const bot = await startBot({
    slack,
    agent,
    store: store.store,
    env: {
      SESSION_DELETE_RETRY_MS: '100',
      ...env,
      ...(options.botToken ? { SLACK_BOT_TOKEN: options.botToken } : {}),
    },
  });
  return { slack, agent, bot, store };
}

async function closeStack(closing: Stack): Promise<void> {
  await closing.bot.stop();
  await Promise.all([closing.slack.stop(), closing.agent.stop(), closing.store.remove()]);
}

afterEach(async () => {
  if (!stack) return;
  await closeStack(stack);
  stack = undefined;
});

/**
 * A bot on the default settings shared by the tests that count nothing absolute (a bot start costs more than
 * their work): started by the first of them, stopped after the file. Each uses threads of its own.
 */
let sharedStack: Promise<Stack> | undefined;
const defaultStack = () => {
  sharedStack ??= openStack();
  return sharedStack;
};
afterAll(async () => {
  const shared = await sharedStack?.catch(() => undefined);
  if (shared) await closeStack(shared);
});

const send = (bot: RunningBot, body: unknown, retryNum?: number) =>
  deliver(bot, body, retryNum === undefined ? {} : { retryNum });

describe('metrics', () => {
  it('moves as events flow: received, ignored, deduplicated, relayed, agent latency and failures, Slack calls, sessions, store', async () => {
    const { bot, slack, agent } = await startStack();
    const response = await fetch(`${bot.adminUrl}/metrics`);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await response.text()).toContain('process_cpu_seconds_total');

    const root = nextTs();
    const mention = appMentionEvent({
      channel: CHANNEL,
      user: 'U0ALICE',
      text: '<@U0BOT> measure me',
      ts: root,
    });
    await send(bot, mention);
    await send(bot, mention, 1);
    await send(
      bot,
      messageEvent({ channel: CHANNEL, channelType: 'channel', user: 'U0BOB', text: 'chatter' }),
    );
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);

    expect(await metric(bot, 'slack_events_received_total{type="app_mention"}')).toBe(2);
    expect(await metric(bot, 'slack_events_deduplicated_total{type="app_mention"}')).toBe(1);
    expect(await metric(bot, 'slack_events_ignored_total{type="message",reason="not-in-a-thread"}')).toBe(1);
    expect(await metric(bot, 'agent_prompts_relayed_total')).toBe(1);
    expect(await metric(bot, 'agent_sessions_created_total')).toBe(1);
    expect(await metric(bot, 'agent_call_duration_seconds_count{operation="sendMessage",outcome="ok"}')).toBe(
      1,
    );
    await waitFor(() => slack.reactionsOn(CHANNEL, root).length === 0, 'indicator cleared');
    // Counted once the bot has Slack's answer, and the job over once its end is recorded: moments after.
    await waitFor(
      async () => (await metric(bot, 'slack_api_calls_total{method="reactions.remove",status="200"}')) === 1,
      'the reaction removal counted',
    );
    await waitFor(async () => (await metric(bot, 'jobs_in_flight')) === 0, 'the job over');
    expect(await metric(bot, 'slack_api_calls_total{method="chat.postMessage",status="200"}')).toBe(1);
    expect(await metric(bot, 'store_query_duration_seconds_count{outcome="ok"}')).toBeGreaterThan(5);
    expect(await metric(bot, 'inbox_open_jobs{state="pending"}')).toBe(0);

    agent.injectFailure('sendMessage', { type: 'status-false', message: 'no' });
    slack.failNext('chat.postMessage', { type: 'rate_limited', retryAfterSeconds: 1 });
    await send(
      bot,
      appMentionEvent({ channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> fail', threadTs: root }),
    );
    await slack.waitForCall('chat.postMessage', (c) => String(c.args.text).includes('refused'), 10_000);
    expect(await metric(bot, 'agent_call_failures_total{operation="sendMessage",kind="rejected"}')).toBe(1);
    expect(await metric(bot, 'slack_api_rate_limited_total')).toBe(1);

    await send(bot, channelLifecycleEvent('channel_archive', { channel: CHANNEL }));
    await waitFor(
      async () => (await metric(bot, 'agent_sessions_deleted_total{reason="channel-gone"}')) === 1,
      'deletion counted',
    );
  });

  it('shows queue depth and threads in flight while the agent is busy', async () => {
    const { bot, agent } = await defaultStack();
    // The other tests on this bot wait for their answers: none of their jobs is open now.
    agent.setLatency(1_000, 'sendMessage');
    try {
      const root = nextTs();
      await send(bot, appMentionEvent({ channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> one', ts: root }));
      await send(
        bot,
        appMentionEvent({ channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> two', threadTs: root }),
      );
      await waitFor(
        () => agent.requestsFor('sendMessage').some((r) => r.prompt === 'one'),
        'first prompt sent',
      );
      expect(await metric(bot, 'jobs_in_flight')).toBe(1);
      expect(await metric(bot, 'inbox_open_jobs{state="running"}')).toBe(1);
      expect(await metric(bot, 'inbox_open_jobs{state="pending"}')).toBe(1);
    } finally {
      agent.setLatency(0, 'sendMessage');
    }
  });
});

describe('the admin port (HTTP mode)', () => {
  it('serves /metrics there and not on PORT, where Slack posts; the health endpoints answer on both', async () => {
    const { bot } = await defaultStack();

    const onPort = await fetch(`${bot.baseUrl}/metrics`);
    expect(onPort.status).toBe(404);
    expect(await onPort.text()).not.toContain('slack_events_received_total');
    const onAdmin = await fetch(`${bot.adminUrl}/metrics`);
    expect(onAdmin.status).toBe(200);
    expect(onAdmin.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await onAdmin.text()).toContain('# TYPE slack_events_received_total counter');

    for (const url of [bot.baseUrl, bot.adminUrl]) {
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready', store: 'ok' });
    }
  });
});

describe.runIf(runPostgres)('readiness on PostgreSQL', () => {
  let faults: FaultStack | undefined;
  afterEach(async () => {
    await faults?.stop();
    faults = undefined;
  });

  /**
   * How often PostgreSQL was sent the readiness check's statement: as a simple query ('Q', length, text, zero
   * byte) where statements are not prepared, and as the binding of the statement prepared for it (its name
   * after the empty portal's zero byte) where they are.
   */
  const checksSent = (proxy: TcpProxy) => {
    const simple = Buffer.concat([Buffer.from('Q'), Buffer.alloc(4), Buffer.from('SELECT 1\0')]);
    simple.writeInt32BE(simple.length - 1, 1);
    const name = new PreparedStatements().queryFor('SELECT 1', undefined).name;
    return proxy.countSent(simple) + (name ? proxy.countSent(Buffer.from(`\0${name}\0`)) : 0);
  };

  it('is cached for about a second: probes on both ports within it cost the store one query', async () => {
    faults = await startFaultStack();
    const { bot, proxy } = faults;
    // No answer of an earlier probe is left to reuse.
    await sleep(1_100);
    const before = checksSent(proxy);

    const started = Date.now();
    const statuses: number[] = [];
    while (Date.now() - started < 600) {
      statuses.push(...(await readiness(bot)));
      await sleep(20);
    }
    // Several rounds on both ports (how many a loaded machine fits in the window varies).
    expect(statuses.length).toBeGreaterThanOrEqual(6);
    expect(new Set(statuses)).toEqual(new Set([200]));
    expect(checksSent(proxy) - before).toBe(1);

    // Over a second later (the cache's clock starts when the first probe arrives, a little after `started`),
    // the store is asked again.
    await sleep(1_100);
    expect(await readiness(bot)).toEqual([200, 200]);
    expect(checksSent(proxy) - before).toBe(2);
  });
});

describe('logs', () => {
  it('never contain a secret, at trace level, across a full run', async () => {
    const secrets = {
      botToken: 'xoxb-1111-2222-SuperSecretBotToken',
      signing: SIGNING_SECRET,
      apiKey: 'agent-key-TopSecret-9f8e7d',
    };
    const { bot, slack, agent } = await startStack(
      { LOG_LEVEL: 'trace' },
      { botToken: secrets.botToken, apiKey: secrets.apiKey },
    );
    const root = nextTs();
    await send(bot, appMentionEvent({ channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> hello', ts: root }));
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    agent.injectFailure('sendMessage', {
      type: 'http',
      status: 401,
      body: { status: false, message: `bad key ${secrets.apiKey}` },
    });
    await send(
      bot,
      appMentionEvent({ channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> again', threadTs: root }),
    );
    await slack.waitForCall('chat.postMessage', (c) => String(c.args.text).startsWith(':warning:'));
    const responseId = `r-${nextTs()}`;
    await postSignedForm(
      bot.eventsUrl,
      SIGNING_SECRET,
      slashCommandFields({
        text: 'sessions',
        channel: CHANNEL,
        user: 'U0ALICE',
        responseUrl: slack.responseUrl(responseId),
      }),
    );
    await slack.waitForCall('response_url', (c) => c.args.responseId === responseId);
    await send(bot, channelLifecycleEvent('channel_archive', { channel: CHANNEL }));
    await waitFor(() => agent.requestsFor('deleteSession').length === 1, 'session deleted');
    await postSignedEvent(bot.eventsUrl, SIGNING_SECRET, {}, { badSignature: true });

    const logs = bot.logs.text;
    // The most verbose lines were on, including those next to a secret: WebClient's request headers
    // (the bot token), the answer client's Slack calls, and the agent's failure (its key echoed back).
    expect(logs).toContain('"level":20');
    expect(logs).toContain('http request headers:');
    expect(logs).toContain("apiCall('chat.postMessage') start");
    expect(logs).toContain('"type":"AgentServiceError"');
    for (const secret of Object.values(secrets)) expect(logs).not.toContain(secret);
    // Every notice the bot posted is free of them too.
    const posted = JSON.stringify(slack.calls.map((call) => call.args));
    for (const secret of Object.values(secrets)) expect(posted).not.toContain(secret);
  });

  it('carry the event context and no message text above debug level', async () => {
    const { bot, slack } = await startStack({ LOG_LEVEL: 'info' });
    const root = nextTs();
    await send(
      bot,
      appMentionEvent({
        channel: CHANNEL,
        user: 'U0ALICE',
        text: '<@U0BOT> a very private question',
        ts: root,
      }),
    );
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    await sleep(100);
    expect(bot.logs.text).not.toContain('very private');
    const created = bot.logs.lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.msg === 'agent session created');
    expect(created).toMatchObject({ channel: CHANNEL, thread: root, session: 's-1' });
  });

  it('name each missing Slack scope and the manifest entry that fixes it, at start-up', async () => {
    const { bot } = await startStack({}, { scopes: ['app_mentions:read', 'chat:write'] });
    const warnings = bot.logs.lines.filter((line) => line.includes('is not granted'));
    expect(warnings.some((line) => line.includes('Slack scope \\"reactions:write\\" is not granted'))).toBe(
      true,
    );
    expect(warnings.every((line) => line.includes('oauth_config.scopes.bot in manifest.yml'))).toBe(true);
    expect(warnings).toHaveLength(9);
  });
});

describe('access control and abuse', () => {
  it('refuses channels, users and workspaces outside the allow-lists, telling refused people privately', async () => {
    const { bot, slack, agent } = await startStack({
      ALLOWED_TEAM_IDS: 'T0TEAM',
      ALLOWED_CHANNEL_IDS: 'C0OPEN',
      ALLOWED_USER_IDS: 'U0ALICE',
    });
    const before = agent.requests.length; // the start-up check's call
    await send(bot, appMentionEvent({ channel: 'C0CLOSED', user: 'U0ALICE', text: '<@U0BOT> here?' }));
    // Each refused person sees the note (a thread without replies would hide it).
    const channelNote = await slack.waitForVisibleEphemeral('U0ALICE', { channel: 'C0CLOSED' });
    expect(channelNote.text).toMatch(/not enabled in this channel/);
    await send(bot, appMentionEvent({ channel: 'C0OPEN', user: 'U0BOB', text: '<@U0BOT> me?' }));
    const userNote = await slack.waitForVisibleEphemeral('U0BOB', { channel: 'C0OPEN' });
    expect(userNote.text).toMatch(/not on the list of people/);
    await send(
      bot,
      appMentionEvent({ teamId: 'T0STRANGER', channel: 'C0OPEN', user: 'U0ALICE', text: '<@U0BOT> hi' }),
    );
    await send(bot, messageEvent({ channel: 'D0BOB', channelType: 'im', user: 'U0BOB', text: 'dm me' }));
    await slack.waitForVisibleEphemeral('U0BOB', { channel: 'D0BOB' });
    await sleep(200);
    expect(agent.requests.slice(before)).toEqual([]);
    expect(slack.callsOf('chat.postEphemeral')).toHaveLength(3); // nothing said to the stranger workspace

    const root = nextTs();
    await send(
      bot,
      appMentionEvent({ channel: 'C0OPEN', user: 'U0ALICE', text: '<@U0BOT> allowed', ts: root }),
    );
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    const refused = `r-${nextTs()}`;
    await postSignedForm(
      bot.eventsUrl,
      SIGNING_SECRET,
      slashCommandFields({
        text: 'reset',
        channel: 'C0OPEN',
        user: 'U0BOB',
        responseUrl: slack.responseUrl(refused),
      }),
    );
    const answer = await slack.waitForCall('response_url', (c) => c.args.responseId === refused);
    expect(String(answer.args.text)).toMatch(/not on the list of people/);
    expect(agent.requestsFor('deleteSession')).toHaveLength(0);
  });

  it('limits prompts per user per minute with a friendly reply', async () => {
    const { bot, slack, agent } = await startStack({ USER_RATE_LIMIT: '2' });
    for (let i = 0; i < 3; i++) {
      await send(bot, appMentionEvent({ channel: CHANNEL, user: 'U0ALICE', text: `<@U0BOT> question ${i}` }));
    }
    const note = await slack.waitForVisibleEphemeral('U0ALICE', { channel: CHANNEL });
    expect(note.text).toMatch(/at most 2 a minute/);
    await send(bot, appMentionEvent({ channel: CHANNEL, user: 'U0BOB', text: '<@U0BOT> my turn' }));
    await waitFor(() => agent.requestsFor('sendMessage').length === 3, 'two of Alice and one of Bob relayed');
    // Three threads, answered side by side: in whichever order they reach the agent.
    expect(
      agent
        .requestsFor('sendMessage')
        .map((r) => r.prompt)
        .sort(),
    ).toEqual(['my turn', 'question 0', 'question 1']);
  });

  it('answers bad requests with 4xx and keeps serving', async () => {
    const { bot, slack } = await defaultStack();
    const raw = async (body: string, contentType: string, secret = SIGNING_SECRET) => {
      const response = await fetch(bot.eventsUrl, {
        method: 'POST',
        headers: { 'content-type': contentType, ...signSlackRequest(secret, body) },
        body,
        signal: AbortSignal.timeout(5_000),
      }).catch((error: unknown) => {
        throw new Error(`no answer to ${body.slice(0, 40)}: ${String(error)}`);
      });
      return response.status;
    };
    expect(await raw('{"type": "event_callback", "event": ', 'application/json')).toBeGreaterThanOrEqual(400);
    expect(await raw('payload=%7Bnot-json', 'application/x-www-form-urlencoded')).toBeGreaterThanOrEqual(400);
    expect(await raw('{}', 'application/json', 'wrong-secret')).toBe(401);
    const huge = JSON.stringify({ type: 'event_callback', filler: 'x'.repeat(2 * 1024 * 1024) });
    expect(await raw(huge, 'application/json')).toBe(413);
    for (const status of [await raw('[]', 'application/json'), await raw('null', 'application/json')]) {
      expect(status).toBeLessThan(500);
    }
    const root = nextTs();
    await send(
      bot,
      appMentionEvent({ channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> still fine?', ts: root }),
    );
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    expect((await fetch(`${bot.baseUrl}/healthz`)).status).toBe(200);
  });

  it('keeps an idle connection open longer than the 5 s (plus a grace second) after which Node would drop it', async () => {
    const { bot } = await defaultStack();
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<{ status: number; socket: unknown }>((resolve, reject) => {
        const request = httpRequest(`${bot.baseUrl}/healthz`, { agent: keepAlive }, (response) => {
          response.resume();
          response.on('end', () => resolve({ status: response.statusCode ?? 0, socket: request.socket }));
        });
        request.on('error', reject);
        request.end();
      });
    const first = await get();
    await sleep(7_000);
    // Slack (or a load balancer) reusing the connection now must not meet a reset.
    const second = await get();
    expect(second.status).toBe(200);
    expect(second.socket).toBe(first.socket);
    keepAlive.destroy();
  });
});
