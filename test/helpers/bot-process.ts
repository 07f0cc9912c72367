import type { ChildProcess } from 'node:child_process';
import { startEntryPoint } from './entry-point.js';
import { freePort } from './free-port.js';
import { type BotSetup, botEnvironment } from './stack.js';
import { waitFor } from './wait.js';

/**
 * The bot in its own process (src/main.ts, compiled), so tests can SIGKILL or SIGTERM it; started in an
 * empty directory, so a `.env` in the project's root changes nothing.
 */
export interface BotProcess {
  child: ChildProcess;
  port: number;
  adminUrl: string;
  eventsUrl: string;
  baseUrl: string;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * How long a test waits for the bot in a child process to be ready: node's start, loading the compiled
 * sources and opening the store, on a machine the rest of the suite keeps busy (over 30 s was seen in CI on
 * a machine half as fast). Only a bot that never gets ready waits it out.
 */
export const PROCESS_READY_MS = 90_000;

export async function spawnBot(options: BotSetup): Promise<BotProcess> {
  const port = await freePort();
  const adminPort = await freePort();
  const { child, output, exited } = startEntryPoint(
    'src/main.ts',
    [],
    botEnvironment(
      { ...options, env: { AGENT_TIMEOUT_MS: '10000', LOG_LEVEL: 'info', ...options.env } },
      port,
      adminPort,
    ),
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => child.exitCode === null && (await fetch(`${baseUrl}/readyz`).catch(() => undefined))?.ok,
    'bot process ready',
    PROCESS_READY_MS,
  ).catch((error: unknown) => {
    // What the process said by then, not when the wait began.
    child.kill('SIGKILL');
    throw new Error(`${String(error)} (exit code ${child.exitCode}; output: ${output().slice(-500)})`);
  });
  return {
    child,
    port,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    baseUrl,
    eventsUrl: `${baseUrl}/slack/events`,
    output,
    exited,
  };
}
