import { Writable } from 'node:stream';
import { type Bot, createBot } from '../../src/app.js';
import { loadConfig, secretsOf } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/logger.js';
import type { AgentServiceEmulator } from '../fakes/agent-service.js';
import type { FakeSlack } from '../fakes/slack.js';
import { freePort } from './free-port.js';
import {
  appMentionEvent,
  postSignedEvent,
  type SignedPostOptions,
  type SignedPostResult,
} from './slack-events.js';

export const SIGNING_SECRET = 'test-signing-secret-0123456789';
export const BOT_TOKEN = 'xoxb-test-token';
export const APP_TOKEN = 'xapp-test-token';
export const AGENT_ID = 'agent-main';

export type StoreChoice = { kind: 'embedded'; dataDir: string } | { kind: 'postgres'; databaseUrl: string };

/** Captures every log line of a bot, for assertions on what operators would see. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _encoding: string, callback: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    callback();
  }
  get text(): string {
    return this.lines.join('\n');
  }
}

/** The real bot, built from environment variables, running on free ports. */
export interface RunningBot {
  bot: Bot;
  /** The fake Slack it talks to, which delivers its events (`via`, helpers/slack-events.ts). */
  slack: FakeSlack;
  port: number;
  eventsUrl: string;
  baseUrl: string;
  /** The admin port: /metrics, /healthz, /readyz. */
  adminUrl: string;
  logs: LogCapture;
  stop(): Promise<void>;
}

export interface BotSetup {
  slack: FakeSlack;
  agent: AgentServiceEmulator;
  store: StoreChoice;
  socketMode?: boolean;
  env?: Record<string, string>;
  /** The public port, when the test must know it before the bot starts (an OAuth redirect URL). */
  port?: number;
}

/**
 * The variables that put a bot or an entry point on `store`. On PostgreSQL a few connections, not the default
 * 10 (and one more once /readyz is asked): the bots of the files running side by side share the server's
 * max_connections (100), and none of them needs more.
 */
export function storeVariables(store: StoreChoice): Record<string, string> {
  return store.kind === 'embedded'
    ? { DATA_DIR: store.dataDir }
    : { DATABASE_URL: store.databaseUrl, DATABASE_POOL_SIZE: '4' };
}

/** The environment a bot needs to talk to the fakes and its store; `env` overrides. */
export function botEnvironment(options: BotSetup, port: number, adminPort: number): Record<string, string> {
  return {
    SLACK_BOT_TOKEN: BOT_TOKEN,
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
    SLACK_API_URL: options.slack.apiUrl,
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    AGENT_BASE_URL: options.agent.baseUrl,
    AGENT_API_KEY: options.agent.apiKey,
    AGENT_ID,
    AGENT_TIMEOUT_MS: '5000',
    LOG_LEVEL: 'debug',
    // Tests send many messages from one person; the limit has its own test.
    USER_RATE_LIMIT: '0',
    // Indicators show at once, so tests can watch them on fast answers; the delay has its own test.
    WORKING_INDICATOR_DELAY_MS: '0',
    // Most suites are about the classic indicators (reactions, one DM conversation); the agent experience,
    // the default with manifest.yml, has its own suites (SLACK_AGENT_VIEW=auto or true).
    SLACK_AGENT_VIEW: 'false',
    ...storeVariables(options.store),
    ...(options.socketMode ? { SLACK_APP_TOKEN: APP_TOKEN } : {}),
    ...options.env,
  };
}

export async function startBot(options: BotSetup): Promise<RunningBot> {
  const port = options.port ?? (await freePort());
  const adminPort = await freePort();
  const env = botEnvironment(options, port, adminPort);
  const config = loadConfig(env);
  const logs = new LogCapture();
  // Redaction as in production: the secrets of this very configuration.
  const logger = createLogger({ level: config.logLevel, secrets: secretsOf(config), destination: logs });
  const bot = await createBot(config, logger);
  await bot.start();
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    bot,
    slack: options.slack,
    port,
    baseUrl,
    eventsUrl: `${baseUrl}/slack/events`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    logs,
    stop: () => bot.stop(5_000),
  };
}

/**
 * Slack delivers an Events API body to the bot (a signed HTTP POST), its fake Slack having the message first;
 * returns the HTTP result.
 */
export function deliver(
  bot: RunningBot,
  body: unknown,
  options: SignedPostOptions = {},
): Promise<SignedPostResult> {
  return postSignedEvent(bot.eventsUrl, SIGNING_SECRET, body, { ...options, via: bot.slack });
}

/** Sends an app_mention the way Slack does (signed HTTP POST) and returns the HTTP result. */
export function mention(
  bot: RunningBot,
  fields: { channel: string; user?: string; text: string; ts?: string; threadTs?: string; eventId?: string },
): Promise<SignedPostResult> {
  return deliver(bot, appMentionEvent({ user: 'U0ALICE', ...fields, text: fields.text }));
}

/**
 * The value of one Prometheus sample on the admin port, e.g. metric(bot, 'slack_events_received_total{type="app_mention"}');
 * undefined when the bot does not expose it (so a renamed metric fails a `toBe(0)`).
 */
export async function metric(bot: { adminUrl: string }, sample: string): Promise<number | undefined> {
  const text = await (await fetch(`${bot.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${sample} `));
  return line ? Number(line.slice(sample.length + 1)) : undefined;
}
