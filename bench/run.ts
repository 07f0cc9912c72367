/**
 * `npm run bench`: the bot under the loads its users meet, beside the minimal durable relay
 * (bench/durable-relay.ts), on loopback with PostgreSQL. Starts the fake Slack and the agent emulator here and
 * each measured process in its own process, warms both up, runs each scenario on the bot and then on the
 * relay, and prints one table, a PASS/FAIL line per target (bench/targets.ts) and bench/results/latest.json.
 * Stops by itself, and stops what it started however it ends.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pg from 'pg';
import { AgentServiceEmulator } from '../test/fakes/agent-service.js';
import { FakeSlack } from '../test/fakes/slack.js';
import { loadContracts } from '../test/fakes/slack-contracts.js';
import { type RateLimit, unthrottled } from '../test/fakes/slack-rate-limits.js';
import { freePort } from '../test/helpers/free-port.js';
import { createTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../test/helpers/postgres.js';
import { appMentionEvent, nextTs } from '../test/helpers/slack-events.js';
import { offer, type PreparedEvent, percentile, prepareEvent, sleep } from './load.js';
import { machineBusySeconds, postgresCpuSeconds, postgresTicks, processFigures } from './proc.js';
import { judge, type Measure, type ScenarioKey, TARGETS, type Verdict } from './targets.js';

/** The bench process's own stalls (load, both fakes): they show in every figure, bot and relay alike. */
const harnessDelay = monitorEventLoopDelay({ resolution: 5 });
harnessDelay.enable();

const SECRET = 'bench-signing-secret';
const BOT_TOKEN = 'xoxb-bench-token';
const AGENT_ID = 'bench-agent';

type Kind = 'bot' | 'relay';

/**
 * The bench loads one workspace far beyond Slack's rate limits on purpose (12 times its event limit, 50
 * channels at 2 posts a second each): it measures the bot, not Slack's throttling, so the fake lets every
 * method the bot calls through at that load.
 */
const BENCH_RATE_LIMITS: Record<string, RateLimit> = unthrottled(Object.keys(loadContracts().methods));

// Knobs for checking and investigating: BENCH_SCALE=0.1 divides every count and duration by 10 (rates stay);
// BENCH_SCENARIOS=steady,burst runs a subset; BENCH_TARGETS=bot skips the relay; BENCH_CPU_PROF=dir writes a
// V8 CPU profile of each measured process there; BENCH_NODE_FLAGS adds node flags to both.
const SCALE = Number(process.env.BENCH_SCALE ?? '1');
if (!(SCALE > 0)) throw new Error(`BENCH_SCALE must be a positive number (got ${process.env.BENCH_SCALE})`);
const scaled = (n: number) => Math.max(1, Math.round(n * SCALE));

/**
 * Authors cycle through this many users, as in a workspace of thousands of people. The bot keeps its default
 * USER_RATE_LIMIT (20 messages per user per minute), which must never be what is measured: at the highest rate
 * here (the warm-up's 300/s) a user comes back every 17 s, four messages a minute at most.
 */
const USERS = 5_000;
/** Threads are spread over channels as in a workspace (neither the fake Slack nor the bot paces per channel). */
const CHANNELS = 50;

interface Load {
  messages: number;
  /** Events a second; Infinity: all at once. */
  rate: number;
  /** New threads, messages assigned round-robin; each thread's first message is a top-level mention. */
  threads: number;
  /** Every n-th event is delivered a second time as a Slack retry (0: none). */
  retryEvery: number;
  agentLatencyMs: number;
}

interface Scenario extends Load {
  key: ScenarioKey;
  name: string;
  /**
   * Its threads are opened before it is measured (each first message answered, at its rate): every measured
   * event then continues a conversation. A thread's first message also creates an agent session, which the
   * relay never does; new threads are measured by the scenarios made of them.
   */
  openedFirst?: boolean;
}

/**
 * Unmeasured, per process, in channels of their own: the scenarios' code paths until the JIT has compiled them,
 * as in a process that has run a while (else the first scenario measures V8's compiler). The second load's
 * answers take longer than WORKING_INDICATOR_DELAY_MS, so the working indicator's code runs too.
 */
const WARM_UP: Load[] = [
  { messages: scaled(1_000), rate: 200, threads: scaled(100), retryEvery: 20, agentLatencyMs: 50 },
  { messages: scaled(300), rate: 300, threads: scaled(300), retryEvery: 0, agentLatencyMs: 1_200 },
];

