import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Environment → typed Config. The only reader of process.env. Every problem is collected, so an operator
 * learns all of them in one run: one line each, naming the variable.
 */

export interface ConfigProblem {
  variable: string;
  problem: string;
}

/** Thrown for missing or invalid settings; `problems` holds one line per variable. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly ConfigProblem[]) {
    super(problems.map(({ variable, problem }) => `${variable} ${problem}`).join('\n'));
    this.name = 'ConfigError';
  }

  /** One line per problem, as printed at start-up. */
  get lines(): string[] {
    return this.problems.map(({ variable, problem }) => `Configuration error: ${variable} ${problem}`);
  }
}

const VARIABLES = [
  'ADMIN_PORT',
  'AGENT_API_KEY',
  'AGENT_BASE_URL',
  'AGENT_ID',
  'AGENT_ROUTES',
  'AGENT_TIMEOUT_MS',
  'AGENT_VIEW_GREETING',
  'ALLOWED_CHANNEL_IDS',
  'ALLOWED_TEAM_IDS',
  'ALLOWED_USER_IDS',
  'DATABASE_POOL_SIZE',
  'DATABASE_URL',
  'DATA_DIR',
  'FEEDBACK_BUTTONS',
  'HOST',
  'JOB_LEASE_MS',
  'LOG_FORMAT',
  'LOG_LEVEL',
  'MAX_PROMPT_CHARS',
  'MENTION_ONLY',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_SERVICE_NAME',
  'PORT',
  'REPLY_RETRY_WINDOW',
  'SESSION_DELETE_RETRY_MS',
  'SESSION_IDLE_TTL',
  'SHUTDOWN_TIMEOUT_MS',
  'SLACK_AGENT_VIEW',
  'SLACK_API_URL',
  'SLACK_APP_TOKEN',
  'SLACK_BOT_TOKEN',
  'SLACK_CALL_TIMEOUT_MS',
  'SLACK_SIGNING_SECRET',
  'SLASH_COMMAND',
  'SLOW_NOTICE_MS',
  'STORE_OUTAGE_ACK_MS',
  'STORE_RETRY_WINDOW',
  'STORE_WRITE_RETRY_MS',
  'SUGGESTED_PROMPTS',
  'THREAD_CONTEXT_MESSAGES',
  'USER_RATE_LIMIT',
  'WORKER_CONCURRENCY',
  'WORKING_INDICATOR_DELAY_MS',
] as const;

export type EnvVariable = (typeof VARIABLES)[number];

/** Every environment variable the bot reads, sorted (deployment files are checked against this list). */
export const ENV_VARIABLES: readonly string[] = VARIABLES;

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * `on` / `off` force Slack's agent experience or turn it off; `auto` takes the app for an agent app (as
 * manifest.yml makes it) until Slack answers `not_agent_app` in a workspace (see AgentFeatures).
 */
export type AgentViewMode = 'auto' | 'on' | 'off';

export type SlackConnection =
  | { mode: 'http'; signingSecret: string }
  | { mode: 'socket'; appToken: string; signingSecret?: string };

export interface AgentConfig {
  baseUrl: string;
  apiKey: string;
  /** The default agent. */
  agentId: string;
  /** Channel id → agent id, for channels that talk to another agent. */
  channelAgents: ReadonlyMap<string, string>;
  timeoutMs: number;
}

export type StoreConfig =
  | { kind: 'postgres'; databaseUrl: string; poolSize: number }
  | { kind: 'embedded'; dataDir: string };

export interface SuggestedPrompt {
  title: string;
  message: string;
}

