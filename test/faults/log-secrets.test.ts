import http from 'node:http';
import type { AddressInfo } from 'node:net';
import axios, { isAxiosError } from 'axios';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, secretsOf } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { AgentServiceEmulator, type InjectedFailure } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { type BotProcess, spawnBot } from '../helpers/bot-process.js';
import { createTestDatabase, shouldRunPostgresTests, type TestDatabase } from '../helpers/postgres.js';
import { appMentionEvent, nextTs, postSignedEvent } from '../helpers/slack-events.js';
import { LogCapture, mention, type RunningBot, SIGNING_SECRET, startBot } from '../helpers/stack.js';
import { type TestStore, testStore } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';
import { failWrites } from './support.js';

const runPostgres = await shouldRunPostgresTests();

/** A password that must be URL-encoded in DATABASE_URL: `@`, `:`, `/`, `%` and a quote JSON escapes. */
const PASSWORD = 'p@ss:w/rd%"q';
const ENCODED = encodeURIComponent(PASSWORD);

const BASE_ENV = {
  SLACK_BOT_TOKEN: 'xoxb-test-token',
  SLACK_SIGNING_SECRET: 'test-signing-secret-0123456789',
  AGENT_BASE_URL: 'http://127.0.0.1:1/v1',
  AGENT_API_KEY: 'agent-api-key-0123',
  AGENT_ID: 'agent-main',
};

/** Every line a logger built as the bot builds it (secrets from its configuration) writes for `write`. */
function linesLogged(
  databaseUrl: string,
  write: (logger: ReturnType<typeof createLogger>) => void,
): string[] {
  const config = loadConfig({ ...BASE_ENV, DATABASE_URL: databaseUrl });
  const logs = new LogCapture();
  write(createLogger({ level: 'debug', secrets: secretsOf(config), destination: logs }));
  return logs.lines;
}

/** Each way the password may show: as written in the URL, decoded, and as JSON escapes the decoded one. */
function expectNoPassword(lines: readonly string[], forms: readonly string[]): void {
  for (const line of lines) {
    for (const form of forms) {
      expect(line).not.toContain(form);
      expect(line).not.toContain(JSON.stringify(form).slice(1, -1));
    }
  }
}

describe('the log scrubber and DATABASE_URL', () => {
  it('redacts the whole URL and its password, URL-encoded and decoded, wherever they appear', () => {
    const url = `postgres://bridge:${ENCODED}@db.internal:5432/bridge`;
    const lines = linesLogged(url, (logger) => {
      logger.info(`connecting to ${url}`);
      logger.info({ databaseUrl: url }, 'the URL in a field');
      logger.warn(`authentication failed with ${ENCODED}`);
      logger.warn({ password: PASSWORD }, 'the decoded password in a field');
      logger.error({ err: new Error(`server said: bad password "${PASSWORD}"`) }, 'decoded, in an error');
      logger.error({ err: new Error(`connect failed: ${url}`) }, 'the URL in an error');
    });
    expect(lines).toHaveLength(6);
    expectNoPassword(lines, [url, ENCODED, PASSWORD]);
    // The whole URL goes, not only its password: it names the server and may carry other settings.
    expect(JSON.parse(lines[0] ?? '{}').msg).toBe('connecting to [redacted]');
    expect(JSON.parse(lines[1] ?? '{}').databaseUrl).toBe('[redacted]');
    for (const line of lines) expect(line).toContain('[redacted]');
  });

  it('redacts a password written without its percent-encoding, or given as a password parameter', () => {
    // Not valid percent-encoding: the driver cannot decode it, but it is still the operator's password.
    const raw = 'secret%zz-not-encoded';
    const rawLines = linesLogged(`postgres://bridge:${raw}@db.internal/bridge`, (logger) =>
      logger.warn(`password ${raw} rejected`),
    );
    expectNoPassword(rawLines, [raw]);
    // pg also reads the password from the query string (where `+` is a space).
    const inQuery = `postgres://bridge@db.internal/bridge?sslmode=disable&password=${ENCODED}+x`;
    const queryLines = linesLogged(inQuery, (logger) => {
      logger.warn(`written ${ENCODED}+x`);
      logger.warn(`decoded ${PASSWORD} x`);
    });
    expectNoPassword(queryLines, [`${ENCODED}+x`, `${PASSWORD} x`]);
  });
});

/**
 * HTTP client errors carry what was sent and what came back: axios keeps the request body in `config.data`
 * and the response body in `response.data` (response_url answers are posted with axios). Logged as `err`
 * above debug, none of that may show: it may be a prompt or an answer.
 */