const steady = { messages: scaled(6_000), rate: 100, threads: scaled(500) };
const burst = scaled(500);
const newThreads = scaled(100);
const manyThreads = { threads: scaled(10_000), rate: 500 };

const ALL_SCENARIOS: Scenario[] = [
  // 12 times Slack's per-workspace limit (30,000 events an hour), each thread answered every 5 s; a 5% share
  // of the events is delivered twice, as Slack does when it thinks an acknowledgement was lost.
  {
    key: 'steady',
    name: `${steady.rate}/s for ${steady.messages / steady.rate} s, ${steady.threads} threads under way, agent 200 ms`,
    ...steady,
    retryEvery: 20,
    agentLatencyMs: 200,
    openedFirst: true,
  },
  {
    key: 'burst',
    name: `burst: ${burst} new threads at once, agent 200 ms`,
    messages: burst,
    rate: Number.POSITIVE_INFINITY,
    threads: burst,
    retryEvery: 0,
    agentLatencyMs: 200,
  },
  {
    key: 'newThreads',
    name: `${newThreads} new threads at once, agent 2 s`,
    messages: newThreads,
    rate: Number.POSITIVE_INFINITY,
    threads: newThreads,
    retryEvery: 0,
    agentLatencyMs: 2_000,
  },
  // 10,000 new threads at 500 a second (60 times Slack's per-workspace event limit: many workspaces on one
  // replica), every 20th event delivered twice; then peak RSS, and RSS once drained.
  {
    key: 'manyThreads',
    name: `${manyThreads.threads} new threads at ${manyThreads.rate}/s, agent 200 ms`,
    messages: manyThreads.threads,
    threads: manyThreads.threads,
    rate: manyThreads.rate,
    retryEvery: 20,
    agentLatencyMs: 200,
  },
];

const SCENARIOS = process.env.BENCH_SCENARIOS
  ? ALL_SCENARIOS.filter((s) => process.env.BENCH_SCENARIOS?.split(',').includes(s.key))
  : ALL_SCENARIOS;
const KINDS = (process.env.BENCH_TARGETS?.split(',') ?? ['bot', 'relay']).filter(
  (kind): kind is Kind => kind === 'bot' || kind === 'relay',
);
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF;

/**
 * A message is lost when it has no reply once the process has posted none for this long (plus the agent's
 * latency). Answers still coming, however late, are waited for and count in the latency: a process that
 * falls behind is slow, not lossy.
 */
const LOST_AFTER_QUIET_MS = 15_000;
/** However long a process keeps answering, a scenario's answers are waited for at most this long. */
const ANSWERS_WAIT_MAX_MS = 300_000;
/** Once the bot has drained after the last scenario, RSS is read this many times, a second apart. */
const RSS_SAMPLES = Math.max(3, scaled(10));

interface Row {
  target: Kind;
  scenario: ScenarioKey;
  name: string;
  events: number;
  deliveries: number;
  /** Deliveries answered with no 2xx (or a broken connection); each was delivered again, as Slack does. */
  unacknowledged: number;
  /** Over every delivery, retries and redeliveries included. */
  ackP50: number;
  ackP99: number;
  /** The slowest first delivery's acknowledgement; Infinity if one got no 2xx. */
  slowestAckMs: number;
  /** Reply posted minus event sent minus the agent's latency. */
  addedP50: number;
  addedP99: number;
  /** Added latency split at the agent: event → prompt reaches the agent; answer leaves it → reply posted. */
  beforeAgentP99: number;
  afterAgentP99: number;
  /** Reply posted minus event sent, slowest message; Infinity if one was lost. */
  slowestAnswerMs: number;
  lost: number;
  /** Of the lost, those one delivery of which was acknowledged: the rest Slack would have given up on. */
  lostAcknowledged: number;
  /** Replies beyond the first for one message. */
  duplicated: number;
  /** Highest resident memory since the process started (VmHWM), at the end of the scenario. */
  peakRssMb: number;
  /** Resident memory at the end of the scenario (VmRSS). */
  rssMb: number;
  /** Distinct threads the process had been sent by the end of the scenario, warm-up included. */
  threadsSeen: number;
  /** After the last scenario, once drained: RSS read a second apart (empty elsewhere). */
  rssSamplesMb: number[];
  /** Last sample minus first (NaN without samples). */
  rssGrowthMb: number;
  /**
   * CPU seconds in the scenario, from its first event until its answers were in: the measured process, the
   * bench process (load, fake Slack, agent emulator), PostgreSQL, and everything else on the machine.
   */
  cpuSeconds: number;
  harnessCpuSeconds: number;
  postgresCpuSeconds: number;
  otherCpuSeconds: number;
  seconds: number;
  /**
   * Work per event in the scenario: the database's transactions and rows written (from pg_stat_database,
   * which lags a second or more: rough in short scenarios), and calls to Slack and the agent by method.
   */
  perEvent: {
    pgTransactions: number;
    pgRowsWritten: number;
    /** The bot's own count of its store statements (its /metrics); the relay makes one INSERT per delivery. */
    storeStatements: number;
    slack: Record<string, number>;
    agent: Record<string, number>;
  };
}

