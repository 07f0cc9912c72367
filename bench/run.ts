/**
 * `npm run bench`: the bridge's own cost against a bare Bolt relay, on loopback, with PostgreSQL.
 * Starts the agent emulator and the fake Slack here, the bot (or the baseline) in its own process, sends
 * signed events at a set rate and prints one table (and bench/results/latest.json). Stops by itself.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { AgentServiceEmulator } from '../test/fakes/agent-service.js';
import { FakeSlack } from '../test/fakes/slack.js';
import { freePort } from '../test/helpers/free-port.js';
import { createTestDatabase, type TestDatabase } from '../test/helpers/postgres.js';
import { appMentionEvent, nextTs } from '../test/helpers/slack-events.js';
import { deliver, percentile, sleep } from './load.js';

/** The bench process's own stalls (load, both fakes): they show up in every figure, bot and baseline alike. */
const harnessDelay = monitorEventLoopDelay({ resolution: 5 });
harnessDelay.enable();

const SECRET = 'bench-signing-secret';
const BOT_TOKEN = 'xoxb-bench-token';
const AGENT_ID = 'bench-agent';
const CHANNEL = 'C0BENCH';

type Target = 'bot' | 'baseline';

/** As in package.json's `start` script and the Dockerfile's CMD. */
const BOT_NODE_FLAGS: string[] = [];

interface Load {
  /** Messages to send (each a distinct Slack message). */
  messages: number;
  /** Messages per second; Infinity: all at once (a burst). */
  rate: number;
  /** Distinct threads, assigned round-robin; every new thread starts with a top-level mention. */
  threads: number;
  /** Share of messages delivered a second time as a Slack retry. */
  retryShare: number;
}

interface Scenario extends Load {
  name: string;
  agentLatencyMs: number;
}

/**
 * The warm-up before the scenarios, in a channel of its own: the steady mix (new threads, follow-ups,
 * retries), then new threads with answers slow enough to show the working indicator.
 */
const WARM_UP: { load: Load; agentLatencyMs: number }[] = [
  { load: { messages: 1_500, rate: 250, threads: 100, retryShare: 0.1 }, agentLatencyMs: 50 },
  { load: { messages: 1_000, rate: 500, threads: 1_000, retryShare: 0.1 }, agentLatencyMs: 1_200 },
];

const ALL_SCENARIOS: Scenario[] = [
  {
    name: 'steady 200/s, agent 200 ms',
    agentLatencyMs: 200,
    messages: 2_000,
    rate: 200,
    threads: 240,
    retryShare: 0.1,
  },
  // 500 new threads a second against a 2 s agent: about 1,000 threads in flight at once.
  {
    name: '1,000 threads in flight, agent 2 s',
    agentLatencyMs: 2_000,
    messages: 2_000,
    rate: 500,
    threads: 2_000,
    retryShare: 0.1,
  },
  {
    name: 'burst of 200 at once, agent 200 ms',
    agentLatencyMs: 200,
    messages: 200,
    rate: Number.POSITIVE_INFINITY,
    threads: 200,
    retryShare: 0,
  },
  // New threads only, so that with the warm-up and the scenarios before it the bot has seen 10,040
  // distinct threads when its peak RSS is read here (state lives in the store, caches are bounded).
  {
    name: '6,500 new threads at 500/s (10,040 in all), agent 200 ms',
    agentLatencyMs: 200,
    messages: 6_500,
    rate: 500,
    threads: 6_500,
    retryShare: 0,
  },
];

// Knobs for investigating: BENCH_SCENARIOS=0,2 runs a subset; BENCH_TARGETS=bot skips the baseline;
// BENCH_CPU_PROF=dir writes a V8 CPU profile of the measured process there (open it in Chrome DevTools).
const SCENARIOS = process.env.BENCH_SCENARIOS
  ? process.env.BENCH_SCENARIOS.split(',')
      .map((index) => ALL_SCENARIOS[Number(index)])
      .filter((s): s is Scenario => !!s)
  : ALL_SCENARIOS;
const TARGETS = (process.env.BENCH_TARGETS?.split(',') ?? ['bot', 'baseline']) as Target[];
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF;

