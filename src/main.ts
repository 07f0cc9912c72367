import { existsSync } from 'node:fs';
import type { Bot } from './app.js';
import { ConfigError, loadConfig, loadDotEnv, StartupError, secretsOf } from './config/index.js';
import { createLogger } from './observability/logger.js';
import { StoreError } from './store/store-error.js';

/** The process: environment (and `.env`), configuration, logger, start, signals, exit codes. */
async function main(): Promise<void> {
  loadDotEnv();
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) exitWith(...error.lines, ...firstRunHint(error));
    throw error;
  }
  const logger = createLogger({
    level: config.logLevel,
    secrets: secretsOf(config),
    // JSON for log collectors; readable lines when a person watches a terminal.
    pretty: config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY === true),
  });

  // A stop asked for while starting is carried out once started (a second one ends the process at once): as
  // process 1 of a container, Node would ignore the signal without a handler, and Docker kill it later.
  let stopAsked: NodeJS.Signals | undefined;
  const duringStartUp = (signal: NodeJS.Signals) => {
    if (stopAsked) process.exit(1);
    stopAsked = signal;
    logger.info({ signal }, 'stopping once start-up ends');
  };
  process.on('SIGTERM', duringStartUp);
  process.on('SIGINT', duringStartUp);
  let bot: Bot;
  try {
    // Loaded once the configuration is known to be good: a bad one is reported in a tenth of the time.
    const { createBot } = await import('./app.js');
    bot = await createBot(config, logger);
    await bot.start();
  } catch (error) {
    // Printed once, on stderr, one line per failure: an operator reads them, a log collector needs none.
    const failures = error instanceof AggregateError ? (error.errors as unknown[]) : [error];
    const secrets = secretsOf(config);
    exitWith(
      ...failures.map((failure) => `Start-up failed: ${redacted(startupFailureText(failure), secrets)}`),
    );
  }

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    bot.stop(config.delivery.shutdownTimeoutMs).then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.off('SIGTERM', duringStartUp);
  process.off('SIGINT', duringStartUp);
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  if (stopAsked) shutdown(stopAsked);
  // One bad event must never take the bot down; log it and keep serving.
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));
}

function exitWith(...lines: string[]): never {
  process.stderr.write(`${lines.join('\n')}\n`);
  process.exit(1);
}

/** Required settings missing and no `.env`: most likely a first run, so say where to go from here. */
function firstRunHint(error: ConfigError): string[] {
  const missing = error.problems.some(({ problem }) => problem.startsWith('is required'));
  if (!missing || existsSync('.env')) return [];
  return [
    'No .env here: copy .env.example to .env and fill it in (README.md, "Configuration"),',
    'or run the bot with a fake Slack and an agent emulator, nothing to configure: npm run demo',
  ];
}

/** One line an operator acts on, whatever failed: no stack trace. */
function startupFailureText(error: unknown): string {
  if (error instanceof StartupError || error instanceof StoreError) return error.message;
  const port = addressInUse(error);
  if (port !== undefined) return `port ${port} is already in use (PORT or ADMIN_PORT)`;
  return error instanceof Error ? error.message : String(error);
}

/** These lines bypass the logger, and so its redaction: a library's error message must not leak a secret. */
function redacted(line: string, secrets: readonly string[]): string {
  // Longest first: the database URL before the password it holds.
  return [...secrets]
    .sort((a, b) => b.length - a.length)
    .reduce((text, secret) => text.split(secret).join('[redacted]'), line);
}

function addressInUse(error: unknown): number | undefined {
  const failure = error as { code?: string; port?: number } | undefined;
  return failure?.code === 'EADDRINUSE' ? (failure.port ?? 0) : undefined;
}

main().catch((error: unknown) => {
  exitWith(`Start-up failed: ${error instanceof Error ? error.message : String(error)}`);
});