let tokenCounter = 0;
let userCounter = 0;

/**
 * Signed app_mention events with a unique token each, built before the load starts. `roots`: the threads' root
 * messages, filled in as each thread's first message is made (given: continued).
 */
function buildEvents(load: Load, channelPrefix: string, roots: string[]): PreparedEvent[] {
  const events: PreparedEvent[] = [];
  for (let i = 0; i < load.messages; i++) {
    const thread = i % load.threads;
    const token = `q${tokenCounter++}`;
    const ts = nextTs();
    const root = roots[thread];
    if (root === undefined) roots[thread] = ts;
    const body = appMentionEvent({
      channel: `${channelPrefix}${String(thread % CHANNELS).padStart(3, '0')}`,
      user: `U${String(userCounter++ % USERS).padStart(7, '0')}`,
      text: `<@U0BOT> ${token}`,
      ts,
      threadTs: root,
    });
    events.push(prepareEvent(SECRET, token, body));
  }
  return events;
}

/** A measured process (the bot or the relay) with its own fake Slack, agent emulator and database. */
class Subject {
  /** Token → when each reply to it was posted. */
  readonly replies = new Map<string, number[]>();
  /** Token → when its prompt reached the agent, and when the answer left it. */
  readonly promptAt = new Map<string, number>();
  readonly answerAt = new Map<string, number>();
  /** Calls the process made in the current load, by method or operation. */
  readonly slackCalls = new Map<string, number>();
  readonly agentCalls = new Map<string, number>();
  threadsSeen = 0;

  private constructor(
    readonly kind: Kind,
    readonly slack: FakeSlack,
    readonly agent: AgentServiceEmulator,
    private readonly database: TestDatabase,
    readonly child: ChildProcess,
    readonly url: string,
    /** The bot's /metrics and /readyz. */
    readonly adminPort: number,
    private readonly killChild: () => void,
  ) {
    slack.onCall((call, response) => {
      this.slackCalls.set(call.method, (this.slackCalls.get(call.method) ?? 0) + 1);
      // A reply is posted once Slack took it; a refused post (or a throttled one, tried again) is none.
      const taken = (response.body as { ok?: unknown } | undefined)?.ok === true;
      if (call.method !== 'chat.postMessage' || !taken) return;
      const token = /^echo\[[^\]]*\]: (q\d+)/.exec(String(call.args.text))?.[1];
      if (token) this.replies.set(token, [...(this.replies.get(token) ?? []), performance.now()]);
    });
    agent.onRequest(({ phase, request }) => {
      if (phase === 'start')
        this.agentCalls.set(request.operation, (this.agentCalls.get(request.operation) ?? 0) + 1);
      if (request.operation !== 'sendMessage') return;
      const token = /^(q\d+)$/.exec(request.prompt ?? '')?.[1];
      if (!token) return;
      const at = phase === 'start' ? this.promptAt : this.answerAt;
      if (!at.has(token)) at.set(token, performance.now());
    });
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  get databaseName(): string {
    return new URL(this.database.url).pathname.slice(1);
  }

