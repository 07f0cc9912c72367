import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { type Bot, createBot } from '../src/app.js';
import { loadConfig, secretsOf } from '../src/config/index.js';
import { createLogger } from '../src/observability/logger.js';
import { AGENT_VIEW_SCOPES, REQUIRED_BOT_SCOPES } from '../src/slack-in/requirements.js';
import { dataDirHolder, openDatabase } from '../src/store/database.js';
import { migrate, SCHEMA_VERSION } from '../src/store/schema.js';
import { AgentServiceEmulator } from '../test/fakes/agent-service.js';
import { FakeSlack } from '../test/fakes/slack.js';
import { freePort } from '../test/helpers/free-port.js';
import { AgentTrafficProxy } from './agent-traffic.js';
import { isLocalRequest, LOOPBACK } from './local-only.js';
import { mountWebUi } from './web-ui.js';

export interface DemoOptions {
  /** Port of the page (and of the fake Slack behind it); 0 picks a free one. */
  port: number;
  /** Where the demo keeps its embedded store (in `store/`, started afresh each run). */
  dataDir: string;
  /** A real agent service to use instead of the emulator. */
  agent?: { baseUrl: string; apiKey: string; agentId: string };
  /** The emulator's answer time, so the working indicator can be seen. */
  emulatorLatencyMs: number;
  /** Any other bot settings (MENTION_ONLY, WORKING_INDICATOR_DELAY_MS, ...), as environment variables. */
  botEnv?: Record<string, string | undefined>;
  logLevel: string;
  /** Pretty logs for a person at a terminal; JSON otherwise. */
  prettyLogs: boolean;
}

export interface RunningDemo {
  url: string;
  usingEmulator: boolean;
  /** Every port the demo listens on (all on 127.0.0.1), by what listens there. */
  ports: Record<'page' | 'bot' | 'admin' | 'trafficProxy', number> & { emulator?: number };
  /** The agent emulator, unless a real agent service is used: for tests that act while it works. */
  emulator?: AgentServiceEmulator;
  stop(): Promise<void>;
}

const ME = { id: 'U0YOU', name: 'you' };
const DEMO_AGENT_ID = 'demo-agent';
const COMMAND = '/agent';
/** The emulator answers in seconds; a real agent service keeps the bot's default timeout. */
const EMULATOR_AGENT_TIMEOUT_MS = 10_000;

/** Settings the demo decides itself: the bot must talk to the fakes, over HTTP, with the embedded store. */
const DEMO_OWNED = new Set([
  'SLACK_BOT_TOKEN',
  'SLACK_SIGNING_SECRET',
  'SLACK_APP_TOKEN',
  'SLACK_API_URL',
  'PORT',
  'ADMIN_PORT',
  'HOST',
  'AGENT_BASE_URL',
  'AGENT_API_KEY',
  'AGENT_ID',
  'AGENT_ROUTES',
  'AGENT_WORKSPACE_ROUTES',
  'AGENT_ORG_ROUTES',
  'DATABASE_URL',
  'DATA_DIR',
  'LOG_LEVEL',
  'SLASH_COMMAND',
]);

/**
 * Starts the whole product on this machine: the agent emulator (or a real agent service) behind a
 * recording proxy, the fake Slack serving a Slack-like page, and the real bot in HTTP mode with the
 * embedded store, receiving signed requests exactly as from Slack.
 */
