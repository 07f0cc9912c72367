import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { observedAgentClient } from './agent/observed-client.js';
import { agentRouter } from './agent/routing.js';
import { Housekeeping } from './app/housekeeping.js';
import * as oauth from './app/installations.js';
import { BotLifecycle, EventAdmission } from './app/lifecycle.js';
import { botReadiness, customRoutes } from './app/readiness.js';
import { runStartupChecks } from './app/startup-checks.js';
import type { Config } from './config/index.js';
import { Relay } from './conversation/relay.js';
import { ViewingContext } from './conversation/viewing-context.js';
import { MessageClaims } from './inbox/claims.js';
import { Inbox } from './inbox/inbox.js';
import { ConversationMarks, openedSessionsIn } from './inbox/marks.js';
import { WorkspaceRemovals } from './inbox/removals.js';
import { storeRetryDelays } from './inbox/store-retry.js';
import { Worker } from './inbox/worker.js';
import { boltLogger } from './observability/bolt-logger.js';
import { healthHandlers, metricsHandler } from './observability/health.js';
import type { Logger } from './observability/logger.js';
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
import { type BotIdentity, reportMissingScopes } from './slack-in/startup-check.js';
import { StoreOutagePolicy } from './slack-in/store-outage.js';
import { AgentFeatures } from './slack-out/agent-features.js';
import { slackClients } from './slack-out/clients.js';
import { WorkIndicators } from './slack-out/indicators.js';
import { SlackReads } from './slack-out/reads.js';
import { cachedUserNameResolver } from './slack-out/user-names.js';
import { SlackWrites } from './slack-out/writes.js';
import type { Database } from './store/database.js';
import { createSessionKeyv } from './store/keyv.js';

export interface Bot {
  identity: BotIdentity;
  start(): Promise<void>;
  /**
   * Stops taking events, finishes in-flight work for up to `drainMs` (then hands back what was not sent to
   * the agent yet), and releases every resource.
   */
  stop(drainMs?: number): Promise<void>;
}

/**
 * The composition root: builds the whole bot from configuration (Slack identity, store, agent client, Bolt app)
 * and wires its parts; their start and stop order is in app/lifecycle.ts.
 */