  static async start(kind: Kind): Promise<Subject> {
    const started = performance.now();
    const slack = await FakeSlack.start({ botToken: BOT_TOKEN, rateLimits: BENCH_RATE_LIMITS });
    // A refused post is no reply (see the listener below); it must not throw away the run's figures.
    slack.allowUnknownTargets();
    const agent = await AgentServiceEmulator.start({ agents: [AGENT_ID] });
    const database = await createTestDatabase();
    const port = await freePort();
    let adminPort = await freePort();
    while (adminPort === port) adminPort = await freePort();
    const env = {
      PATH: process.env.PATH,
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SECRET,
      SLACK_API_URL: slack.apiUrl,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      AGENT_BASE_URL: agent.baseUrl,
      AGENT_API_KEY: agent.apiKey,
      AGENT_ID,
      DATABASE_URL: database.url,
      LOG_LEVEL: 'warn',
      SLOW_NOTICE_MS: '0',
    };
    // The bot as `npm start` runs it (no V8 flags); WORKER_CONCURRENCY and USER_RATE_LIMIT at their defaults.
    const script = kind === 'bot' ? 'dist/src/main.js' : 'dist/bench/durable-relay.js';
    const flags = [
      '--enable-source-maps',
      ...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
      ...(CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF_DIR}`] : []),
    ];
    // Its output (the bot's JSON log at warn, the relay's Bolt errors) goes to a file, to look into failures.
    mkdirSync('bench/results', { recursive: true });
    const log = openSync(`bench/results/${kind}.log`, 'w');
    const child = spawn(process.execPath, [...flags, script], { env, stdio: ['ignore', log, log] });
    closeSync(log);
    // If the bench dies (an exception, process.exit), the process it measures must not live on: an orphaned
    // bot keeps polling PostgreSQL and takes CPU from every later run.
    const killChild = () => child.kill('SIGKILL');
    process.once('exit', killChild);
    const subject = new Subject(
      kind,
      slack,
      agent,
      database,
      child,
      `http://127.0.0.1:${port}/slack/events`,
      adminPort,
      killChild,
    );
    live.add(subject);
    await subject.waitUntilReady(port);
    progress(`${kind}: ready after ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return subject;
  }

  /** The bot: until /readyz answers 200. The relay listens only once ready: until its port takes a connection. */
  private async waitUntilReady(port: number): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null)
        throw new Error(
          `${this.kind} exited with ${this.child.exitCode} (see bench/results/${this.kind}.log)`,
        );
      const ready =
        this.kind === 'bot'
          ? await fetch(`http://127.0.0.1:${this.adminPort}/readyz`).then(
              (response) => response.ok,
              () => false,
            )
          : await accepts(port);
      if (ready) return;
      await sleep(100);
    }
    throw new Error(`${this.kind} not ready after 30 s (see bench/results/${this.kind}.log)`);
  }

  /** Sends a load and waits for its answers while they come (what is missing once they stop is lost). */
  async run(load: Load, channelPrefix: string, roots: string[] = []) {
    this.agent.setLatency(load.agentLatencyMs, 'sendMessage');
    this.replies.clear();
    this.promptAt.clear();
    this.answerAt.clear();
    this.slackCalls.clear();
    this.agentCalls.clear();
    // The fake's own record of every call would only grow: the listeners above keep what is needed.
    this.slack.clearCalls();
    const opened = roots.length;
    const events = buildEvents(load, channelPrefix, roots);
    this.threadsSeen += roots.length - opened;
    // Each message is put in the fake Slack as its event goes out, as Slack has it before it delivers the event
    // (the bot's calls about the channel and the message find them), and not before it was written.
    const offered = await offer(this.url, events, load.rate, load.retryEvery, (event) =>
      this.slack.ingestEvent(event.body),
    );
    const loadEnded = performance.now();
    while (events.some(({ token }) => !this.replies.has(token))) {
      const now = performance.now();
      // Only this load's replies are its progress: a late reply to an earlier load is not.
      let lastReplyAt = loadEnded;
      for (const { token } of events)
        for (const at of this.replies.get(token) ?? []) lastReplyAt = Math.max(lastReplyAt, at);
      const quietMs = now - lastReplyAt;
      if (quietMs > load.agentLatencyMs + LOST_AFTER_QUIET_MS || now - loadEnded > ANSWERS_WAIT_MAX_MS) break;
      await sleep(50);
    }
    await sleep(300); // late duplicates
    return offered;
  }

  /**
   * The bot's /metrics ('' for the relay). Reading them also restarts the bot's event-loop delay figures, so a
   * read before and one after a scenario give the scenario's.
   */
  async metrics(): Promise<string> {
    if (this.kind !== 'bot') return '';
    return fetch(`http://127.0.0.1:${this.adminPort}/metrics`).then(
      (response) => response.text(),
      () => '',
    );
  }

  /** The bot: until its /metrics say no job is in flight or open. The relay keeps nothing once it has answered. */
  async drained(): Promise<void> {
    if (this.kind !== 'bot') return;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const text = await fetch(`http://127.0.0.1:${this.adminPort}/metrics`).then(
        (response) => response.text(),
        () => '',
      );
      const open = [
        /^jobs_in_flight (\S+)$/m,
        /^inbox_open_jobs\{state="pending"\} (\S+)$/m,
        /^inbox_open_jobs\{state="running"\} (\S+)$/m,
      ]
        .map((pattern) => Number(pattern.exec(text)?.[1] ?? Number.NaN))
        .reduce((sum, value) => sum + value, 0);
      if (open === 0) return;
      await sleep(500);
    }
    progress(`${this.kind}: still busy 30 s after the last answer`);
  }

  async stop(): Promise<void> {
    live.delete(this);
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    process.removeListener('exit', this.killChild);
    await Promise.all([this.slack.stop(), this.agent.stop()]);
    await this.dropDatabase();
  }

  /** Interrupted: no waiting for a graceful stop. */
  abort(): Promise<void> {
    this.child.kill('SIGKILL');
    return this.dropDatabase();
  }

  private dropDatabase(): Promise<void> {
    this.dropped ??= this.database.drop();
    return this.dropped;
  }

  private dropped: Promise<void> | undefined;
}

