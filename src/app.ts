import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { hostname } from 'node:os';
import type { CustomRoute } from '@slack/bolt';
import type { WebClientOptions } from '@slack/web-api';
import { AgentClient } from './agent/client.js';
import { agentRouter } from './agent/routing.js';
import { checkAgentService } from './agent/startup-check.js';
import type { Config } from './config/index.js';
import { Relay } from './conversation/relay.js';
import { ViewingContext } from './conversation/viewing-context.js';
import { MessageClaims } from './inbox/claims.js';
import { Inbox } from './inbox/inbox.js';
import { ConversationMarks, openedSessionsIn } from './inbox/marks.js';
import { storeRetryDelays } from './inbox/store-retry.js';
import { Worker } from './inbox/worker.js';
import {
  healthHandlers,
  metricsHandler,
  Readiness,
  type RouteHandler,
  startRouteServer,
  stopRouteServer,
} from './observability/health.js';
import { boltLogger, type Logger } from './observability/logger.js';
import { BotMetrics } from './observability/metrics.js';
import { startTracing } from './observability/tracing.js';
import { SessionDeleter } from './sessions/deleter.js';
import { IdleSweeper } from './sessions/idle-sweeper.js';
import { SessionManager } from './sessions/manager.js';
import { SessionStore, type ThreadSession } from './sessions/store.js';
import { AccessPolicy } from './slack-in/access.js';
import { createSlackApp } from './slack-in/bolt-app.js';
import { registerActions } from './slack-in/listeners/actions/index.js';
import { registerCommands } from './slack-in/listeners/commands/index.js';
import { EventIntake } from './slack-in/listeners/events/index.js';
import { ThreadResets } from './slack-in/resets.js';
import { SocketHealth } from './slack-in/socket-health.js';
import { type BotIdentity, checkSlackIdentity, reportMissingScopes } from './slack-in/startup-check.js';
import { StoreOutagePolicy } from './slack-in/store-outage.js';
import { AgentFeatures } from './slack-out/agent-features.js';
import { SlackWebClient } from './slack-out/client.js';
import { WorkIndicators } from './slack-out/indicators.js';
import { SlackReads } from './slack-out/reads.js';
import { cachedUserNameResolver } from './slack-out/user-names.js';
import { SlackWrites } from './slack-out/writes.js';
import { type Database, openDatabase } from './store/database.js';
import { createSessionKeyv } from './store/keyv.js';
import { migrate } from './store/schema.js';

const HOUSEKEEPING_INTERVAL_MS = 60 * 60 * 1000;

export interface Bot {
  identity: BotIdentity;
  start(): Promise<void>;
  /**
   * Stops taking events, finishes in-flight work for up to `drainMs` (then hands back what was not sent to
   * the agent yet), and releases every resource.
   */
  stop(drainMs?: number): Promise<void>;
}