export async function createBot(config: Config, logger: Logger): Promise<Bot> {
  const metrics = new BotMetrics();
  const tracing = await startTracing(config.tracing);
  // Every thread answered at once may have a prompt in flight; a little room for session calls.
  const agent = observedAgentClient(config.agent, config.delivery.concurrency + 16, {
    metrics,
    tracing,
    logger,
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
  // OAuth mode: the installations, and each Slack call made with the served workspace's token.
  const installations = oauth.createInstallations(config.slack, db, { metrics, logger });
  // An uninstall or revocation ends the workspace's (or org's) work and conversations (see WorkspaceRemovals).
  const removals = new WorkspaceRemovals(db, inbox, sessions, logger, {
    retryBaseMs: config.sessions.deleteRetryMs,
    // Rare, and each is worked on as soon as it is recorded: the poll only finds retries and leftovers.
    pollMs: Math.min(Math.max(config.sessions.deleteRetryMs, 1_000), 30_000),
    forgetInstallation:
      installations && ((workspace, recordedAt) => installations.store.forget(workspace, recordedAt)),
    onRemoved: (workspace) => oauth.reportRemoval(workspace, installations !== undefined, logger),
  });
  installations?.onRemoved((workspace) => removals.remove(workspace, 'token_invalid'));
  // Installed again: the workspace's events are taken again. OAuth mode: when the install is stored.
  // Single-workspace mode: auth.test succeeded at start-up, so the token (new after a reinstall: an uninstall
  // revokes the old one) works; recorded as an install, so a late retry of the uninstall before it is ignored.
  // A retried delivery cannot be told from a reinstall by itself, so events alone never lift a removal.
  installations?.onInstalled((workspace) => removals.installed(workspace));
  if (!installations && identity.teamId)
    await removals.installed({ teamId: identity.teamId, isEnterpriseInstall: false });
  const claims = new MessageClaims(db);
  const marks = new ConversationMarks(db);
  const viewing = new ViewingContext(db);

  // Slack out: one client that retries calls harmless to repeat, one that never repeats a post by itself, one
  // for reads the bot can go without, which never waits out a rate limit.
  const slack = slackClients(config.slack, { metrics, tracing, logger }, installations?.tokens);
  const reads = new SlackReads(slack.calls, logger, identity.botUserId, slack.optionalReads);
  const replies = new SlackWrites(slack.calls, slack.posts, logger, reads);
  const agentFeatures = new AgentFeatures(replies, config.agentView.mode, openedSessionsIn(marks), logger);
  const indicators = new WorkIndicators(
    replies,
    config.conversation.slowNoticeMs,
    config.conversation.workingIndicatorDelayMs,
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
    resolveUserName: cachedUserNameResolver(slack.calls),
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
  const worker = new Worker(inbox, oauth.servedJobs(installations, relay.run), logger, {
    concurrency: config.delivery.concurrency,
    pollMs: Math.max(100, Math.min(1_000, config.delivery.leaseMs / 4)),
    leaseMs: config.delivery.leaseMs,
  });

  // Slack in.
  const access = new AccessPolicy(config.access);
  const resets = new ThreadResets(inbox, sessions, indicators, agentFor, () => worker.kick());
  // An idle conversation's agent session is deleted, and the agent view session the bot opened for it closed.
  const sweeper = new IdleSweeper(sessions, config.sessions.idleTtlMs, logger, (expired) =>
    oauth.servedThreads(installations, expired, (threads) => agentFeatures.close(threads)),
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
    removals,
    viewing,
    tracing,
    access,
    userRateLimit: config.access.userRateLimit,
    worker,
    onRecorded: () => worker.kick(),
    metrics,
    logger,
  });

  const storeOutage = new StoreOutagePolicy({
    ackAfterMs: config.delivery.storeOutageAckMs,
    replies,
    reads,
    botUserId: identity.botUserId,
    agentFeatures,
    mentionOnly: config.conversation.mentionOnly,
    logger,
  });
  const admission = new EventAdmission();
  let socketHealth: SocketHealth | undefined;
  const slackConnected =
    config.slack.connection.mode === 'socket' ? () => socketHealth?.ready() ?? false : undefined;
  const health = healthHandlers(botReadiness({ admission, db, storeOutage, slackConnected }));
  const slackIngress = createSlackApp({
    credentials: oauth.slackCredentials(config, identity, installations),
    connection: config.slack.connection,
    apiUrl: config.slack.apiUrl,
    port: config.port,
    host: config.host,
    routes: customRoutes(health),
    clientOptions: slack.options,
    boltLogger: boltLogger(logger),
    intake: async (envelope) => {
      if (!admission.accepting) throw new Error('shutting down: not accepting events');
      const record = () => storeOutage.record(envelope, () => intake.accept(envelope));
      await oauth.receiveEvent(installations, envelope, record, logger);
    },
    logger,
    tracing,
  });
  const { app } = slackIngress;
  if (installations) oauth.serveBoltRequests(app, installations);
  if (slackIngress.socket) socketHealth = new SocketHealth(slackIngress.socket, metrics);
  registerCommands(app, {
    command: config.slashCommand,
    sessions,
    inbox,
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
  metrics.collectOnScrape(
    async () => ({
      ...(await inbox.counts()),
      deletionsPending: await deleter.pendingCount(),
      removalsPending: await removals.pendingCount(),
    }),
    () => worker.inFlight,
  );

  const housekeeping = new Housekeeping(
    [() => claims.prune(), () => inbox.prune(), () => viewing.prune(), () => sessions.pruneActivity()],
    logger,
  );
  const lifecycle = new BotLifecycle({
    admission,
    config,
    logger,
    tracing,
    db,
    owner,
    inbox,
    worker,
    relay,
    deleter,
    removals,
    sweeper,
    housekeeping,
    agent,
    slackIngress,
    health,
    adminRoutes: { '/metrics': metricsHandler(metrics) },
  });
  return {
    identity,
    start: () => lifecycle.start(),
    stop: (drainMs = 10_000) => lifecycle.stop(drainMs),
  };
}

export type { BotIdentity };