/** Measured processes started and not yet stopped. */
const live = new Set<Subject>();

async function measure(subject: Subject, scenario: Scenario): Promise<Row> {
  const roots: string[] = [];
  if (scenario.openedFirst) {
    await subject.run({ ...scenario, messages: scenario.threads, retryEvery: 0 }, 'C', roots);
    await subject.drained();
    await sleep(1_000); // trailing work (working indicators) out of the way
  }
  const workBefore = await databaseWork(subject.databaseName);
  const metricsBefore = await subject.metrics();
  const before = {
    target: processFigures(subject.pid).cpuSeconds,
    harness: process.cpuUsage(),
    postgres: postgresTicks(subject.databaseName),
    machine: machineBusySeconds(),
  };
  harnessDelay.reset();
  const started = performance.now();
  const { sentAt, acks, firstAck, deliveries, unacknowledged, acknowledged } = await subject.run(
    scenario,
    'C',
    roots,
  );
  const seconds = (performance.now() - started) / 1000;

  const added: number[] = [];
  const answered: number[] = [];
  const beforeAgent: number[] = [];
  const afterAgent: number[] = [];
  let lost = 0;
  let lostAcknowledged = 0;
  let duplicated = 0;
  for (const [token, at] of sentAt) {
    const first = subject.replies.get(token)?.[0];
    if (first === undefined) {
      lost++;
      if (acknowledged.has(token)) lostAcknowledged++;
      continue;
    }
    duplicated += (subject.replies.get(token)?.length ?? 1) - 1;
    answered.push(first - at);
    added.push(first - at - scenario.agentLatencyMs);
    const reached = subject.promptAt.get(token);
    const left = subject.answerAt.get(token);
    if (reached !== undefined) beforeAgent.push(reached - at);
    if (left !== undefined) afterAgent.push(first - left);
  }
  const after = processFigures(subject.pid);
  const cpuSeconds = after.cpuSeconds - before.target;
  const harnessCpuSeconds = cpuOf(process.cpuUsage(before.harness));
  const postgres = postgresCpuSeconds(before.postgres, postgresTicks(subject.databaseName));
  const otherCpuSeconds = machineBusySeconds() - before.machine - cpuSeconds - harnessCpuSeconds - postgres;
  const workAfter = await databaseWork(subject.databaseName);
  const metricsAfter = await subject.metrics();
  const perEvent = (count: number) => count / sentAt.size;
  const row: Row = {
    target: subject.kind,
    scenario: scenario.key,
    name: scenario.name,
    events: sentAt.size,
    deliveries,
    unacknowledged,
    ackP50: percentile(acks, 50),
    ackP99: percentile(acks, 99),
    slowestAckMs: Math.max(...firstAck.values()),
    addedP50: percentile(added, 50),
    addedP99: percentile(added, 99),
    beforeAgentP99: percentile(beforeAgent, 99),
    afterAgentP99: percentile(afterAgent, 99),
    slowestAnswerMs: lost > 0 ? Number.POSITIVE_INFINITY : Math.max(...answered),
    lost,
    lostAcknowledged,
    duplicated,
    peakRssMb: after.peakRssMb,
    rssMb: after.rssMb,
    threadsSeen: subject.threadsSeen,
    rssSamplesMb: [],
    rssGrowthMb: Number.NaN,
    cpuSeconds,
    harnessCpuSeconds,
    postgresCpuSeconds: postgres,
    otherCpuSeconds,
    seconds,
    perEvent: {
      pgTransactions: perEvent(workAfter.transactions - workBefore.transactions),
      pgRowsWritten: perEvent(workAfter.rowsWritten - workBefore.rowsWritten),
      storeStatements: perEvent(
        sumOf(metricsAfter, STORE_STATEMENTS) - sumOf(metricsBefore, STORE_STATEMENTS),
      ),
      slack: Object.fromEntries([...subject.slackCalls].map(([method, n]) => [method, perEvent(n)])),
      agent: Object.fromEntries([...subject.agentCalls].map(([operation, n]) => [operation, perEvent(n)])),
    },
  };
  progress(
    `${subject.kind}: ${scenario.name}: ${seconds.toFixed(1)} s; CPU ${row.cpuSeconds.toFixed(1)} s, bench process ` +
      `${harnessCpuSeconds.toFixed(1)} s, PostgreSQL ${postgres.toFixed(1)} s, rest of the machine ` +
      `${row.otherCpuSeconds.toFixed(1)} s; bench event-loop delay p99 ${ms(harnessDelay.percentile(99) / 1e6)}, ` +
      `max ${ms(harnessDelay.max / 1e6)}; added p99 before the agent ${ms(row.beforeAgentP99)}, after it ` +
      `${ms(row.afterAgentP99)}`,
  );
  const calls = (counts: Record<string, number>) =>
    Object.entries(counts)
      .map(([name, n]) => `${name} ${n.toFixed(2)}`)
      .join(', ');
  progress(
    `  per event: ${fmt(row.perEvent.storeStatements)} store statements; PostgreSQL (about) ` +
      `${row.perEvent.pgTransactions.toFixed(1)} transactions, ` +
      `${row.perEvent.pgRowsWritten.toFixed(1)} rows written; Slack ${calls(row.perEvent.slack)}; ` +
      `agent ${calls(row.perEvent.agent)}`,
  );
  if (subject.kind === 'bot') progress(`  ${runtimeDiagnostics(metricsBefore, metricsAfter)}`);
  return row;
}

