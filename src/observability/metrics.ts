import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { within } from '../util/within.js';

/** Figures read from the store at scrape time. */
export interface QueueSnapshot {
  pending: number;
  running: number;
  deletionsPending: number;
  removalsPending: number;
}

/** How long a scrape waits for the queue's figures from the store. */
const SNAPSHOT_WAIT_MS = 1_000;

/**
 * The bot's Prometheus metrics, on a registry of its own (two bots in one process, as in tests, must not
 * share counters). Served at GET /metrics.
 */
export class BotMetrics {
  readonly registry = new Registry();

  readonly eventsReceived = new Counter({
    name: 'slack_events_received_total',
    help: 'Slack events received, by event type',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });
  readonly eventsIgnored = new Counter({
    name: 'slack_events_ignored_total',
    help: 'Slack events received but not acted on, by event type and reason',
    labelNames: ['type', 'reason'] as const,
    registers: [this.registry],
  });
  readonly eventsDeduplicated = new Counter({
    name: 'slack_events_deduplicated_total',
    help: 'Repeated deliveries of a message already recorded (Slack retries, app_mention + message)',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });
  readonly tokenRefreshes = new Counter({
    name: 'slack_token_refreshes_total',
    help: 'OAuth mode: bot token refreshes (token rotation), by outcome (ok, failed)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly promptsRelayed = new Counter({
    name: 'agent_prompts_relayed_total',
    help: 'Prompts sent to the agent service',
    registers: [this.registry],
  });
  readonly agentCallSeconds = new Histogram({
    name: 'agent_call_duration_seconds',
    help: 'Agent service call latency, by operation and outcome',
    labelNames: ['operation', 'outcome'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly agentFailures = new Counter({
    name: 'agent_call_failures_total',
    help: 'Failed agent service calls, by operation and failure kind',
    labelNames: ['operation', 'kind'] as const,
    registers: [this.registry],
  });
  readonly slackCalls = new Counter({
    name: 'slack_api_calls_total',
    help: 'Slack Web API calls, by method and HTTP status (200 also for Slack errors; "error" for no answer)',
    labelNames: ['method', 'status'] as const,
    registers: [this.registry],
  });
  readonly slackRateLimited = new Counter({
    name: 'slack_api_rate_limited_total',
    help: 'Slack Web API answers of HTTP 429 (each one waited out)',
    registers: [this.registry],
  });
  readonly slackSocketReconnects = new Counter({
    name: 'slack_socket_reconnects_total',
    help: 'Socket Mode: times the WebSocket to Slack was lost and opened again',
    registers: [this.registry],
  });
  readonly slackSocketConnected = new Gauge({
    name: 'slack_socket_connected',
    help: 'Socket Mode: 1 while the WebSocket to Slack is open and Slack said hello, else 0',
    registers: [this.registry],
  });
  readonly replyFeedback = new Counter({
    name: 'agent_reply_feedback_total',
    help: 'Feedback buttons pressed under answers, by agent and value',
    labelNames: ['agent', 'value'] as const,
    registers: [this.registry],
  });
  readonly sessionsCreated = new Counter({
    name: 'agent_sessions_created_total',
    help: 'Agent sessions created',
    registers: [this.registry],
  });
  readonly sessionsDeleted = new Counter({
    name: 'agent_sessions_deleted_total',
    help: 'Agent sessions deleted on the service, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly storeQuerySeconds = new Histogram({
    name: 'store_query_duration_seconds',
    help: 'Store (PostgreSQL or embedded) query latency, by outcome',
    labelNames: ['outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly jobsInFlight = new Gauge({
    name: 'jobs_in_flight',
    help: 'Messages this process is working on now (threads in flight)',
    registers: [this.registry],
    collect: () => {
      if (this.inFlight) this.jobsInFlight.set(this.inFlight());
    },
  });
  readonly inboxOpen = new Gauge({
    name: 'inbox_open_jobs',
    help: 'Messages recorded and not finished yet, across all replicas, by state (pending = queued)',
    labelNames: ['state'] as const,
    registers: [this.registry],
    collect: async () => {
      const snapshot = await this.snapshot();
      if (!snapshot) return;
      this.inboxOpen.set({ state: 'pending' }, snapshot.pending);
      this.inboxOpen.set({ state: 'running' }, snapshot.running);
    },
  });
  readonly deletionsPending = new Gauge({
    name: 'agent_session_deletions_pending',
    help: 'Agent session deletions recorded and not yet confirmed by the agent service (retried with backoff)',
    registers: [this.registry],
    collect: async () => {
      const snapshot = await this.snapshot();
      if (snapshot) this.deletionsPending.set(snapshot.deletionsPending);
    },
  });

  readonly removalsPending = new Gauge({
    name: 'workspace_removals_pending',
    help: 'Workspaces or orgs the app was removed from whose clean-up is not finished yet (retried with backoff)',
    registers: [this.registry],
    collect: async () => {
      const snapshot = await this.snapshot();
      if (snapshot) this.removalsPending.set(snapshot.removalsPending);
    },
  });

  private reader: (() => Promise<QueueSnapshot>) | undefined;
  private inFlight: (() => number) | undefined;
  private pendingSnapshot: Promise<QueueSnapshot | undefined> | undefined;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Queue figures are read at scrape time (one store query per scrape) rather than tracked on every change. */
  collectOnScrape(read: () => Promise<QueueSnapshot>, inFlight: () => number): void {
    this.reader = read;
    this.inFlight = inFlight;
  }

  /**
   * The queue's figures, waited for at most SNAPSHOT_WAIT_MS: a store that does not answer must not hold the
   * scrape past the admin port's timeouts (every metric would be lost just when the store is in trouble).
   * Not read in time, the gauges keep the figures last read; the read goes on, and a scrape meanwhile waits on
   * it rather than starting another.
   */
  private async snapshot(): Promise<QueueSnapshot | undefined> {
    const read = this.reader;
    if (!read) return undefined;
    this.pendingSnapshot ??= read()
      .catch(() => undefined)
      .finally(() => {
        this.pendingSnapshot = undefined;
      });
    return (await within(this.pendingSnapshot, SNAPSHOT_WAIT_MS))?.value;
  }
}
