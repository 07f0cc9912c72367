import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { PROCESS_READY_MS } from '../helpers/bot-process.js';
import { freshDataDir } from '../helpers/embedded-store.js';
import { type EntryPointOptions, type EntryPointRun, startEntryPoint } from '../helpers/entry-point.js';
import { freePort } from '../helpers/free-port.js';
import { nextTs } from '../helpers/slack-events.js';
import {
  AGENT_ID,
  BOT_TOKEN,
  mention,
  SIGNING_SECRET,
  type StoreChoice,
  startBot,
  storeVariables,
} from '../helpers/stack.js';
import { testStore } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The bot as `npm start` runs it (compiled src), with exactly this environment, in an empty working directory
 * (no `.env`) unless `options` says otherwise.
 */
function runBot(env: Record<string, string>, options: EntryPointOptions = {}): EntryPointRun {
  return startEntryPoint('src/main.ts', [], env, options);
}

const running: EntryPointRun[] = [];
async function stopRunning(): Promise<void> {
  for (const run of running.splice(0)) {
    if (run.child.exitCode === null) run.child.kill('SIGKILL');
    await run.exited;
  }
}
afterEach(stopRunning);

describe('configuration errors', () => {
  it('lists every missing or invalid variable in one run, one line each, and exits 1 without a stack trace', async () => {
    const run = runBot({ PORT: 'eighty', LOG_LEVEL: 'loud' });
    expect((await run.exited).code).toBe(1);
    expect(run.output().trim().split('\n')).toEqual([
      'Configuration error: SLACK_BOT_TOKEN is required (the Bot User OAuth Token, xoxb-…)',
      'Configuration error: SLACK_SIGNING_SECRET is required (needed in HTTP mode; set SLACK_APP_TOKEN instead to use Socket Mode)',
      'Configuration error: PORT must be a whole number from 1 to 65535 (got "eighty")',
      'Configuration error: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
      'Configuration error: AGENT_BASE_URL is required (e.g. https://host/v1)',
      'Configuration error: AGENT_API_KEY is required (the agent service API key)',
      'Configuration error: AGENT_ID is required (the default agent id)',
      // Nothing configured and no .env: a first run, told where to go.
      'No .env here: copy .env.example to .env and fill it in (README.md, "Configuration"),',
      'or run the bot with a fake Slack and an agent emulator, nothing to configure: npm run demo',
    ]);
  });
});