/** Builds the whole bot from configuration: Slack identity, store, agent client, Bolt app. */
export async function createBot(config: Config, logger: Logger): Promise<Bot> {
  const metrics = new BotMetrics();
  const tracing = await startTracing(config.tracing);
  const agent = new AgentClient({
    baseUrl: config.agent.baseUrl,
    apiKey: config.agent.apiKey,
    timeoutMs: config.agent.timeoutMs,
    // Every thread answered at once may have a prompt in flight; a little room for session calls.
    maxSockets: config.delivery.concurrency + 16,
    // A span per call, and its trace context to the agent service so the service's own traces join.
    around: (operation, attempt) =>
      tracing.inSpan(`agent ${operation}`, 'client', { 'agent.operation': operation }, attempt),
    headers: () => tracing.headers(),
    onCall: ({ operation, attempt, durationMs, outcome, serviceMessage }) => {
      // The service's words may quote the prompt: debug only, like every message text.
      if (serviceMessage !== undefined)
        logger.debug({ operation, attempt, outcome, serviceMessage }, 'the agent service said');
      metrics.agentCallSeconds.observe({ operation, outcome }, durationMs / 1000);
      if (outcome !== 'ok') metrics.agentFailures.inc({ operation, kind: outcome });
      if (operation === 'sendMessage' && outcome === 'ok') metrics.promptsRelayed.inc();
      if (operation === 'createSession' && outcome === 'ok') metrics.sessionsCreated.inc();
    },
  });
  let startup: { identity: BotIdentity; db: Database };
  try {
    startup = await runStartupChecks(config, agent, metrics, logger);
  } catch (error) {
    agent.close();
    await tracing.shutdown().catch(() => {});
    throw error;
  }
  const { identity, db } = startup;
  reportMissingScopes(identity, config.agentView.mode === 'on', logger);

  // Storage and the agent service.
  const store = new SessionStore(createSessionKeyv<ThreadSession>(db, SessionStore.namespace), db);
  const deleter = new SessionDeleter(db, agent, logger, {
    onDeleted: (reason) => metrics.sessionsDeleted.inc({ reason }),
    retryBaseMs: config.sessions.deleteRetryMs,
    pollMs: Math.min(config.sessions.deleteRetryMs, 30_000),
  });
  const sessions = new SessionManager(store, agent, deleter, logger);
  const agentFor = agentRouter(config.agent);
  const owner = `${hostname()}/${process.pid}/${randomBytes(3).toString('hex')}`;
  const inbox = new Inbox(
    db,
    owner,
    config.delivery.leaseMs,
    storeRetryDelays(config.delivery.storeWriteRetryMs),
  );
  const claims = new MessageClaims(db);
  const marks = new ConversationMarks(db);
  const viewing = new ViewingContext(db);

  // Slack out: one client that retries calls harmless to repeat (a queue per method, as Slack limits each
  // method separately; best-effort calls retried once), one that never repeats a post by itself.
  const slackObserver = {
    onCall: ({ method, status }: { method: string; status: string }) =>
      metrics.slackCalls.inc({ method, status }),
    onRateLimited: () => metrics.slackRateLimited.inc(),
    around: <T>(method: string, call: () => Promise<T>) =>
      tracing.inSpan(`slack ${method}`, 'client', { 'slack.method': method }, call),
  };
  const slackClientOptions: WebClientOptions = {
    slackApiUrl: config.slack.apiUrl,
    logger: boltLogger(logger),
    timeout: config.slack.callTimeoutMs,
    retryConfig: { retries: 3, factor: 2, minTimeout: 500, maxTimeout: 4_000 },
  };
  // Each method on a queue of its own, as Slack limits each on its own (see SlackWebClient); indicators never
  // wait long for Slack: Retry-After is honoured once.
  const slackClient = new SlackWebClient(config.slack.botToken, slackClientOptions, slackObserver, {
    retries: 1,
    factor: 2,
    minTimeout: 500,
    maxTimeout: 2_000,
  });
  const postClient = new SlackWebClient(
    config.slack.botToken,
    { ...slackClientOptions, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true },
    slackObserver,
  );
  const reads = new SlackReads(slackClient, logger, identity.botUserId);
  const replies = new SlackWrites(slackClient, postClient, logger, reads);
  const agentFeatures = new AgentFeatures(replies, config.agentView.mode, openedSessionsIn(marks), logger);
  const indicators = new WorkIndicators(
    replies,
    config.conversation.slowNoticeMs,
    config.conversation.workingIndicatorDelayMs,
    undefined,
    agentFeatures,
  );

  // The conversation: one job at a time per thread, up to WORKER_CONCURRENCY threads at once.
  const relay = new Relay({
    progress: inbox,
    agentFor,
    agent,
    sessions,
    indicators,
    replies,
    reads,
    agentFeatures,
    resolveUserName: cachedUserNameResolver(slackClient),
    botUserId: identity.botUserId,
    maxPromptChars: config.conversation.maxPromptChars,
    agentTimeoutMs: config.agent.timeoutMs,
    replyRetryWindowMs: config.delivery.replyRetryWindowMs,
    storeRetryWindowMs: config.delivery.storeRetryWindowMs,
    feedbackButtons: config.conversation.feedbackButtons,
    threadContextMessages: config.conversation.threadContextMessages,
    viewing,
    tracing,
    logger,
  });
  const worker = new Worker(inbox, relay.run, logger, {
    concurrency: config.delivery.concurrency,
    pollMs: Math.max(100, Math.min(1_000, config.delivery.leaseMs / 4)),
    leaseMs: config.delivery.leaseMs,
  });

  // Slack in.
  const access = new AccessPolicy(config.access);
  const resets = new ThreadResets(inbox, sessions, indicators, agentFor, () => worker.kick());
  // An idle conversation's agent session is deleted, and the Slack session the bot opened for it closed.
  const sweeper = new IdleSweeper(sessions, config.sessions.idleTtlMs, logger, (expired) =>
    agentFeatures.close(expired),
  );
  const intake = new EventIntake({
    inbox,
    claims,
    marks,
    sessions,
    resets,
    replies,
    indicators,
    agentFor,
    botUserId: identity.botUserId,
    mentionOnly: config.conversation.mentionOnly,
    agentView: config.agentView,
    agentFeatures,
    viewing,
    tracing,
    access,
    userRateLimit: config.access.userRateLimit,
    onRecorded: () => worker.kick(),
    metrics,
    logger,
  });

  const storeOutage = new StoreOutagePolicy({
    ackAfterMs: config.delivery.storeOutageAckMs,
    replies,
    reads,
    botUserId: identity.botUserId,
    mentionOnly: config.conversation.mentionOnly,
    logger,
  });
  let accepting = true;
  let socketHealth: SocketHealth | undefined;
  const readiness = new Readiness({
    accepting: () => accepting,
    store: () =>
      // A failed check starts the outage clock (a replica with no traffic); only a recorded event ends it, as a
      // store that answers reads may still refuse writes (a read-only failover, a full disk).
      db.query('SELECT 1').catch((error: unknown) => {
        storeOutage.failed();
        throw error;
      }),
    storeWrites: () => db.writeProblem?.(),
    // Past the outage bound events are acknowledged without the store: a balancer must keep sending them.
    storeRequired: () => !storeOutage.acknowledging,
    slackConnected:
      config.slack.connection.mode === 'socket' ? () => socketHealth?.ready() ?? false : undefined,
  });
  const health = healthHandlers(readiness);
  const slackIngress = createSlackApp({
    botToken: config.slack.botToken,
    botUserId: identity.botUserId,
    botId: identity.botId,
    connection: config.slack.connection,
    apiUrl: config.slack.apiUrl,
    port: config.port,
    host: config.host,
    routes: customRoutes(health),
    clientOptions: slackClientOptions,
    boltLogger: boltLogger(logger),
    intake: async (envelope) => {
      if (!accepting) throw new Error('shutting down: not accepting events');
      await storeOutage.record(envelope, () => intake.accept(envelope));
    },
    logger,
    tracing,
  });
  const { app } = slackIngress;
  if (slackIngress.socket) socketHealth = new SocketHealth(slackIngress.socket, metrics);
  registerCommands(app, {
    command: config.slashCommand,
    sessions,
    resets,
    agent,
    workspaceUrl: identity.url,
    access,
    chargeUser: (userId) => inbox.chargeUser(userId, config.access.userRateLimit),
    tracing,
    replies,
    userRateLimit: config.access.userRateLimit,
    agentFeatures,
    logger,
  });
  registerActions(app, {
    inbox,
    claims,
    replies,
    access,
    agentFeatures,
    userRateLimit: config.access.userRateLimit,
    onRecorded: () => worker.kick(),
    metrics,
    logger,
    tracing,
  });
  app.error(async (error) => {
    logger.error({ err: error }, 'unhandled error in a Slack listener');
  });
  metrics.collectOnScrape(async () => ({
    inFlight: worker.inFlight,
    ...(await inbox.counts()),
    deletionsPending: await deleter.pendingCount(),
  }));

  let housekeeping: NodeJS.Timeout | undefined;
  let pruning: Promise<void> | undefined;
  let adminServer: Server | undefined;
  let healthServer: Server | undefined;
  return {
    identity,
    async start() {
      // The embedded store is one process's, so jobs left running belong to a process that is gone.
      if (db.kind === 'embedded') await inbox.expireLeases();
      worker.start();
      deleter.start();
      sweeper.start();
      const prune = () => {
        pruning = Promise.all([
          claims.prune(),
          inbox.prune(),
          viewing.prune(),
          sessions.pruneActivity(),
        ]).then(
          () => {},
          (error: unknown) => logger.warn({ err: error }, 'could not prune expired store rows'),
        );
      };
      // At start-up too: a process restarted more often than hourly (deploys, crashes) still forgets old rows.
      prune();
      housekeeping = setInterval(prune, HOUSEKEEPING_INTERVAL_MS);
      housekeeping.unref();
      adminServer = await startRouteServer(config.adminPort, config.host, {
        ...health,
        '/metrics': metricsHandler(metrics),
      });
      if (config.slack.connection.mode === 'socket') {
        // Socket Mode needs no public endpoint: PORT serves the health endpoints only.
        healthServer = await startRouteServer(config.port, config.host, health);
      }
      await slackIngress.start();
      logger.info(
        {
          mode: config.slack.connection.mode,
          port: config.port,
          adminPort: config.adminPort,
          store: db.kind,
          owner,
        },
        'slack-agent-bridge is running',
      );
    },
    async stop(drainMs = 10_000) {
      accepting = false;
      sweeper.stop();
      clearInterval(housekeeping);
      await slackIngress
        .stop()
        .catch((error: unknown) => logger.warn({ err: error }, 'error while stopping the Slack receiver'));
      const { finished, handedBack } = await worker.stop(drainMs);
      if (!finished) {
        relay.abandonRunning();
        logger.warn({ handedBack }, 'stopped before all in-flight work finished');
      }
      await deleter.stop();
      await pruning;
      await Promise.all([stopRouteServer(adminServer), stopRouteServer(healthServer)]);
      agent.close();
      await tracing
        .shutdown()
        .catch((error: unknown) => logger.warn({ err: error }, 'could not send the last spans'));
      await db
        .close()
        .catch((error: unknown) => logger.warn({ err: error }, 'error while closing the store'));
    },
  };
}