describe('HTTP client errors in the log', () => {
  const WORDS = 'pangolin saxophone';
  let server: http.Server;
  let url: string;

  beforeAll(async () => {
    // Answers 500 with a body that quotes the request, as a service echoing what it refused would.
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
      });
      req.on('end', () => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ok: false, error: `refused: ${body}` }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('keeps neither the request body nor the response body of an axios error, alone or as a cause', async () => {
    const axiosError = await axios.post(url, { text: WORDS }).catch((error: unknown) => error);
    expect(isAxiosError(axiosError)).toBe(true);
    // As Slack's response_url answers are posted: the words are in the error twice.
    expect(
      JSON.stringify(isAxiosError(axiosError) && [axiosError.config?.data, axiosError.response?.data]),
    ).toContain('pangolin');
    const logs = new LogCapture();
    const logger = createLogger({ level: 'info', secrets: [], destination: logs });
    logger.warn({ err: axiosError }, 'an axios error');
    logger.warn({ err: new Error('wrapped', { cause: axiosError }) }, 'a wrapped axios error');
    expect(logs.lines).toHaveLength(2);
    for (const word of WORDS.split(' ')) expect(logs.text).not.toContain(word);
    // What an operator needs stays: the kind of error and its status or code.
    expect(JSON.parse(logs.lines[0] ?? '{}').err).toMatchObject({ status: 500, code: 'ERR_BAD_RESPONSE' });
  });
});

/**
 * The bot as deployed (its own process, its own logger): whatever a store error says, its log line keeps
 * none of the forms of the database password. The store here rejects a write with an error that quotes
 * them, as a proxy or a misconfigured server might.
 */
describe.runIf(runPostgres)('a store error in the running bot', () => {
  let database: TestDatabase;
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let bot: BotProcess;
  let admin: pg.Client;
  let databaseUrl: string;

  beforeAll(async () => {
    database = await createTestDatabase({ schema: 'current' });
    // The test server trusts local connections, so any password is accepted.
    const url = new URL(database.url);
    url.password = ENCODED;
    databaseUrl = url.toString();
    expect(databaseUrl).toContain(`:${ENCODED}@`);
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    slack = await FakeSlack.start();
    agent = await AgentServiceEmulator.start();
    bot = await spawnBot({
      slack,
      agent,
      store: { kind: 'postgres', databaseUrl },
      // Bolt writes a failed event's error details at debug level.
      env: { LOG_LEVEL: 'debug' },
    });
  });
  afterAll(async () => {
    bot?.child.kill('SIGKILL');
    await bot?.exited;
    await admin?.end();
    await Promise.all([slack?.stop(), agent?.stop()]);
    await database?.drop();
  });

  it('logs the failure without the password, encoded or decoded, or the URL', async () => {
    const sql = async <Row extends object>(text: string, params?: unknown[]) =>
      (await admin.query(text, params)).rows as Row[];
    await failWrites({ sql }, 'admit', {
      on: 'INSERT',
      table: 'inbox',
      when: 'true',
      times: 1,
      message: `store-fault url=${databaseUrl} written=${ENCODED} decoded=${PASSWORD}`,
    });
    const result = await postSignedEvent(
      bot.eventsUrl,
      SIGNING_SECRET,
      appMentionEvent({ channel: 'C0LOGS', user: 'U0ALICE', text: '<@U0BOT> hello' }),
    );
    expect(result.status).toBe(500);
    const line = await waitFor(
      () =>
        bot
          .output()
          .split('\n')
          .find((candidate) => candidate.includes('store-fault')),
      'the store error in the log',
    );
    expect(line).toContain('url=[redacted] written=[redacted] decoded=[redacted]');
    expectNoPassword(bot.output().split('\n'), [databaseUrl, ENCODED, PASSWORD]);
  });
});

/** Words only a person wrote (every prompt below holds them) and words only the agent service wrote. */
const USER_WORDS = 'quixotic marmalade';
const AGENT_WORDS = 'ventriloquist aubergine';

/** A failure body as a service that quotes what it was sent would write it. */
function quoting(prompt: string): { status: false; message: string } {
  return { status: false, message: `${AGENT_WORDS}: cannot handle "${prompt}"` };
}

/**
 * The bot at LOG_LEVEL=info, through every way a call to the agent service can fail, with a service whose
 * error messages quote the prompt: the log holds neither the person's words nor the service's.
 */
