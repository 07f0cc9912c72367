import path from 'node:path';
import type { AgentViewMode } from './slack/agent-view.js';

/** Thrown for a missing or invalid setting; the message is one line that names the variable. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

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

/** What the operator command needs: no Slack settings. */
export interface OperatorConfig {
  agent: AgentConfig;
  store: StoreConfig;
}

export type StoreConfig = { kind: 'postgres'; databaseUrl: string } | { kind: 'embedded'; dataDir: string };

export interface Config {
  slack: {
    botToken: string;
    connection: SlackConnection;
    /** Web API base URL, always ending in `/` as WebClient expects. */
    apiUrl: string;
  };
  port: number;
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
    /** How long a claimed job stays reserved without a heartbeat; a dead owner's job is retaken after it. */
    leaseMs: number;
    /** SIGTERM: how long in-flight answers may take before unsent work is handed back and the bot exits. */
    shutdownTimeoutMs: number;
  };
  access: {
    /** Empty: every workspace, channel or user is allowed. */
    teamIds: ReadonlySet<string>;
    channelIds: ReadonlySet<string>;
    userIds: ReadonlySet<string>;
    /** Prompts per user per minute; 0 turns the limit off. */
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
  };
  /** Slack's agent experience (manifest `features.agent_view`): conversations in the app's Messages tab. */
  agentView: {
    /**
     * In Messages-tab conversations every top-level DM message starts its own thread and session, with
     * status and title. `auto`: a DM is one once its Messages tab was opened (only agent apps hear that).
     */
    mode: AgentViewMode;
    /** Shown when the Messages tab opens (at most 4). */
    suggestedPrompts: readonly SuggestedPrompt[];
    /** Posted once per person in the Messages tab, and the heading of the suggested prompts. */
    greeting: string;
  };
  logLevel: LogLevel;
  /** `auto`: readable lines in a terminal, JSON otherwise. */
  logFormat: 'auto' | 'json' | 'pretty';
}

export interface SuggestedPrompt {
  title: string;
  message: string;
}

type Env = Record<string, string | undefined>;

/**
 * Every environment variable the bot reads, sorted. Deployment files (Dockerfile, compose, Kubernetes) are
 * checked against it, so a renamed or misspelt variable fails a test instead of being silently ignored.
 */
export const ENV_VARIABLES: readonly string[] = [
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
  'JOB_LEASE_MS',
  'LOG_FORMAT',
  'LOG_LEVEL',
  'MAX_PROMPT_CHARS',
  'MENTION_ONLY',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_SERVICE_NAME',
  'PORT',
  'SESSION_DELETE_RETRY_MS',
  'SESSION_IDLE_TTL',
  'SHUTDOWN_TIMEOUT_MS',
  'SLACK_AGENT_VIEW',
  'SLACK_API_URL',
  'SLACK_APP_TOKEN',
  'SLACK_BOT_TOKEN',
  'SLACK_SIGNING_SECRET',
  'SLASH_COMMAND',
  'SLOW_NOTICE_MS',
  'SUGGESTED_PROMPTS',
  'THREAD_CONTEXT_MESSAGES',
  'USER_RATE_LIMIT',
  'WORKER_CONCURRENCY',
  'WORKING_INDICATOR_DELAY_MS',
];

export const MAX_SUGGESTED_PROMPTS = 4;
const DEFAULT_SUGGESTED_PROMPTS =
  'What can you help me with?|Summarize::Summarize the key points of what I paste next|Draft::Help me draft a short, friendly reply';
const DEFAULT_GREETING = 'Hi! Ask me anything: each conversation here gets its own thread with the agent.';

interface EnvReader {
  read(name: string): string | undefined;
  required(name: string, hint: string): string;
}

function envReader(env: Env): EnvReader {
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  return {
    read,
    required(name, hint) {
      const value = read(name);
      if (value === undefined) throw new ConfigError(name, `is required (${hint})`);
      return value;
    },
  };
}

/** The agent and store settings alone, for the operator command. */
export function loadOperatorConfig(env: Env = process.env): OperatorConfig {
  const reader = envReader(env);
  return { agent: readAgentConfig(reader), store: readStoreConfig(reader) };
}