export interface Config {
  slack: {
    botToken: string;
    connection: SlackConnection;
    /** Web API base URL, always ending in `/` as WebClient expects. */
    apiUrl: string;
    /** How long one Slack call may take before it counts as failed (then a post is looked up, not repeated). */
    callTimeoutMs: number;
  };
  /** The address PORT and ADMIN_PORT listen on; undefined: every interface. */
  host?: string;
  /** Slack requests (HTTP mode) and the health endpoints. */
  port: number;
  /** Metrics and the health endpoints, for operators only. */
  adminPort: number;
  agent: AgentConfig;
  store: StoreConfig;
  sessions: {
    /** Sessions idle longer than this are deleted; 0 turns expiry off. */
    idleTtlMs: number;
    /** First retry delay of a failed session deletion; doubles per attempt. */
    deleteRetryMs: number;
  };
  slashCommand: string;
  delivery: {
    /** Threads answered at once by one process, and so prompts in flight to the agent service. */
    concurrency: number;
    /** How long a claimed job stays reserved without a heartbeat; a dead owner's job is retaken after it. */
    leaseMs: number;
    /** SIGTERM: how long in-flight answers may take before unsent work is handed back and the bot exits. */
    shutdownTimeoutMs: number;
    /** How long an answer Slack refuses is kept and retried before the thread is told it was refused. */
    replyRetryWindowMs: number;
    /**
     * How long events that cannot be recorded are refused (Slack retries them); after that they are
     * acknowledged and their authors told to send again, so Slack does not disable the subscriptions.
     */
    storeOutageAckMs: number;
    /**
     * How long an answer the store cannot record (PostgreSQL restarting or failing over) is kept in memory
     * and retried before the thread is told it was dropped.
     */
    storeRetryWindowMs: number;
    /** How long any other store write that fails is retried before the job gives up on it (taken back once its lease lapses). */
    storeWriteRetryMs: number;
  };
  access: {
    /** Empty: every workspace, channel or user is allowed. */
    teamIds: ReadonlySet<string>;
    channelIds: ReadonlySet<string>;
    userIds: ReadonlySet<string>;
    /** Requests (prompts, commands, the reset shortcut, Send again) per user per minute; 0 turns the limit off. */
    userRateLimit: number;
  };
  conversation: {
    /** Thread replies reach the agent only when they mention the bot. */
    mentionOnly: boolean;
    maxPromptChars: number;
    /** After this long without an answer the thread is told the agent is slow; 0 turns it off. */
    slowNoticeMs: number;
    /** The working reaction appears only if the answer takes longer than this (0: at once). */
    workingIndicatorDelayMs: number;
    /** Earlier thread messages sent along with a first mention mid-thread; 0 turns it off. */
    threadContextMessages: number;
    /** Feedback buttons under each answer. */
    feedbackButtons: boolean;
  };
  /** Slack's agent experience (manifest `features.agent_view`): conversations in the app's Messages tab. */
  agentView: {
    mode: AgentViewMode;
    /** Shown when the Messages tab opens (at most 4). */
    suggestedPrompts: readonly SuggestedPrompt[];
    /** Posted once per person, the first time they open the Messages tab. */
    greeting: string;
  };
  /** OpenTelemetry: spans are exported over OTLP/HTTP only when an endpoint is set. */
  tracing: { endpoint?: string; serviceName: string };
  logLevel: LogLevel;
  /** `auto`: readable lines in a terminal, JSON otherwise. */
  logFormat: 'auto' | 'json' | 'pretty';
}

/** What the operator command needs: no Slack settings. */
export interface OperatorConfig {
  agent: AgentConfig;
  store: StoreConfig;
}

type Env = Record<string, string | undefined>;

export const MAX_SUGGESTED_PROMPTS = 4;
const DEFAULT_SUGGESTED_PROMPTS =
  'What can you help me with?|Summarize::Summarize the key points of what I paste next|Draft::Help me draft a short, friendly reply';
const DEFAULT_GREETING = 'Hi! Ask me anything: each conversation here gets its own thread with the agent.';
const TRUE_WORDS = ['true', '1', 'yes', 'on'];
const FALSE_WORDS = ['false', '0', 'no', 'off'];

/** Reads variables and records every problem instead of stopping at the first. */
class EnvReader {
  readonly problems: ConfigProblem[] = [];

  constructor(private readonly env: Env) {}

