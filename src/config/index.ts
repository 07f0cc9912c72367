import { existsSync } from 'node:fs';
import { readAgentConfig } from './agent.js';
import { readAgentViewConfig } from './agent-view.js';
import { readDeliveryConfig } from './delivery.js';
import { type Env, EnvReader } from './env-reader.js';
import { ConfigError } from './errors.js';
import { readSlackConfig, readSlashCommand } from './slack.js';
import { readTokenKeys } from './slack-auth.js';
import { readStoreConfig } from './store.js';
import type { Config, InstallationsConfig, LogLevel, OperatorConfig } from './types.js';

/**
 * Environment → typed Config. The only reader of process.env. Every problem is collected, so an operator
 * learns all of them in one run: one line each, naming the variable.
 */

export { MAX_SUGGESTED_PROMPTS } from './agent-view.js';
export { parseDuration } from './env-reader.js';
export { ConfigError, type ConfigProblem, StartupError } from './errors.js';
export { secretsOf } from './secrets.js';
export type * from './types.js';
export { ENV_VARIABLES, type EnvVariable } from './variables.js';

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

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

/** The store and TOKEN_ENCRYPTION_KEYS alone, for `npm run installations`. */
export function loadInstallationsConfig(env: Env = process.env): InstallationsConfig {
  const reader = new EnvReader(env);
  const config = { store: readStoreConfig(reader), tokenKeys: readTokenKeys(reader) };
  if (reader.problems.length > 0) throw new ConfigError(reader.problems);
  return config;
}

function readConfig(reader: EnvReader): Config {
  const slack = readSlackConfig(reader);
  const port = reader.integer('PORT', 3000, 1, 65535);
  const adminPort = reader.integer('ADMIN_PORT', 9090, 1, 65535);
  if (adminPort === port) reader.fail('ADMIN_PORT', `must differ from PORT (both are ${port})`);
  const slashCommand = readSlashCommand(reader);

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
    slack,
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
    delivery: readDeliveryConfig(reader),
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
    agentView: readAgentViewConfig(reader),
    tracing: {
      endpoint: reader.httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', reader.read('OTEL_EXPORTER_OTLP_ENDPOINT')),
      serviceName: reader.read('OTEL_SERVICE_NAME') ?? 'slack-agent-bridge',
    },
    logLevel: isLogLevel(logLevel) ? logLevel : 'info',
    logFormat: logFormat === 'json' || logFormat === 'pretty' ? logFormat : 'auto',
  };
}

function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}
