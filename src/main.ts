import { type Bot, createBot, SlackAuthError } from './app.js';
import { ConfigError, loadConfig, secretsOf } from './config.js';
import { StoreError } from './db/database.js';
import { applyHeapPolicy } from './heap-policy.js';
import { createLogger } from './observability/logger.js';

async function main(): Promise<void> {
  applyHeapPolicy();
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) exitWith(`Configuration error: ${error.message}`);
    throw error;
  }
  const logger = createLogger({
    level: config.logLevel,
    secrets: secretsOf(config),
    // JSON for log collectors; readable lines when a person watches a terminal.
    pretty: config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY === true),
  });

  let bot: Bot;
  try {
    bot = await createBot(config, logger);
    await bot.start();
  } catch (error) {
    if (error instanceof SlackAuthError || error instanceof StoreError) {
      logger.fatal(error.message);
      exitWith(`Start-up failed: ${error.message}`);
    }
    if (isAddressInUse(error)) exitWith(`Start-up failed: PORT ${config.port} is already in use`);
    throw error;
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
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  // One bad event must never take the bot down; log it and keep serving.
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));
}

function exitWith(line: string): never {
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

function isAddressInUse(error: unknown): boolean {
  return (error as { code?: string } | undefined)?.code === 'EADDRINUSE';
}

main().catch((error: unknown) => {
  exitWith(`Start-up failed: ${error instanceof Error ? error.message : String(error)}`);
});