interface Row {
  target: Target;
  scenario: string;
  offeredPerSec: number;
  handledPerSec: number;
  ackP50: number;
  ackP99: number;
  addedP50: number;
  addedP99: number;
  /** Added latency split at the agent: event → prompt reaches the agent, and answer leaves it → reply posted. */
  beforeAgentP50: number;
  beforeAgentP99: number;
  afterAgentP50: number;
  afterAgentP99: number;
  /** Reply time minus event time, worst message (the burst target is 2.5 s against a 2 s agent). */
  answeredMaxMs: number;
  delivered: number;
  /** Deliveries answered with no 2xx (or a broken connection); each was delivered again, as Slack does. */
  unacknowledged: number;
  lost: number;
  duplicated: number;
  /** Highest resident memory since the process started (VmHWM), so far. */
  peakRssMb: number;
  /** CPU seconds the process used in this scenario (from its start until the answers were in). */
  cpuSeconds: number;
  /** CPU seconds the rest of the machine spent in this scenario: this process (load, fake Slack, agent emulator) and PostgreSQL. */
  harnessCpuSeconds: number;
  postgresCpuSeconds: number;
}

async function runTarget(target: Target): Promise<Row[]> {
  const setupStarted = performance.now();
  const slack = await FakeSlack.start({ botToken: BOT_TOKEN });
  const agent = await AgentServiceEmulator.start({ agents: [AGENT_ID] });
  const database: TestDatabase | undefined = target === 'bot' ? await createTestDatabase() : undefined;
  const port = await freePort();
  const env = {
    PATH: process.env.PATH,
    SLACK_BOT_TOKEN: BOT_TOKEN,
    SLACK_SIGNING_SECRET: SECRET,
    SLACK_API_URL: slack.apiUrl,
    PORT: String(port),
    AGENT_BASE_URL: agent.baseUrl,
    AGENT_API_KEY: agent.apiKey,
    AGENT_ID,
    LOG_LEVEL: 'warn',
    SLOW_NOTICE_MS: '0',
    ...(database ? { DATABASE_URL: database.url } : {}),
  };
  const script = target === 'bot' ? 'dist/src/main.js' : 'dist/bench/baseline-relay.js';
  const flags = [
    // The bot runs with the flags `npm start` and the Docker image give it.
    ...(target === 'bot' ? BOT_NODE_FLAGS : []),
    ...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
    ...(CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF_DIR}`] : []),
  ];
  // The process's own output (the bot's JSON log at LOG_LEVEL=warn, the baseline's Bolt errors under
  // overload) goes to a file, for looking into failures, and keeps the table readable.
  mkdirSync('bench/results', { recursive: true });
  const log = openSync(`bench/results/${target}.log`, 'w');
  const child = spawn(process.execPath, [...flags, script], { env, stdio: ['ignore', log, log] });
  closeSync(log);
  // If the bench dies (an exception, process.exit), the process it measures must not live on: an orphaned
  // bot keeps polling PostgreSQL and takes CPU from every later run.
  const killChild = () => child.kill('SIGKILL');
  process.once('exit', killChild);
  const url = `http://127.0.0.1:${port}/slack/events`;
  await waitForPort(port, child);
  process.stderr.write(
    `  ${target}: listening after ${((performance.now() - setupStarted) / 1000).toFixed(1)} s\n`,
  );

  // Replies as Slack would show them: prompt token → times each reply was posted.
  const replies = new Map<string, number[]>();
  slack.onCall((call) => {
    if (call.method !== 'chat.postMessage') return;
    const token = /^echo\[[^\]]*\]: (q\d+)/.exec(String(call.args.text))?.[1];
    if (token) replies.set(token, [...(replies.get(token) ?? []), performance.now()]);
  });

  // When each prompt reached the agent and when its answer left: splits added latency into before/after.
  const promptAt = new Map<string, number>();
  const answerAt = new Map<string, number>();
  agent.onRequest(({ phase, request }) => {
    if (request.operation !== 'sendMessage') return;
    const token = /(q\d+)/.exec(request.prompt ?? '')?.[1];
    if (!token) return;
    if (phase === 'start' && !promptAt.has(token)) promptAt.set(token, performance.now());
    if (phase === 'end' && !answerAt.has(token)) answerAt.set(token, performance.now());
  });

  const rows: Row[] = [];
  // Warm-up, not measured: the scenarios' code paths until the JIT has compiled them, as in a bot that has
  // been running a while. A shorter warm-up measured the compiler instead: the first 10 s at 200/s cost
  // the bot 7.7 CPU s, the next 10 s 4.7, and the first run of 1,000 threads in flight 6.5 CPU s, the third 4.9.
  for (const { load, agentLatencyMs } of WARM_UP) {
    agent.setLatency(agentLatencyMs, 'sendMessage');
    await offer(url, load, 'C0WARMUP');
    await sleep(agentLatencyMs + 500);
  }
  for (const scenario of SCENARIOS) {
    agent.setLatency(scenario.agentLatencyMs, 'sendMessage');
    replies.clear();
    promptAt.clear();
    answerAt.clear();
    const harnessCpuBefore = process.cpuUsage();
    harnessDelay.reset();
    const targetCpuBefore = processFigures(child.pid ?? 0).cpuSeconds;
    const postgresCpuBefore = postgresCpuSeconds();
    const started = performance.now();
    const { sent, acks, handled, deliveries, unacknowledged } = await offer(url, scenario, CHANNEL);
    const offeredSeconds = (performance.now() - started) / 1000;
    // Wait for the answers (or give up: what is missing then is lost).
    const deadline = performance.now() + scenario.agentLatencyMs + 15_000;
    while (performance.now() < deadline && [...sent.keys()].some((token) => !replies.has(token)))
      await sleep(50);
    await sleep(300); // late duplicates

    const added: number[] = [];
    const answered: number[] = [];
    const beforeAgent: number[] = [];
    const afterAgent: number[] = [];
    let lost = 0;
    let duplicated = 0;
    for (const [token, at] of sent) {
      const posts = replies.get(token);
      if (!posts) {
        lost++;
        continue;
      }
      duplicated += posts.length - 1;
      const first = posts[0] ?? at;
      answered.push(first - at);
      const reached = promptAt.get(token);
      const left = answerAt.get(token);
      if (reached !== undefined) beforeAgent.push(reached - at);
      if (left !== undefined) afterAgent.push(first - left);
      added.push(first - at - scenario.agentLatencyMs);
    }
    const after = processFigures(child.pid ?? 0);
    rows.push({
      target,
      scenario: scenario.name,
      offeredPerSec: deliveries / offeredSeconds,
      handledPerSec: handled / offeredSeconds,
      ackP50: percentile(acks, 50),
      ackP99: percentile(acks, 99),
      addedP50: percentile(added, 50),
      addedP99: percentile(added, 99),
      beforeAgentP50: percentile(beforeAgent, 50),
      beforeAgentP99: percentile(beforeAgent, 99),
      afterAgentP50: percentile(afterAgent, 50),
      afterAgentP99: percentile(afterAgent, 99),
      answeredMaxMs: Math.max(...answered),
      delivered: sent.size - lost,
      unacknowledged,
      lost,
      duplicated,
      peakRssMb: after.peakRssMb,
      cpuSeconds: after.cpuSeconds - targetCpuBefore,
      harnessCpuSeconds: cpuSeconds(process.cpuUsage(harnessCpuBefore)),
      postgresCpuSeconds: postgresCpuSeconds() - postgresCpuBefore,
    });
    const row = rows[rows.length - 1];
    process.stderr.write(
      `  ${target}: ${scenario.name} done in ${((performance.now() - started) / 1000).toFixed(1)} s` +
        ` (CPU in it: harness ${row?.harnessCpuSeconds.toFixed(1)} s, PostgreSQL ${row?.postgresCpuSeconds.toFixed(1)} s;` +
        ` harness event-loop delay p99 ${(harnessDelay.percentile(99) / 1e6).toFixed(1)} ms, max ${(harnessDelay.max / 1e6).toFixed(1)} ms)\n`,
    );
    if (row) {
      process.stderr.write(
        `    added before the agent p50 ${row.beforeAgentP50.toFixed(1)} / p99 ${row.beforeAgentP99.toFixed(1)} ms,` +
          ` after it p50 ${row.afterAgentP50.toFixed(1)} / p99 ${row.afterAgentP99.toFixed(1)} ms\n`,
      );
    }
    if (target === 'bot') process.stderr.write(`    ${await runtimeDiagnostics(port)}\n`);
  }

  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  process.removeListener('exit', killChild);
  await Promise.all([slack.stop(), agent.stop()]);
  await database?.drop();
  return rows;
}