describe('start-up with the real services', () => {
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  // A test may build more than one environment: each one's store is removed after it.
  const stores: { remove(): Promise<void> }[] = [];
  beforeAll(async () => {
    slack = await FakeSlack.start();
    agent = await AgentServiceEmulator.start({ agents: [AGENT_ID] });
  });
  afterAll(async () => {
    await Promise.all([slack.stop(), agent.stop()]);
  });

  /**
   * A bot's environment. Unless `store` is given or `overrides` names a DATABASE_URL, the bot gets a store of
   * its own from `testStore`: PostgreSQL when the run has it, which a bot opens for a fraction of the CPU the
   * embedded store takes (only the embedded store's own test needs that one).
   */
  async function environment(
    overrides: Record<string, string> = {},
    store?: StoreChoice,
  ): Promise<Record<string, string>> {
    return {
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.apiUrl,
      PORT: String(await freePort()),
      ADMIN_PORT: String(await freePort()),
      AGENT_BASE_URL: agent.baseUrl,
      AGENT_API_KEY: agent.apiKey,
      AGENT_ID,
      ...(overrides.DATABASE_URL === undefined ? storeVariables(store ?? (await aStore())) : {}),
      LOG_LEVEL: 'info',
      ...overrides,
    };
  }
  async function aStore(): Promise<StoreChoice> {
    const store = await testStore();
    stores.push(store);
    return store.store;
  }
  afterEach(async () => {
    // This runs before the file's afterEach: a bot still running would write into the store removed.
    await stopRunning();
    await Promise.all(stores.splice(0).map((store) => store.remove()));
  });

  /** Waits for the bot to be ready; fails at once, with what it said, if it exits instead. */
  const ready = (env: Record<string, string>, run: EntryPointRun) =>
    waitFor(
      async () => {
        if (run.child.exitCode !== null)
          throw new Error(`the bot exited (${run.child.exitCode}): ${run.output().slice(-500)}`);
        return (await fetch(`http://127.0.0.1:${env.PORT}/readyz`).catch(() => undefined))?.ok;
      },
      'the bot to be ready',
      PROCESS_READY_MS,
    );

  it('reads .env from the working directory; variables set in the environment win', async () => {
    const env = await environment();
    const workdir = await mkdtemp(path.join(tmpdir(), 'bridge-dotenv-'));
    try {
      const { PORT: realPort, ...fromFile } = env;
      await writeFile(
        path.join(workdir, '.env'),
        `${Object.entries({ ...fromFile, PORT: '1' })
          .map(([name, value]) => `${name}=${value}`)
          .join('\n')}\n`,
      );
      const run = runBot({ PORT: realPort ?? '' }, { cwd: workdir, dotEnv: 'read' });
      running.push(run);
      await ready(env, run);
      // Readiness answers as soon as the port is open, a moment before the start-up line is logged.
      await waitFor(() => run.output().includes('slack-agent-bridge is running'), 'the start-up line');
    } finally {
      await rm(workdir, { recursive: true, force: true });
    }
  });

  it('stops as asked during start-up once it has started, and exits 0', async () => {
    // As process 1 of a container, Node ignores a signal it has no handler for: `docker stop` would wait out
    // its timeout, then kill the bot.
    const env = await environment();
    agent.setLatency(1_500, 'listSessions');
    try {
      const checks = agent.requestsFor('listSessions').length;
      const run = runBot(env);
      running.push(run);
      await waitFor(() => agent.requestsFor('listSessions').length > checks, 'start-up under way');
      run.child.kill('SIGTERM');
      expect(await run.exited).toMatchObject({ code: 0 });
      expect(run.output()).toContain('stopping once start-up ends');
      expect(run.output()).toContain('"msg":"stopped"');
    } finally {
      agent.setLatency(0, 'listSessions');
    }
  });

  /** Runs the bot until it exits 1, and returns its output and its "Start-up failed:" lines (stderr's). */
  async function failedStart(env: Record<string, string>): Promise<{ output: string; failed: string[] }> {
    const run = runBot(env);
    running.push(run);
    expect((await run.exited).code).toBe(1);
    const output = run.output();
    return { output, failed: output.split('\n').filter((line) => line.startsWith('Start-up failed:')) };
  }

  it('stops with one line naming AGENT_API_KEY when the agent service refuses the key', async () => {
    const { output, failed } = await failedStart(await environment({ AGENT_API_KEY: 'not-the-key' }));
    // stderr's line and the log's JSON line (stdout) may arrive in either order.
    expect(failed[0]).toMatch(/^Start-up failed: AGENT_API_KEY was refused by the agent service \(HTTP 401/);
    expect(output).not.toContain('not-the-key');
    // Once: not also as a log line.
    expect(output.split('AGENT_API_KEY was refused')).toHaveLength(2);
  });

  it('stops with one line naming SLACK_APP_TOKEN when Slack refuses the app-level token (Socket Mode)', async () => {
    const { output, failed } = await failedStart(
      await environment({ SLACK_APP_TOKEN: 'xapp-1-revoked-app-token' }),
    );
    expect(failed).toEqual([
      'Start-up failed: SLACK_APP_TOKEN was rejected by Slack (apps.connections.open: invalid_auth)',
    ]);
    expect(output).not.toContain('xapp-1-revoked-app-token');
    expect(output).not.toMatch(/^\s+at /m);
  });

  it('says once that Slack cannot be reached, though in Socket Mode both tokens are checked', async () => {
    const { failed } = await failedStart(
      await environment({
        SLACK_API_URL: `http://127.0.0.1:${await freePort()}/api/`,
        SLACK_APP_TOKEN: 'xapp-1-some-app-token',
      }),
    );
    expect(failed).toEqual([
      expect.stringMatching(/^Start-up failed: cannot reach Slack at http:\/\/127\.0\.0\.1:\d+\/api\/ /),
    ]);
  });

  it('names DATABASE_URL, never its password, when the database cannot be reached', async () => {
    const databaseUrl = `postgres://bridge:hunter2-secret@127.0.0.1:${await freePort()}/bridge`;
    const run = runBot(await environment({ DATABASE_URL: databaseUrl }));
    running.push(run);
    expect((await run.exited).code).toBe(1);
    const lines = run.output().trim().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(
        /^Start-up failed: cannot connect to the database in DATABASE_URL \(127\.0\.0\.1:\d+\/bridge\): connection refused \(ECONNREFUSED\); check DATABASE_URL/,
      ),
    ]);
    expect(run.output()).not.toContain('hunter2');
  });

  it('runs every start-up check and lists all their failures together, once each', async () => {
    // Another process holds the port the bot would serve on.
    const holder = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => holder.listen(port, resolve));
    const run = runBot(
      await environment({
        SLACK_API_URL: `http://127.0.0.1:${await freePort()}/api/`,
        AGENT_API_KEY: 'not-the-key',
        DATABASE_URL: `postgres://bridge:hunter2-secret@127.0.0.1:${await freePort()}/bridge`,
        PORT: String(port),
      }),
    );
    running.push(run);
    expect((await run.exited).code).toBe(1);
    holder.close();
    const failed = run
      .output()
      .trim()
      .split('\n')
      .filter((line) => line.startsWith('Start-up failed:'));
    expect(failed).toEqual([
      expect.stringMatching(/^Start-up failed: cannot reach Slack at http:\/\/127\.0\.0\.1:\d+\/api\/ /),
      expect.stringMatching(/^Start-up failed: AGENT_API_KEY was refused by the agent service/),
      expect.stringMatching(/^Start-up failed: cannot connect to the database in DATABASE_URL/),
      `Start-up failed: PORT ${port} is already in use by another process`,
    ]);
    // Once each: not also as the Slack client's line for each of its tries.
    expect(run.output()).not.toMatch(/http request failed/i);
    expect(run.output()).not.toMatch(/^\s+at /m);
  });

  it('stops with one line naming the embedded store, its path and the file system failure', async () => {
    const dir = await freshDataDir();
    stores.push(dir);
    const dataDir = dir.path;
    const env = await environment({}, { kind: 'embedded', dataDir });
    // The store's own directory is a file: PGlite's file system fails inside, as on a broken volume.
    await rm(path.join(dataDir, 'pglite'), { recursive: true, force: true });
    await writeFile(path.join(dataDir, 'pglite'), 'not a directory');
    const run = runBot(env);
    running.push(run);
    expect((await run.exited).code).toBe(1);
    const lines = run.output().split('\n');
    expect(lines.find((line) => line.startsWith('Start-up failed:'))).toBe(
      `Start-up failed: cannot open the embedded store under ${dataDir}: a part of the path is a file, not a directory (ENOTDIR)`,
    );
    expect(run.output()).not.toContain('[object Object]');
    expect(lines.filter((line) => /^\s+at /.test(line))).toEqual([]);
  });

  it('starts anyway, within a few seconds, when the agent service is unreachable or hangs, and says so', async () => {
    const unreachable = await environment({ AGENT_BASE_URL: `http://127.0.0.1:${await freePort()}/v1` });
    agent.injectFailure('listSessions', { type: 'hang' });
    const hanging = await environment();
    const checksBefore = agent.requestsFor('listSessions').length;
    // Both bots start at once: the first never reaches the agent service the second's check hangs on.
    const first = runBot(unreachable);
    running.push(first);
    const second = runBot(hanging);
    running.push(second);
    await ready(unreachable, first);
    expect(first.output()).toMatch(
      /"level":50.*the agent service could not be checked at start-up; starting anyway/,
    );

    const check = await waitFor(
      () => agent.requestsFor('listSessions')[checksBefore],
      'the start-up check reaching the agent service',
      30_000,
    );
    const checkSeen = check.startedAt;
    await ready(hanging, second);
    // The check gives up after 3 s; without that bound the bot would wait out AGENT_TIMEOUT_MS (90 s). Timed from
    // the check's request to the bot's own log line, so a machine busy starting processes does not count.
    const gaveUp = second
      .output()
      .split('\n')
      .find((line) => line.includes('did not answer the start-up check in time; starting anyway'));
    expect(gaveUp).toMatch(/"level":50/);
    const { time } = JSON.parse(gaveUp ?? '{}') as { time?: number };
    expect((time ?? Number.POSITIVE_INFINITY) - checkSeen).toBeLessThan(10_000);
  });
});