let statsClient: pg.Client | undefined;

/** What the cluster has counted of a database's work so far. */
async function databaseWork(database: string): Promise<{ transactions: number; rowsWritten: number }> {
  if (!statsClient) {
    statsClient = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await statsClient.connect();
  }
  const { rows } = await statsClient.query<{ transactions: string; rows_written: string }>(
    `SELECT xact_commit + xact_rollback AS transactions, tup_inserted + tup_updated + tup_deleted AS rows_written
       FROM pg_stat_database WHERE datname = $1`,
    [database],
  );
  return { transactions: Number(rows[0]?.transactions), rowsWritten: Number(rows[0]?.rows_written) };
}

/** Once the process has drained, RSS a second apart: flat, or still growing with no load. */
async function rssOnceDrained(subject: Subject, row: Row): Promise<void> {
  await subject.drained();
  await sleep(1_000);
  for (let i = 0; i < RSS_SAMPLES; i++) {
    if (i > 0) await sleep(1_000);
    row.rssSamplesMb.push(processFigures(subject.pid).rssMb);
  }
  row.rssGrowthMb = (row.rssSamplesMb.at(-1) ?? Number.NaN) - (row.rssSamplesMb[0] ?? Number.NaN);
}

const STORE_STATEMENTS = /^store_query_duration_seconds_count\{[^}]*\} (\S+)$/gm;

/** The sum of a metric's series in a /metrics text (NaN when there is no text). */
function sumOf(text: string, series: RegExp): number {
  if (text === '') return Number.NaN;
  return [...text.matchAll(series)].reduce((sum, match) => sum + Number(match[1]), 0);
}