interface Offered {
  /** Prompt token → when its message was first sent. */
  sent: Map<string, number>;
  acks: number[];
  handled: number;
  deliveries: number;
  unacknowledged: number;
}

let tokenCounter = 0;

/**
 * Sends a load's messages at its rate, each a mention with a unique token (a new thread's first message
 * is top level, the rest reply in it), delivers the retry share again as Slack retries, and redelivers
 * what was not acknowledged. Resolves when every delivery has been answered.
 */
async function offer(url: string, load: Load, channel: string): Promise<Offered> {
  const result: Offered = { sent: new Map(), acks: [], handled: 0, deliveries: 0, unacknowledged: 0 };
  const roots: string[] = [];
  const inflight: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < load.messages; i++) {
    if (Number.isFinite(load.rate)) {
      const due = started + (i * 1000) / load.rate;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
    }
    const thread = i % load.threads;
    const token = `q${tokenCounter++}`;
    const ts = nextTs();
    const root = roots[thread];
    if (root === undefined) roots[thread] = ts;
    const body = appMentionEvent({
      channel,
      user: `U${String(i % 5_000).padStart(7, '0')}`,
      text: `<@U0BOT> ${token}`,
      ts,
      threadTs: root,
    });
    result.sent.set(token, performance.now());
    const send = (retryNum?: number): Promise<void> => {
      result.deliveries++;
      return deliver(url, SECRET, body, retryNum).then(({ ackMs, status }) => {
        result.acks.push(ackMs);
        if (status >= 200 && status < 300) {
          result.handled++;
          return;
        }
        // Not acknowledged: Slack delivers it again (at once, then after a minute: here after a moment).
        result.unacknowledged++;
        const attempt = (retryNum ?? 0) + 1;
        if (attempt <= 3) return sleep(300).then(() => send(attempt));
      });
    };
    inflight.push(send());
    if (Math.random() < load.retryShare) inflight.push(sleep(300).then(() => send(1)));
  }
  await Promise.all(inflight);
  return result;
}