  read(name: EnvVariable): string | undefined {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  fail(variable: EnvVariable, problem: string): void {
    this.problems.push({ variable, problem });
  }

  required(name: EnvVariable, hint: string): string {
    const value = this.read(name);
    if (value === undefined) this.fail(name, `is required (${hint})`);
    return value ?? '';
  }

  integer(name: EnvVariable, fallback: number, min: number, max: number): number {
    const raw = this.read(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
      this.fail(name, `must be a whole number from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  }

  boolean(name: EnvVariable, fallback: boolean): boolean {
    const raw = this.read(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (TRUE_WORDS.includes(raw)) return true;
    if (FALSE_WORDS.includes(raw)) return false;
    this.fail(name, `must be true or false (got "${raw}")`);
    return fallback;
  }

  /** `30d`, `12h`, `15m`, `90s`, or `0` (off). */
  duration(name: EnvVariable, fallback: string): number {
    const raw = this.read(name) ?? fallback;
    const parsed = parseDuration(raw);
    if (parsed === undefined) {
      this.fail(name, `must be a duration like 30d, 12h, 15m or 90s, or 0 for off (got "${raw}")`);
      return parseDuration(fallback) ?? 0;
    }
    return parsed;
  }

  httpUrl(name: EnvVariable, raw: string | undefined): string | undefined {
    if (raw === undefined) return undefined;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      this.fail(name, `must be an http(s) URL (got "${raw}")`);
      return undefined;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      this.fail(name, `must be an http(s) URL (got "${raw}")`);
      return undefined;
    }
    return raw;
  }

  /** A comma-separated list of Slack ids (T…, C…, G…, U…, W…). */
  idList(name: EnvVariable): ReadonlySet<string> {
    const ids = (this.read(name) ?? '')
      .split(',')
      .map((id) => id.trim())
      .filter(Boolean);
    const bad = ids.find((id) => !/^[A-Z0-9]+$/.test(id));
    if (bad !== undefined)
      this.fail(name, `must be a comma-separated list of Slack ids (bad entry "${bad}")`);
    return new Set(ids);
  }
}

/** Loads `.env` from the working directory, when there is one; variables already set in the environment win. */
export function loadDotEnv(file = '.env'): void {
  if (existsSync(file)) process.loadEnvFile(file);
}

/** Parses and validates the whole environment; throws one ConfigError listing every problem. */
export function loadConfig(env: Env = process.env): Config {
  const reader = new EnvReader(env);
  const config = readConfig(reader);
  if (reader.problems.length > 0) throw new ConfigError(reader.problems);
  return config;
}

/** The agent and store settings alone, for the operator command. */
export function loadOperatorConfig(env: Env = process.env): OperatorConfig {
  const reader = new EnvReader(env);
  const config = { agent: readAgentConfig(reader), store: readStoreConfig(reader) };
  if (reader.problems.length > 0) throw new ConfigError(reader.problems);
  return config;
}

function readConfig(reader: EnvReader): Config {
  const botToken = reader.required('SLACK_BOT_TOKEN', 'the Bot User OAuth Token, xoxb-…');
  if (botToken !== '' && !botToken.startsWith('xoxb-')) {
    reader.fail('SLACK_BOT_TOKEN', 'must be a bot token starting with "xoxb-"');
  }
  const connection = readConnection(reader);
  const apiUrl =
    reader.httpUrl('SLACK_API_URL', reader.read('SLACK_API_URL') ?? 'https://slack.com/api/') ?? '';
  const port = reader.integer('PORT', 3000, 1, 65535);
  const adminPort = reader.integer('ADMIN_PORT', 9090, 1, 65535);
  if (adminPort === port) reader.fail('ADMIN_PORT', `must differ from PORT (both are ${port})`);

  const slashCommand = reader.read('SLASH_COMMAND') ?? '/agent';
  if (!/^\/[a-z0-9_-]{1,31}$/.test(slashCommand)) {
    reader.fail(
      'SLASH_COMMAND',
      `must look like /agent: a slash and up to 31 lowercase letters, digits, - or _ (got "${slashCommand}")`,
    );
  }

  const logLevel = (reader.read('LOG_LEVEL') ?? 'info').toLowerCase();
  if (!isLogLevel(logLevel)) {
    reader.fail('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')} (got "${logLevel}")`);
  }
  const logFormat = (reader.read('LOG_FORMAT') ?? 'auto').toLowerCase();
  if (logFormat !== 'auto' && logFormat !== 'json' && logFormat !== 'pretty') {
    reader.fail('LOG_FORMAT', `must be auto, json or pretty (got "${logFormat}")`);
  }
  const maxPromptChars = reader.integer('MAX_PROMPT_CHARS', 8000, 1, 1_000_000);

  return {
    slack: {
      botToken,
      connection,
      apiUrl: apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`,
      callTimeoutMs: reader.integer('SLACK_CALL_TIMEOUT_MS', 20_000, 1_000, 120_000),
    },
    host: reader.read('HOST'),
    port,
    adminPort,
    agent: readAgentConfig(reader),
    store: readStoreConfig(reader),
    sessions: {
      idleTtlMs: reader.duration('SESSION_IDLE_TTL', '30d'),
      deleteRetryMs: reader.integer('SESSION_DELETE_RETRY_MS', 5000, 10, 3_600_000),
    },
    slashCommand,
    delivery: {
      concurrency: reader.integer('WORKER_CONCURRENCY', 100, 1, 10_000),
      leaseMs: reader.integer('JOB_LEASE_MS', 10_000, 500, 3_600_000),
      shutdownTimeoutMs: reader.integer('SHUTDOWN_TIMEOUT_MS', 20_000, 0, 3_600_000),
      replyRetryWindowMs: reader.duration('REPLY_RETRY_WINDOW', '1h'),
      // Below Slack's last retry of an event (about 5 minutes after the first delivery): that retry gets the note.
      storeOutageAckMs: reader.integer('STORE_OUTAGE_ACK_MS', 120_000, 0, 240_000),
      storeRetryWindowMs: storeRetryWindow(reader),
      storeWriteRetryMs: reader.integer('STORE_WRITE_RETRY_MS', 20_000, 0, 600_000),
    },
    access: {
      teamIds: reader.idList('ALLOWED_TEAM_IDS'),
      channelIds: reader.idList('ALLOWED_CHANNEL_IDS'),
      userIds: reader.idList('ALLOWED_USER_IDS'),
      userRateLimit: reader.integer('USER_RATE_LIMIT', 20, 0, 100_000),
    },
    conversation: {
      mentionOnly: reader.boolean('MENTION_ONLY', false),
      maxPromptChars,
      slowNoticeMs: reader.integer('SLOW_NOTICE_MS', 20_000, 0, 3_600_000),
      workingIndicatorDelayMs: reader.integer('WORKING_INDICATOR_DELAY_MS', 1000, 0, 3_600_000),
      threadContextMessages: reader.integer('THREAD_CONTEXT_MESSAGES', 20, 0, 200),
      feedbackButtons: reader.boolean('FEEDBACK_BUTTONS', true),
    },
    agentView: {
      mode: readAgentViewMode(reader),
      suggestedPrompts: readSuggestedPrompts(reader),
      greeting: reader.read('AGENT_VIEW_GREETING') ?? DEFAULT_GREETING,
    },
    tracing: {
      endpoint: reader.httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', reader.read('OTEL_EXPORTER_OTLP_ENDPOINT')),
      serviceName: reader.read('OTEL_SERVICE_NAME') ?? 'slack-agent-bridge',
    },
    logLevel: isLogLevel(logLevel) ? logLevel : 'info',
    logFormat: logFormat === 'json' || logFormat === 'pretty' ? logFormat : 'auto',
  };
}

function readConnection(reader: EnvReader): SlackConnection {
  const appToken = reader.read('SLACK_APP_TOKEN');
  if (appToken !== undefined) {
    if (!appToken.startsWith('xapp-')) {
      reader.fail('SLACK_APP_TOKEN', 'must be an app-level token starting with "xapp-"');
    }
    return { mode: 'socket', appToken, signingSecret: reader.read('SLACK_SIGNING_SECRET') };
  }
  return {
    mode: 'http',
    signingSecret: reader.required(
      'SLACK_SIGNING_SECRET',
      'needed in HTTP mode; set SLACK_APP_TOKEN instead to use Socket Mode',
    ),
  };
}

function readAgentConfig(reader: EnvReader): AgentConfig {
  const baseUrl = reader.httpUrl(
    'AGENT_BASE_URL',
    reader.required('AGENT_BASE_URL', 'e.g. https://host/v1') || undefined,
  );
  return {
    baseUrl: (baseUrl ?? '').replace(/\/+$/, ''),
    apiKey: reader.required('AGENT_API_KEY', 'the agent service API key'),
    agentId: reader.required('AGENT_ID', 'the default agent id'),
    channelAgents: readChannelAgents(reader),
    timeoutMs: reader.integer('AGENT_TIMEOUT_MS', 90_000, 1000, 3_600_000),
  };
}

function readStoreConfig(reader: EnvReader): StoreConfig {
  const databaseUrl = reader.read('DATABASE_URL');
  const poolSize = reader.integer('DATABASE_POOL_SIZE', 10, 1, 1000);
  if (databaseUrl !== undefined) {
    if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
      // The value may hold a password: never echo it.
      reader.fail('DATABASE_URL', 'must be a postgres:// or postgresql:// URL');
    }
    return { kind: 'postgres', databaseUrl, poolSize };
  }
  return { kind: 'embedded', dataDir: path.resolve(reader.read('DATA_DIR') ?? './data') };
}

/** `C0123=agent-b,C0456=agent-c`: channels whose threads go to another agent than AGENT_ID. */
function readChannelAgents(reader: EnvReader): ReadonlyMap<string, string> {
  const routes = new Map<string, string>();
  for (const entry of (reader.read('AGENT_ROUTES') ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const match = /^([A-Z0-9]+)\s*=\s*(\S+)$/.exec(entry);
    if (!match?.[1] || !match[2]) {
      reader.fail(
        'AGENT_ROUTES',
        `must be a comma-separated list of CHANNEL_ID=AGENT_ID (bad entry "${entry}")`,
      );
      continue;
    }
    routes.set(match[1], match[2]);
  }
  return routes;
}

function readAgentViewMode(reader: EnvReader): AgentViewMode {
  const raw = (reader.read('SLACK_AGENT_VIEW') ?? 'auto').toLowerCase();
  if (raw === 'auto') return 'auto';
  if (TRUE_WORDS.includes(raw)) return 'on';
  if (FALSE_WORDS.includes(raw)) return 'off';
  reader.fail('SLACK_AGENT_VIEW', `must be auto, true or false (got "${raw}")`);
  return 'auto';
}

/** `title::message` entries separated by `|`; an entry without `::` is its own title. */
function readSuggestedPrompts(reader: EnvReader): SuggestedPrompt[] {
  const prompts = (reader.read('SUGGESTED_PROMPTS') ?? DEFAULT_SUGGESTED_PROMPTS)
    .split('|')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const [title = '', ...rest] = entry.split('::');
      const message = rest.length > 0 ? rest.join('::').trim() : title.trim();
      return { title: title.trim() || message, message };
    });
  if (prompts.length > MAX_SUGGESTED_PROMPTS) {
    reader.fail(
      'SUGGESTED_PROMPTS',
      `must list at most ${MAX_SUGGESTED_PROMPTS} prompts, as many as Slack shows (got ${prompts.length})`,
    );
  }
  if (prompts.some((prompt) => prompt.message === '')) {
    reader.fail('SUGGESTED_PROMPTS', 'must give each entry a message: "title::message|title::message"');
  }
  return prompts.slice(0, MAX_SUGGESTED_PROMPTS);
}

/** From a second to an hour: a failover takes minutes, and no window would drop every answer at the first error. */
function storeRetryWindow(reader: EnvReader): number {
  const raw = reader.read('STORE_RETRY_WINDOW');
  const fallback = 180_000;
  if (raw === undefined) return fallback;
  const ms = parseDuration(raw);
  if (ms === undefined || ms < 1_000 || ms > 3_600_000) {
    reader.fail('STORE_RETRY_WINDOW', `must be a duration from 1s to 1h, like 3m or 90s (got "${raw}")`);
    return fallback;
  }
  return ms;
}

/** `30d`, `12h`, `15m`, `90s`, or `0`; undefined when it is none of those. */
export function parseDuration(raw: string): number | undefined {
  if (raw === '0') return 0;
  const match = /^(\d+)\s*(s|m|h|d)$/.exec(raw.toLowerCase());
  const unitMs = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
  if (!match?.[1] || !match[2]) return undefined;
  return Number(match[1]) * unitMs[match[2] as keyof typeof unitMs];
}

function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

/** Every configured secret value, for log redaction: tokens, the signing secret, the API key, the database URL. */
export function secretsOf(config: Config | OperatorConfig): string[] {
  const { agent, store } = config;
  const secrets = [agent.apiKey];
  if ('slack' in config) {
    const { slack } = config;
    secrets.push(slack.botToken);
    if (slack.connection.mode === 'socket') secrets.push(slack.connection.appToken);
    if (slack.connection.signingSecret) secrets.push(slack.connection.signingSecret);
  }
  if (store.kind === 'postgres') secrets.push(...databaseSecrets(store.databaseUrl));
  return secrets.filter((secret) => secret.length >= 4);
}

/**
 * The whole URL and its password, as written (URL-encoded) and decoded; pg reads the password from the
 * user-info part or from a `password` parameter.
 */
function databaseSecrets(databaseUrl: string): string[] {
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    // Not a URL: the whole value is the secret.
    return [databaseUrl];
  }
  const written = [
    url.password,
    ...url.search
      .slice(1)
      .split('&')
      .filter((pair) => pair.startsWith('password='))
      .map((pair) => pair.slice('password='.length)),
  ];
  return [databaseUrl, ...written, decodedOrSelf(url.password), ...url.searchParams.getAll('password')];
}

/** A URL component decoded; as written when it is not valid percent-encoding (it is still the secret). */
function decodedOrSelf(component: string): string {
  try {
    return decodeURIComponent(component);
  } catch {
    return component;
  }
}

/** A start-up failure an operator fixes in the configuration; the message is one line naming what to fix. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}