/** What the bot's own /metrics say about the scenario's pauses, GC and memory: saturation or stalls. */
function runtimeDiagnostics(before: string, after: string): string {
  if (after === '') return 'no runtime diagnostics (/metrics unanswered)';
  const value = (pattern: RegExp) => Number(pattern.exec(after)?.[1] ?? Number.NaN);
  const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
  const gc = (kind: string) => {
    const delta = (field: string) => {
      const series = new RegExp(`^nodejs_gc_duration_seconds_${field}\\{kind="${kind}"\\} (\\S+)$`, 'gm');
      return sumOf(after, series) - sumOf(before, series);
    };
    return `${kind} ${delta('count')} / ${ms(delta('sum') * 1000)}`;
  };
  return [
    `bot event-loop delay p99 ${ms(value(/^nodejs_eventloop_lag_p99_seconds (\S+)$/m) * 1000)}`,
    `max ${ms(value(/^nodejs_eventloop_lag_max_seconds (\S+)$/m) * 1000)}`,
    `GC ${gc('minor')}, ${gc('major')}, ${gc('incremental')}`,
    `heap used ${mb(value(/^nodejs_heap_size_used_bytes (\S+)$/m))} of ${mb(value(/^nodejs_heap_size_total_bytes (\S+)$/m))}`,
  ].join(', ');
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

const cpuOf = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1e6;
const ms = (value: number) => `${fmt(value)} ms`;
const progress = (line: string) => process.stderr.write(`${line}\n`);

function fmt(value: number, digits = 1): string {
  if (value === Number.POSITIVE_INFINITY) return 'never';
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

/**
 * How fast this machine runs plain JavaScript now: a fixed loop, in ms. Figures from machines (or moments)
 * with different calibrations are not comparable.
 */
function calibrationMs(): number {
  const start = performance.now();
  let sum = 0;
  for (let i = 0; i < 100_000_000; i++) sum += i % 7;
  if (sum < 0) progress('');
  return performance.now() - start;
}

const COLUMNS: [header: string, cell: (row: Row) => string][] = [
  ['scenario', (row) => row.name],
  ['target', (row) => row.target],
  ['events', (row) => String(row.events)],
  ['ack p50 ms', (row) => fmt(row.ackP50)],
  ['ack p99 ms', (row) => fmt(row.ackP99)],
  ['slowest ack ms', (row) => fmt(row.slowestAckMs, 0)],
  ['added p50 ms', (row) => fmt(row.addedP50)],
  ['added p99 ms', (row) => fmt(row.addedP99)],
  ['slowest answer ms', (row) => fmt(row.slowestAnswerMs, 0)],
  ['lost', (row) => String(row.lost)],
  ['of them acked', (row) => String(row.lostAcknowledged)],
  ['dup', (row) => String(row.duplicated)],
  ['unacked', (row) => String(row.unacknowledged)],
  ['peak RSS MB', (row) => fmt(row.peakRssMb, 0)],
  ['RSS MB', (row) => fmt(row.rssMb, 0)],
  ['CPU s', (row) => fmt(row.cpuSeconds)],
  ['bench CPU s', (row) => fmt(row.harnessCpuSeconds)],
  ['PG CPU s', (row) => fmt(row.postgresCpuSeconds)],
  ['other CPU s', (row) => fmt(row.otherCpuSeconds)],
];

/** The bot's figure over the relay's, in the latency columns. */
const RATIO_OF: Record<string, (row: Row) => number> = {
  'ack p50 ms': (row) => row.ackP50,
  'ack p99 ms': (row) => row.ackP99,
  'slowest ack ms': (row) => row.slowestAckMs,
  'added p50 ms': (row) => row.addedP50,
  'added p99 ms': (row) => row.addedP99,
};

function printTable(rows: Row[]): void {
  const lines = [COLUMNS.map(([header]) => header)];
  for (const scenario of SCENARIOS) {
    const bot = rows.find((row) => row.target === 'bot' && row.scenario === scenario.key);
    const relay = rows.find((row) => row.target === 'relay' && row.scenario === scenario.key);
    for (const row of [bot, relay]) if (row) lines.push(COLUMNS.map(([, cell]) => cell(row)));
    if (bot && relay) {
      lines.push(
        COLUMNS.map(([header]) => {
          if (header === 'scenario') return scenario.name;
          if (header === 'target') return 'bot/relay';
          const of = RATIO_OF[header];
          return of ? fmt(of(bot) / of(relay), 2) : '';
        }),
      );
    }
  }
  const widths = COLUMNS.map((_, column) => Math.max(...lines.map((line) => (line[column] ?? '').length)));
  for (const line of lines) {
    process.stdout.write(
      `${line
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd()}\n`,
    );
  }
}

/** What each process did per event: store statements and PostgreSQL's count of its commits, Slack and agent calls. */
function printWork(rows: Row[]): void {
  const calls = (counts: Record<string, number>) =>
    Object.entries(counts)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, n]) => `${name} ${n.toFixed(2)}`)
      .join(', ');
  process.stdout.write(
    'work per event (PostgreSQL transactions from pg_stat_database: rough in short scenarios)\n',
  );
  for (const row of rows) {
    const { perEvent } = row;
    process.stdout.write(
      `${row.scenario} ${row.target}: ${row.target === 'bot' ? `${fmt(perEvent.storeStatements)} store statements, ` : ''}` +
        `${fmt(perEvent.pgTransactions)} PostgreSQL transactions, ${fmt(perEvent.pgRowsWritten)} rows written; ` +
        `Slack: ${calls(perEvent.slack)}; agent: ${calls(perEvent.agent)}\n`,
    );
  }
}

const UNITS: Record<Measure, [unit: string, digits: number]> = {
  ackP99: [' ms', 1],
  addedP99: [' ms', 1],
  slowestAckMs: [' ms', 0],
  slowestAnswerMs: [' ms', 0],
  lost: ['', 0],
  duplicated: ['', 0],
  peakRssMb: [' MB', 0],
};