describe('a misconfiguration found at run time', () => {
  it('tells the user an admin must fix the bot, with a reference, and logs it as an error', async () => {
    const slack = await FakeSlack.start();
    const agent = await AgentServiceEmulator.start();
    const prepared = await testStore();
    const bot = await startBot({ slack, agent, store: prepared.store });
    try {
      agent.injectFailure('createSession', {
        type: 'http',
        status: 401,
        body: { status: false, message: 'Invalid API key' },
      });
      const root = nextTs();
      await mention(bot, { channel: 'C0CONF', text: '<@U0BOT> hello?', ts: root });
      const notice = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
      expect(String(notice.args.text)).toMatch(
        /^:warning: I am not set up correctly: .* An admin must fix my configuration.*\(ref ([0-9A-F]{8})\)$/,
      );
      const ref = /\(ref ([0-9A-F]{8})\)/.exec(String(notice.args.text))?.[1] ?? '';
      const line = bot.logs.lines.find((candidate) => candidate.includes(ref));
      expect(JSON.parse(line ?? '{}')).toMatchObject({ level: 50, kind: 'misconfigured' });
      expect(String(notice.args.text)).not.toMatch(/rephras/i);
    } finally {
      await bot.stop();
      await Promise.all([slack.stop(), agent.stop(), prepared.remove()]);
    }
  });
});
