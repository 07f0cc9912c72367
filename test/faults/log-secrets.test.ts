import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, secretsOf } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { type BotProcess, spawnBot } from '../helpers/bot-process.js';
import { createTestDatabase, shouldRunPostgresTests, type TestDatabase } from '../helpers/postgres.js';
import { appMentionEvent, postSignedEvent } from '../helpers/slack-events.js';
import { LogCapture, SIGNING_SECRET } from '../helpers/stack.js';
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
    database = await createTestDatabase();
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