/** Parses and validates the environment once; throws ConfigError on the first bad value. */
export function loadConfig(env: Env = process.env): Config {
  const reader = envReader(env);
  const { read, required } = reader;

  const botToken = required('SLACK_BOT_TOKEN', 'the Bot User OAuth Token, xoxb-…');
  if (!botToken.startsWith('xoxb-')) {
    throw new ConfigError('SLACK_BOT_TOKEN', 'must be a bot token starting with "xoxb-"');
  }

  const appToken = read('SLACK_APP_TOKEN');
  let connection: SlackConnection;
  if (appToken !== undefined) {
    if (!appToken.startsWith('xapp-')) {
      throw new ConfigError('SLACK_APP_TOKEN', 'must be an app-level token starting with "xapp-"');
    }
    connection = { mode: 'socket', appToken, signingSecret: read('SLACK_SIGNING_SECRET') };
  } else {
    connection = {
      mode: 'http',
      signingSecret: required(
        'SLACK_SIGNING_SECRET',
        'needed in HTTP mode; set SLACK_APP_TOKEN instead to use Socket Mode',
      ),
    };
  }

  const apiUrl = parseHttpUrl('SLACK_API_URL', read('SLACK_API_URL') ?? 'https://slack.com/api/');
  const port = parseInteger('PORT', read('PORT') ?? '3000', 1, 65535);

  const agent = readAgentConfig(reader);
  const store = readStoreConfig(reader);
  const sessions = {
    idleTtlMs: parseDuration('SESSION_IDLE_TTL', read('SESSION_IDLE_TTL') ?? '30d'),
    deleteRetryMs: parseInteger(
      'SESSION_DELETE_RETRY_MS',
      read('SESSION_DELETE_RETRY_MS') ?? '5000',
      10,
      3_600_000,
    ),
  };
  const delivery = {
    leaseMs: parseInteger('JOB_LEASE_MS', read('JOB_LEASE_MS') ?? '30000', 500, 3_600_000),
    shutdownTimeoutMs: parseInteger(
      'SHUTDOWN_TIMEOUT_MS',
      read('SHUTDOWN_TIMEOUT_MS') ?? '20000',
      0,
      3_600_000,
    ),
  };
  const slashCommand = read('SLASH_COMMAND') ?? '/agent';
  if (!/^\/[a-z0-9_-]{1,31}$/.test(slashCommand)) {
    throw new ConfigError(
      'SLASH_COMMAND',
      `must look like /agent: a slash and up to 31 lowercase letters, digits, - or _ (got "${slashCommand}")`,
    );
  }

  const access = {
    teamIds: parseIdList('ALLOWED_TEAM_IDS', read('ALLOWED_TEAM_IDS')),
    channelIds: parseIdList('ALLOWED_CHANNEL_IDS', read('ALLOWED_CHANNEL_IDS')),
    userIds: parseIdList('ALLOWED_USER_IDS', read('ALLOWED_USER_IDS')),
    userRateLimit: parseInteger('USER_RATE_LIMIT', read('USER_RATE_LIMIT') ?? '20', 0, 100_000),
  };
  const conversation = {
    mentionOnly: parseBoolean('MENTION_ONLY', read('MENTION_ONLY') ?? 'false'),
    maxPromptChars: parseInteger('MAX_PROMPT_CHARS', read('MAX_PROMPT_CHARS') ?? '8000', 1, 1_000_000),
    slowNoticeMs: parseInteger('SLOW_NOTICE_MS', read('SLOW_NOTICE_MS') ?? '20000', 0, 3_600_000),
    workingIndicatorDelayMs: parseInteger(
      'WORKING_INDICATOR_DELAY_MS',
      read('WORKING_INDICATOR_DELAY_MS') ?? '1000',
      0,
      3_600_000,
    ),
  };

  const agentView = {
    mode: parseAgentViewMode(read('SLACK_AGENT_VIEW') ?? 'auto'),
    suggestedPrompts: parseSuggestedPrompts(read('SUGGESTED_PROMPTS') ?? DEFAULT_SUGGESTED_PROMPTS),
    greeting: read('AGENT_VIEW_GREETING') ?? DEFAULT_GREETING,
  };

  const logLevel = (read('LOG_LEVEL') ?? 'info').toLowerCase();
  if (!isLogLevel(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')} (got "${logLevel}")`);
  }

  const logFormat = (read('LOG_FORMAT') ?? 'auto').toLowerCase();
  if (logFormat !== 'auto' && logFormat !== 'json' && logFormat !== 'pretty') {
    throw new ConfigError('LOG_FORMAT', `must be auto, json or pretty (got "${logFormat}")`);
  }

  return {
    logFormat,
    slack: { botToken, connection, apiUrl: apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/` },
    port,
    agent,
    store,
    sessions,
    slashCommand,
    delivery,
    access,
    conversation,
    agentView,
    logLevel,
  };
}

function readAgentConfig({ read, required }: EnvReader): AgentConfig {
  const baseUrl = parseHttpUrl('AGENT_BASE_URL', required('AGENT_BASE_URL', 'e.g. https://host/v1'));
  return {
    baseUrl: baseUrl.replace(/\/+$/, ''),
    apiKey: required('AGENT_API_KEY', 'the agent service API key'),
    agentId: required('AGENT_ID', 'the default agent id'),
    channelAgents: parseChannelAgents(read('AGENT_ROUTES')),
    timeoutMs: parseInteger('AGENT_TIMEOUT_MS', read('AGENT_TIMEOUT_MS') ?? '90000', 1000, 3_600_000),
  };
}

function readStoreConfig({ read }: EnvReader): StoreConfig {
  const databaseUrl = read('DATABASE_URL');
  if (databaseUrl !== undefined) {
    if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
      throw new ConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// URL');
    }
    return { kind: 'postgres', databaseUrl };
  }
  return { kind: 'embedded', dataDir: path.resolve(read('DATA_DIR') ?? './data') };
}

/** `C0123=agent-b,C0456=agent-c`: channels whose threads go to another agent than AGENT_ID. */
function parseChannelAgents(raw: string | undefined): ReadonlyMap<string, string> {
  const routes = new Map<string, string>();
  if (raw === undefined) return routes;
  for (const entry of raw
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const match = /^([A-Z0-9]+)\s*=\s*(\S+)$/.exec(entry);
    if (!match?.[1] || !match[2]) {
      throw new ConfigError(
        'AGENT_ROUTES',
        `must be a comma-separated list of CHANNEL_ID=AGENT_ID (bad entry "${entry}")`,
      );
    }
    routes.set(match[1], match[2]);
  }
  return routes;
}

/** `30d`, `12h`, `15m`, `90s`, or `0` (off). */
function parseDuration(name: string, raw: string): number {
  if (raw === '0') return 0;
  const match = /^(\d+)\s*(s|m|h|d)$/.exec(raw.toLowerCase());
  const unitMs = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
  if (!match?.[1] || !match[2]) {
    throw new ConfigError(name, `must be a duration like 30d, 12h, 15m or 90s, or 0 for off (got "${raw}")`);
  }
  return Number(match[1]) * unitMs[match[2] as keyof typeof unitMs];
}

/** Every configured secret value, for log redaction. */
export function secretsOf(config: Config | OperatorConfig): string[] {
  const { agent, store } = config;
  const secrets = [agent.apiKey];
  if ('slack' in config) {
    const { slack } = config;
    secrets.push(slack.botToken);
    if (slack.connection.mode === 'socket') secrets.push(slack.connection.appToken);
    if (slack.connection.signingSecret) secrets.push(slack.connection.signingSecret);
  }
  if (store.kind === 'postgres') {
    const password = passwordOf(store.databaseUrl);
    if (password) secrets.push(password);
  }
  return secrets.filter((secret) => secret.length >= 4);
}

function passwordOf(databaseUrl: string): string | undefined {
  try {
    return decodeURIComponent(new URL(databaseUrl).password) || undefined;
  } catch {
    return undefined;
  }
}

function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

function parseInteger(name: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `must be a whole number from ${min} to ${max} (got "${raw}")`);
  }
  return value;
}

/** A comma-separated list of Slack ids (T…, C…, G…, U…, W…). */
function parseIdList(name: string, raw: string | undefined): ReadonlySet<string> {
  const ids = (raw ?? '')
    .split(',')
    .map((id) => id.trim())
    .filter(Boolean);
  const bad = ids.find((id) => !/^[A-Z0-9]+$/.test(id));
  if (bad !== undefined)
    throw new ConfigError(name, `must be a comma-separated list of Slack ids (bad entry "${bad}")`);
  return new Set(ids);
}

function parseAgentViewMode(raw: string): AgentViewMode {
  const value = raw.toLowerCase();
  if (value === 'auto') return 'auto';
  if (['true', '1', 'yes', 'on'].includes(value)) return 'on';
  if (['false', '0', 'no', 'off'].includes(value)) return 'off';
  throw new ConfigError('SLACK_AGENT_VIEW', `must be auto, true or false (got "${raw}")`);
}

/** `title::message` entries separated by `|`; an entry without `::` is its own title. */
function parseSuggestedPrompts(raw: string): SuggestedPrompt[] {
  const prompts = raw
    .split('|')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const [title = '', ...rest] = entry.split('::');
      const message = rest.length > 0 ? rest.join('::').trim() : title.trim();
      return { title: title.trim() || message, message };
    });
  if (prompts.length > MAX_SUGGESTED_PROMPTS)
    throw new ConfigError(
      'SUGGESTED_PROMPTS',
      `must list at most ${MAX_SUGGESTED_PROMPTS} prompts, as many as Slack shows (got ${prompts.length})`,
    );
  if (prompts.some((prompt) => prompt.message === ''))
    throw new ConfigError(
      'SUGGESTED_PROMPTS',
      'must give each entry a message: "title::message|title::message"',
    );
  return prompts;
}

function parseBoolean(name: string, raw: string): boolean {
  const value = raw.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(value)) return true;
  if (['false', '0', 'no', 'off'].includes(value)) return false;
  throw new ConfigError(name, `must be true or false (got "${raw}")`);
}

function parseHttpUrl(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be an http(s) URL (got "${raw}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(name, `must be an http(s) URL (got "${raw}")`);
  }
  return raw;
}
