/**
 * `npm run demo`: the bot in a Slack-like page on this machine, no workspace needed.
 *
 *   npm run demo                       # agent emulator, page on http://127.0.0.1:3030/
 *   npm run demo -- --port 8080 --data-dir /tmp/demo
 *   AGENT_BASE_URL=https://…/v1 AGENT_API_KEY=… AGENT_ID=… npm run demo   # a real agent
 */
import { parseArgs } from 'node:util';
import type { RunningDemo } from './demo.js';

function fail(line: string): never {
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

let args: ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>['values'];
const OPTIONS = {
  port: { type: 'string' },
  'data-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;
try {
  args = parseArgs({ options: OPTIONS, allowPositionals: false }).values;
} catch (error) {
  fail(`demo: ${error instanceof Error ? error.message : String(error)} (try --help)`);
}
if (args.help) {
  process.stdout.write(`Usage: npm run demo -- [--port N] [--data-dir DIR]

  --port N         page port (env DEMO_PORT, default 3030; 0: any free port)
  --data-dir DIR   where the bot's embedded store lives (env DEMO_DATA_DIR, default ./data/demo);
                   it starts empty each run, like the fake Slack and the emulator, as a copy of an
                   empty store the first run keeps there (so later runs start sooner)

Set AGENT_BASE_URL, AGENT_API_KEY and AGENT_ID to talk to a real agent service instead of the emulator;
DEMO_AGENT_LATENCY_MS sets the emulator's answer time (default 2000); with the emulator AGENT_TIMEOUT_MS
defaults to 10000 (or three times that latency), so that an answer lost to the page's "Restart bot" is
reported within seconds. Other bot settings (MENTION_ONLY, WORKING_INDICATOR_DELAY_MS, ...) are read from the
environment as usual.
`);
  process.exit(0);
}

const portText = args.port ?? process.env.DEMO_PORT ?? '3030';
const port = Number(portText);
if (!/^\d+$/.test(portText) || port > 65_535)
  fail(`demo: --port must be a whole number from 0 to 65535 (got "${portText}")`);
const latencyText = process.env.DEMO_AGENT_LATENCY_MS ?? '2000';
if (!/^\d+$/.test(latencyText))
  fail(`demo: DEMO_AGENT_LATENCY_MS must be a whole number of milliseconds (got "${latencyText}")`);

const realAgent = ['AGENT_BASE_URL', 'AGENT_API_KEY', 'AGENT_ID'].filter((name) => process.env[name]);
if (realAgent.length > 0 && realAgent.length < 3)
  fail('demo: set all of AGENT_BASE_URL, AGENT_API_KEY and AGENT_ID to use a real agent, or none of them');

// Loaded once the arguments are known to be good: --help and a mistyped flag answer without loading the bot.
const [{ ConfigError }, { startDemo }] = await Promise.all([
  import('../src/config/index.js'),
  import('./demo.js'),
]);
let demo: RunningDemo;
try {
  demo = await startDemo({
    port,
    dataDir: args['data-dir'] ?? process.env.DEMO_DATA_DIR ?? './data/demo',
    agent:
      realAgent.length === 3
        ? {
            baseUrl: process.env.AGENT_BASE_URL ?? '',
            apiKey: process.env.AGENT_API_KEY ?? '',
            agentId: process.env.AGENT_ID ?? '',
          }
        : undefined,
    emulatorLatencyMs: Number(latencyText),
    botEnv: process.env,
    logLevel: process.env.LOG_LEVEL ?? 'warn',
    prettyLogs: process.stdout.isTTY === true,
  });
} catch (error) {
  if (error instanceof ConfigError) fail(`demo: configuration error: ${error.message}`);
  if ((error as { code?: string }).code === 'EADDRINUSE')
    fail(`demo: port ${port} is in use; pick another with --port or DEMO_PORT`);
  fail(`demo: could not start: ${error instanceof Error ? error.message : String(error)}`);
}

process.stdout.write(
  `Demo running (${demo.usingEmulator ? 'agent emulator' : 'real agent service'}). Open ${demo.url}\nCtrl-C stops it.\n`,
);

let stopping = false;
const shutdown = () => {
  // A second Ctrl-C does not wait for the clean stop.
  if (stopping) process.exit(130);
  stopping = true;
  process.stdout.write('Stopping…\n');
  demo.stop().then(
    () => process.exit(0),
    (error: unknown) => fail(`demo: error while stopping: ${String(error)}`),
  );
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