/**
 * What the bot's own /metrics say about pauses since start: event-loop delay and garbage collection
 * (prom-client's default metrics), to tell CPU saturation from stalls when latency tails grow.
 */
async function runtimeDiagnostics(port: number): Promise<string> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? Number.NaN);
    const ms = (seconds: number) => `${(seconds * 1000).toFixed(1)} ms`;
    const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
    const gc = (kind: string) => {
      const sum = value(new RegExp(`nodejs_gc_duration_seconds_sum\\{kind="${kind}"\\} ([0-9.e+-]+)`));
      const count = value(new RegExp(`nodejs_gc_duration_seconds_count\\{kind="${kind}"\\} ([0-9.e+-]+)`));
      return `${kind} ${count} / ${ms(sum)}`;
    };
    return [
      `event-loop delay p50 ${ms(value(/^nodejs_eventloop_lag_p50_seconds (\S+)$/m))}`,
      `p99 ${ms(value(/^nodejs_eventloop_lag_p99_seconds (\S+)$/m))}`,
      `max ${ms(value(/^nodejs_eventloop_lag_max_seconds (\S+)$/m))}`,
      `GC since start: ${gc('minor')}, ${gc('major')}, ${gc('incremental')}`,
      `heap used ${mb(value(/^nodejs_heap_size_used_bytes (\S+)$/m))} of ${mb(value(/^nodejs_heap_size_total_bytes (\S+)$/m))}`,
      `external ${mb(value(/^nodejs_external_memory_bytes (\S+)$/m))}`,
      `RSS now ${mb(value(/^process_resident_memory_bytes (\S+)$/m))}`,
    ].join(', ');
  } catch (error) {
    return `no runtime diagnostics (${String(error)})`;
  }
}

const cpuSeconds = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1e6;

/** CPU time used so far by every PostgreSQL process on the machine (server and backends), from /proc. */
function postgresCpuSeconds(): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process ended meanwhile.
    }
  }
  return ticks / 100;
}