describe('agent failures in an info-level log', () => {
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let bot: RunningBot;
  let prepared: TestStore;
  let channels = 0;
  /**
   * A channel per case: Slack takes about one post a second per channel, so cases sharing one would wait
   * on Slack's pacing of the posts before them rather than on the failure under test.
   */
  const newChannel = () => `C0QUIET${++channels}`;

  /** Neither the person's words nor the agent's are in any line logged from line `from` on. */
  function expectNoWords(from = 0): void {
    const text = bot.logs.lines.slice(from).join('\n');
    for (const word of [...USER_WORDS.split(' '), ...AGENT_WORDS.split(' ')])
      expect(text).not.toContain(word);
  }

  /** A mention in a thread of its own that fails as `failure` says; resolves with the notice it gets. */
  async function failingMention(
    label: string,
    operation: 'sendMessage' | 'createSession',
    failure: (prompt: string) => InjectedFailure,
    times = 1,
  ): Promise<string> {
    const channel = newChannel();
    const root = nextTs();
    const prompt = `${label}: ${USER_WORDS}`;
    if (operation === 'sendMessage') {
      // The thread's session exists first, so the failure is the prompt's own.
      await mention(bot, { channel, text: '<@U0BOT> hello', ts: root });
      await slack.waitForCall('chat.postMessage', (call) => call.args.thread_ts === root);
    }
    agent.injectFailure(operation, failure(prompt), times);
    await mention(bot, { channel, text: `<@U0BOT> ${prompt}`, ts: nextTs(), threadTs: root });
    const notice = await slack.waitForCall(
      'chat.postMessage',
      (call) => call.args.thread_ts === root && String(call.args.text).startsWith(':warning:'),
      8_000,
    );
    agent.clearFailures();
    return String(notice.args.text);
  }

  beforeAll(async () => {
    prepared = await testStore();
    slack = await FakeSlack.start();
    agent = await AgentServiceEmulator.start();
    // The start-up check fails too, with the service's own words.
    agent.injectFailure('listSessions', { type: 'http', status: 500, body: quoting('start-up check') });
    bot = await startBot({
      slack,
      agent,
      store: prepared.store,
      env: { LOG_LEVEL: 'info', AGENT_TIMEOUT_MS: '1000', SESSION_DELETE_RETRY_MS: '60000' },
    });
  });
  afterAll(async () => {
    await bot?.stop();
    await Promise.all([slack?.stop(), agent?.stop(), prepared?.remove()]);
  });

  it('logs the start-up check failing without the words of the service', () => {
    expect(bot.logs.text).toContain('the agent service could not be checked at start-up');
    expectNoWords();
  });

  it('logs an answer without its words or the prompt', async () => {
    const before = bot.logs.lines.length;
    const root = nextTs();
    await mention(bot, { channel: newChannel(), text: `<@U0BOT> answered: ${USER_WORDS}`, ts: root });
    const answer = await slack.waitForCall('chat.postMessage', (call) => call.args.thread_ts === root);
    expect(String(answer.args.text)).toContain(USER_WORDS);
    expectNoWords(before);
  });

  const promptFailures: [string, (prompt: string) => InjectedFailure][] = [
    ['400 quoting the prompt', (prompt) => ({ type: 'http', status: 400, body: quoting(prompt) })],
    ['500 quoting the prompt', (prompt) => ({ type: 'http', status: 500, body: quoting(prompt) })],
    ['503 quoting the prompt', (prompt) => ({ type: 'http', status: 503, body: quoting(prompt) })],
    ['401 quoting the prompt', (prompt) => ({ type: 'http', status: 401, body: quoting(prompt) })],
    [
      'status false quoting the prompt',
      (prompt) => ({ type: 'status-false', message: quoting(prompt).message }),
    ],
    [
      'a garbage body quoting the prompt',
      (prompt) => ({ type: 'http', status: 200, rawBody: `<html>${AGENT_WORDS} ${prompt}` }),
    ],
    [
      'a session lost twice, quoting the prompt',
      (prompt) => ({ type: 'http', status: 404, body: quoting(prompt) }),
    ],
    ['a hang', () => ({ type: 'hang' })],
    ['a connection reset', () => ({ type: 'reset' })],
  ];

  it.each(promptFailures)(
    'logs the prompt failing with %s without anyone’s words',
    async (label, failure) => {
      const before = bot.logs.lines.length;
      await failingMention(label, 'sendMessage', failure, 2);
      // The failure was logged (with its reference), above debug.
      await waitFor(
        () => bot.logs.lines.slice(before).some((line) => line.includes('message could not be answered')),
        'the failure logged',
      );
      expectNoWords(before);
    },
  );

  it('logs a session that could not be created without the words of the service', async () => {
    const before = bot.logs.lines.length;
    await failingMention(
      'create',
      'createSession',
      () => ({ type: 'http', status: 500, body: quoting('create') }),
      5,
    );
    await waitFor(
      () => bot.logs.lines.slice(before).some((line) => line.includes('message could not be answered')),
      'the failure logged',
    );
    expectNoWords(before);
  });

  it('logs a session deletion failing without the words of the service', async () => {
    const before = bot.logs.lines.length;
    const channel = newChannel();
    const root = nextTs();
    await mention(bot, { channel, text: '<@U0BOT> hello', ts: root });
    await slack.waitForCall('chat.postMessage', (call) => call.args.thread_ts === root);
    agent.injectFailure('deleteSession', { type: 'http', status: 500, body: quoting('delete') }, 5);
    await mention(bot, { channel, text: '<@U0BOT> reset', ts: nextTs(), threadTs: root });
    await waitFor(
      () => bot.logs.text.includes('agent session deletion failed'),
      'the failed deletion logged',
    );
    agent.clearFailures();
    expectNoWords(before);
  });

  it('has none of those words in the whole log, lines logged between and after the cases included', async () => {
    // A failure of its own, so run alone it reads more than the start-up's lines.
    await failingMention('last', 'sendMessage', (prompt) => ({
      type: 'http',
      status: 500,
      body: quoting(prompt),
    }));
    expectNoWords();
  });
});