export async function startDemo(options: DemoOptions): Promise<RunningDemo> {
  const cleanups: (() => Promise<void> | void)[] = [];
  const stop = async () => {
    // Every step runs even if one fails, so no server or store lock is left behind.
    const failures: unknown[] = [];
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (error) {
        failures.push(error);
      }
    }
    cleanups.length = 0;
    if (failures.length > 0) throw failures[0];
  };
  try {
    const slack = await FakeSlack.start({
      port: options.port,
      // Anyone on this machine could otherwise use the well-known test tokens; and any site the person
      // visits could post through the fake Web API (CSRF) or read the page (DNS rebinding).
      botToken: `xoxb-demo-${randomBytes(16).toString('hex')}`,
      appToken: `xapp-demo-${randomBytes(16).toString('hex')}`,
      acceptRequest: isLocalRequest,
      teamName: 'Demo workspace',
      // As if installed from manifest.yml.
      scopes: [...Object.keys(REQUIRED_BOT_SCOPES), ...Object.keys(AGENT_VIEW_SCOPES)],
      users: {
        U0BOT: { name: 'agent', realName: 'Agent', isBot: true },
        [ME.id]: { name: ME.name, realName: 'You' },
        U0ALICE: { name: 'alice', realName: 'Alice Liddell' },
      },
      channels: {
        C0GENERAL: { name: 'general', type: 'channel' },
        C0PROJECT: { name: 'project-x', type: 'channel' },
        D0AGENT: { name: 'agent', type: 'im', user: ME.id },
      },
    });
    // A page's request about what the fake never heard of is refused, as Slack does, without failing the stop.
    slack.allowUnknownTargets();
    cleanups.push(() => slack.stop());

    let agentTarget = options.agent;
    let emulator: AgentServiceEmulator | undefined;
    if (!agentTarget) {
      emulator = await AgentServiceEmulator.start({
        host: LOOPBACK,
        apiKey: randomBytes(16).toString('hex'),
        agents: [DEMO_AGENT_ID],
        latency: { sendMessage: options.emulatorLatencyMs, createSession: 80, deleteSession: 60 },
      });
      const started = emulator;
      cleanups.push(() => started.stop());
      agentTarget = { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey, agentId: DEMO_AGENT_ID };
    }
    const traffic = await AgentTrafficProxy.start(agentTarget.baseUrl);
    cleanups.push(() => traffic.stop());

    const storeDir = await freshStoreDir(options.dataDir);
    const botPort = await freePort();
    const adminPort = await freePort();
    const signingSecret = randomBytes(16).toString('hex');
    const inherited = Object.fromEntries(
      Object.entries(options.botEnv ?? {}).filter(([name]) => !DEMO_OWNED.has(name)),
    );
    const config = loadConfig({
      // A slow answer shows the "taking a while" note sooner than in production, and the working
      // reaction shows early enough to be seen against the emulator's answer time.
      SLOW_NOTICE_MS: '8000',
      WORKING_INDICATOR_DELAY_MS: '300',
      // After a restart the bot waits this long (and a little more) for an answer it may have lost before
      // saying so: production's 90 s would make "Restart bot" look like nothing happened.
      ...(options.agent
        ? {}
        : { AGENT_TIMEOUT_MS: String(Math.max(EMULATOR_AGENT_TIMEOUT_MS, 3 * options.emulatorLatencyMs)) }),
      ...inherited,
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_SIGNING_SECRET: signingSecret,
      SLACK_API_URL: slack.apiUrl,
      PORT: String(botPort),
      ADMIN_PORT: String(adminPort),
      // The demo's bot must not be reachable from the network: its health and metrics routes need no signature.
      HOST: LOOPBACK,
      AGENT_BASE_URL: traffic.baseUrl,
      AGENT_API_KEY: agentTarget.apiKey,
      AGENT_ID: agentTarget.agentId,
      DATA_DIR: storeDir,
      LOG_LEVEL: options.logLevel,
      SLASH_COMMAND: COMMAND,
    });
    const logger = createLogger({
      level: config.logLevel,
      secrets: secretsOf(config),
      pretty: options.prettyLogs,
    });
    let bot: Bot | undefined = await createBot(config, logger);
    await bot.start();
    let restarting: Promise<void> | undefined;
    cleanups.push(async () => {
      // A restart under way would otherwise start a bot after this stopped the last one.
      await restarting?.catch(() => {});
      await bot?.stop(5_000);
    });
    // In this process, as a crash or a deploy that does not wait would: answers in progress are not waited
    // for, and the next bot finds their jobs in the store as a new process would.
    const restartBot = () => {
      restarting ??= (async () => {
        const old = bot;
        bot = undefined;
        await old?.stop(0);
        const next = await createBot(config, logger);
        try {
          await next.start();
        } catch (error) {
          await next.stop(0).catch(() => {});
          throw error;
        }
        bot = next;
      })().finally(() => {
        restarting = undefined;
      });
      return restarting;
    };

    const ui = mountWebUi({
      slack,
      traffic,
      botEventsUrl: `http://${LOOPBACK}:${botPort}/slack/events`,
      signingSecret,
      me: ME,
      command: COMMAND,
      restartBot,
    });
    cleanups.push(() => ui.close());
    return {
      url: `http://${LOOPBACK}:${slack.port}/`,
      usingEmulator: !options.agent,
      ports: {
        page: slack.port,
        bot: botPort,
        admin: adminPort,
        trafficProxy: Number(new URL(traffic.baseUrl).port),
        ...(emulator === undefined ? {} : { emulator: Number(new URL(emulator.baseUrl).port) }),
      },
      ...(emulator === undefined ? {} : { emulator }),
      stop,
    };
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
}

/**
 * The fake Slack and the emulator start empty every time, so the store does too: mappings from an earlier
 * run would point at threads and sessions that no longer exist. A store another demo is using is left alone.
 * Each run starts on a copy of an empty store kept beside it: initialising one (PGlite's initdb) takes seconds.
 */
async function freshStoreDir(dataDir: string): Promise<string> {
  const storeDir = path.resolve(dataDir, 'store');
  const holder = await dataDirHolder(storeDir);
  if (holder !== undefined && holder.pid !== process.pid)
    throw new Error(
      `${dataDir} is in use by another demo (process ${holder.pid}); stop it or pick another --data-dir`,
    );
  await rm(storeDir, { recursive: true, force: true });
  await cp(await emptyStore(dataDir), storeDir, { recursive: true });
  return storeDir;
}

/**
 * Where the demo keeps its empty store under `dataDir`: one per PGlite version and schema version, so a demo
 * of another version of the bot (or of PGlite) makes its own instead of starting on one it cannot open.
 */
export function emptyStoreDir(dataDir: string): string {
  return path.resolve(dataDir, `empty-store-pglite-${pgliteVersion()}-schema-${SCHEMA_VERSION}`);
}

function pgliteVersion(): string {
  // Its package.json is not exported: it is beside the folder of the module Node resolves.
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const manifest = path.join(path.dirname(entry), '..', 'package.json');
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

/** The empty store, made on the first run: made aside and renamed, so it is whole or absent. */
async function emptyStore(dataDir: string): Promise<string> {
  const template = emptyStoreDir(dataDir);
  if (existsSync(template)) return template;
  await mkdir(dataDir, { recursive: true });
  for (const entry of await readdir(dataDir)) {
    // Another version's, or one a stopped run left half made.
    if (entry.startsWith('empty-store-'))
      await rm(path.join(dataDir, entry), { recursive: true, force: true });
  }
  const staging = await mkdtemp(path.join(dataDir, 'empty-store-staging-'));
  try {
    const db = await openDatabase({ kind: 'embedded', dataDir: staging });
    try {
      await migrate(db);
    } finally {
      await db.close();
    }
    await rename(staging, template);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
  return template;
}