/**
 * How fast this machine runs plain JavaScript now: a fixed loop, in ms. Figures from machines (or moments)
 * with different calibrations are not comparable; the same machine varied by 2x between sessions.
 */
function calibrationMs(): number {
  const start = performance.now();
  let sum = 0;
  for (let i = 0; i < 100_000_000; i++) sum += i % 7;
  if (sum < 0) process.stderr.write('');
  return performance.now() - start;
}

/** Peak resident memory (VmHWM) and CPU time so far, from /proc. */
function processFigures(pid: number): { peakRssMb: number; cpuSeconds: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const peakKb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime
    return { peakRssMb: peakKb / 1024, cpuSeconds: ticks / 100 };
  } catch {
    return { peakRssMb: Number.NaN, cpuSeconds: Number.NaN };
  }
}

async function waitForPort(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`process exited with ${child.exitCode} before listening (see bench/results/*.log)`);
    const up = await fetch(`http://127.0.0.1:${port}/`).then(
      () => true,
      () => false,
    );
    if (up) return;
    await sleep(100);
  }
  throw new Error(`nothing listening on ${port} after 30 s`);
}

function printTable(rows: Row[]): void {
  const fmt = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
  const header = [
    'scenario',
    'target',
    'offered/s',
    'handled/s',
    'ack p50 ms',
    'ack p99 ms',
    'added p50 ms',
    'added p99 ms',
    'answered max ms',
    'delivered',
    'unacked',
    'lost',
    'dup',
    'peak RSS MB',
    'CPU s',
  ];
  const lines = [header];
  for (const scenario of SCENARIOS) {
    const bot = rows.find((row) => row.target === 'bot' && row.scenario === scenario.name);
    const base = rows.find((row) => row.target === 'baseline' && row.scenario === scenario.name);
    for (const row of [bot, base]) {
      if (!row) continue;
      lines.push([
        scenario.name,
        row.target,
        fmt(row.offeredPerSec, 0),
        fmt(row.handledPerSec, 0),
        fmt(row.ackP50),
        fmt(row.ackP99),
        fmt(row.addedP50),
        fmt(row.addedP99),
        fmt(row.answeredMaxMs, 0),
        String(row.delivered),
        String(row.unacknowledged),
        String(row.lost),
        String(row.duplicated),
        fmt(row.peakRssMb, 0),
        fmt(row.cpuSeconds),
      ]);
    }
    if (bot && base) {
      lines.push([
        scenario.name,
        'bot/baseline',
        '',
        '',
        fmt(bot.ackP50 / base.ackP50, 2),
        fmt(bot.ackP99 / base.ackP99, 2),
        fmt(bot.addedP50 / base.addedP50, 2),
        fmt(bot.addedP99 / base.addedP99, 2),
        fmt(bot.answeredMaxMs / base.answeredMaxMs, 2),
        '',
        '',
        '',
        '',
        fmt(bot.peakRssMb / base.peakRssMb, 2),
        fmt(bot.cpuSeconds / base.cpuSeconds, 2),
      ]);
    }
  }
  const widths = header.map((_, column) => Math.max(...lines.map((line) => (line[column] ?? '').length)));
  for (const line of lines) {
    process.stdout.write(`${line.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ')}\n`);
  }
}

// Interrupted (Ctrl-C, a CI timeout): exit through 'exit', which stops the process being measured.
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
  ['SIGHUP', 129],
] as const) {
  process.once(signal, () => process.exit(code));
}

const calibration = calibrationMs();
process.stderr.write(
  `machine: a fixed JavaScript loop took ${calibration.toFixed(0)} ms (lower is faster)\n`,
);
const started = Date.now();
const rows: Row[] = [];
for (const target of TARGETS) rows.push(...(await runTarget(target)));
printTable(rows);
mkdirSync('bench/results', { recursive: true });
writeFileSync(
  'bench/results/latest.json',
  `${JSON.stringify({ at: new Date().toISOString(), node: process.version, calibrationMs: calibration, rows }, null, 2)}\n`,
);
process.stdout.write(
  `\nFigures written to bench/results/latest.json (${((Date.now() - started) / 1000).toFixed(0)} s; ` +
    `calibration loop ${calibration.toFixed(0)} ms).\n`,
);
process.exit(0);