/** The health routes in Bolt's form, for the HTTP receiver on PORT. */
function customRoutes(handlers: Record<string, RouteHandler>): CustomRoute[] {
  return Object.entries(handlers).map(([path, handler]) => ({ path, method: ['GET', 'HEAD'], handler }));
}

/**
 * Slack, the agent service and the store, each checked whatever the others found: every failure is reported
 * together (an AggregateError of one-line errors), so an operator fixes them all in one round.
 */
async function runStartupChecks(
  config: Config,
  agent: AgentClient,
  metrics: BotMetrics,
  logger: Logger,
): Promise<{ identity: BotIdentity; db: Database }> {
  const openStore = async () => {
    const db = await openDatabase(config.store, {
      onQuery: (durationMs, ok) =>
        metrics.storeQuerySeconds.observe({ outcome: ok ? 'ok' : 'error' }, durationMs / 1000),
    });
    try {
      await migrate(db);
    } catch (error) {
      await db.close().catch(() => {});
      throw error;
    }
    return db;
  };
  const [identity, agentCheck] = await Promise.allSettled([
    checkSlackIdentity(config, logger),
    checkAgentService(agent, config.agent, logger),
  ]);
  // After the others, whatever they found: opening the embedded store holds the event loop for a while, and
  // would eat into the agent service check's 3 s.
  const [db] = await Promise.allSettled([openStore()]);
  if (identity.status === 'fulfilled' && agentCheck.status === 'fulfilled' && db.status === 'fulfilled')
    return { identity: identity.value, db: db.value };
  // The store's lock (embedded) and connections are released before the process exits.
  if (db.status === 'fulfilled') await db.value.close().catch(() => {});
  const failures = [identity, agentCheck, db].flatMap((outcome) =>
    outcome.status === 'rejected' ? [outcome.reason as unknown] : [],
  );
  throw new AggregateError(failures, 'start-up failed');
}

export type { BotIdentity };