function verdicts(rows: Row[]): Verdict[] {
  const found: Verdict[] = [];
  for (const target of TARGETS) {
    const bot = rows.find((row) => row.target === 'bot' && row.scenario === target.scenario);
    if (!bot) continue;
    const relay = rows.find((row) => row.target === 'relay' && row.scenario === target.scenario);
    if (target.of === 'ratio' && !relay) {
      process.stdout.write(`SKIP  ${target.scenario}: ${target.text} (relay not run)\n`);
      continue;
    }
    const value =
      target.of === 'bot'
        ? bot[target.measure]
        : bot[target.measure] / (relay?.[target.measure] ?? Number.NaN);
    const verdict = judge(target, value);
    found.push(verdict);
    const [unit, digits] = UNITS[target.measure];
    const figure = (row: Row | undefined) => `${fmt(row?.[target.measure] ?? Number.NaN, digits)}${unit}`;
    const figures =
      target.of === 'bot'
        ? `bot ${figure(bot)}${relay ? `; relay ${figure(relay)}` : ''}`
        : `${fmt(value, 2)} = bot ${figure(bot)} / relay ${figure(relay)}`;
    process.stdout.write(
      `${verdict.pass ? 'PASS' : 'FAIL'}  ${target.scenario}: ${target.text} (${figures})\n`,
    );
  }
  return found;
}

// Interrupted (Ctrl-C, a CI timeout): the measured processes are killed at once and their databases dropped if
// PostgreSQL answers within a few seconds. ('exit' kills them too, however the bench ends.)
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
  ['SIGHUP', 129],
] as const) {
  process.once(signal, () => {
    const aborted = Promise.allSettled([...live].map((subject) => subject.abort()));
    void Promise.race([aborted, sleep(5_000)]).then(() => process.exit(code));
  });
}

const calibration = calibrationMs();
progress(`machine: a fixed JavaScript loop took ${calibration.toFixed(0)} ms (lower is faster)`);
if (SCALE !== 1)
  progress(`BENCH_SCALE=${SCALE}: counts and durations scaled, figures not comparable with a full run`);
const runStarted = Date.now();

const rows: Row[] = [];
try {
  const subjects: Subject[] = [];
  for (const kind of KINDS) subjects.push(await Subject.start(kind));
  for (const subject of subjects) {
    for (const load of WARM_UP) await subject.run(load, 'W');
    progress(`${subject.kind}: warmed up`);
  }
  for (const scenario of SCENARIOS) {
    // Each scenario on the bot and then on the relay, so that the two meet the machine in the same state.
    for (const subject of subjects) {
      const row = await measure(subject, scenario);
      if (scenario.key === 'manyThreads') {
        await rssOnceDrained(subject, row);
        progress(
          `${subject.kind}: RSS once drained, a second apart: ${row.rssSamplesMb.map((mb) => mb.toFixed(0)).join(', ')} MB`,
        );
      }
      rows.push(row);
      await sleep(1_000); // trailing work (working indicators) out of the way
    }
  }
} finally {
  for (const subject of [...live]) await subject.stop();
  await statsClient?.end();
}

process.stdout.write(
  `\nCalibration loop ${calibration.toFixed(0)} ms (lower is faster); node ${process.version}\n\n`,
);
printTable(rows);
for (const row of rows.filter((r) => r.rssSamplesMb.length > 0)) {
  process.stdout.write(
    `\n${row.target}: after ${row.threadsSeen} distinct threads, once drained, RSS a second apart: ` +
      `${row.rssSamplesMb.map((mb) => mb.toFixed(0)).join(', ')} MB (growth ${fmt(row.rssGrowthMb)} MB)`,
  );
}
process.stdout.write('\n\n');
printWork(rows);
process.stdout.write('\n');
const judged = verdicts(rows);
mkdirSync('bench/results', { recursive: true });
writeFileSync(
  'bench/results/latest.json',
  `${JSON.stringify(
    {
      at: new Date().toISOString(),
      node: process.version,
      calibrationMs: calibration,
      scale: SCALE,
      rows,
      verdicts: judged,
    },
    // JSON has no Infinity (an event never acknowledged, a message never answered).
    (_key, value: unknown) => (value === Number.POSITIVE_INFINITY ? 'Infinity' : value),
    2,
  )}\n`,
);
process.stdout.write(
  `\nFigures written to bench/results/latest.json (${((Date.now() - runStarted) / 1000).toFixed(0)} s).\n`,
);
process.exit(0);
