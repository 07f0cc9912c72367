import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import type { App, CustomRoute } from '@slack/bolt';
import { WebClient } from '@slack/web-api';
import { AgentClient } from './agent/client.js';
import { agentRouter } from './agent/routing.js';
import type { Config } from './config.js';
import { MessageClaims } from './conversation/message-claims.js';
import { Relay } from './conversation/relay.js';
import { slackError, WorkIndicators } from './conversation/work-indicators.js';
import { openDatabase, type SqlDatabase } from './db/database.js';
import { createSqlKeyv } from './db/keyv-sql-store.js';
import { migrate, SESSIONS_TABLE } from './db/schema.js';
import { Inbox } from './delivery/inbox.js';
import { Intake } from './delivery/intake.js';
import { Worker } from './delivery/worker.js';
import { agentCallObserver, instrumentDatabase, instrumentedSlackFetch } from './observability/instrument.js';
import { boltLogger, type Logger } from './observability/logger.js';
import { BotMetrics } from './observability/metrics.js';
import { IdleSweeper } from './sessions/idle-sweeper.js';
import { SessionDeleter } from './sessions/session-deleter.js';
import { SessionManager } from './sessions/session-manager.js';
import { SessionStore, type ThreadSession } from './sessions/session-store.js';
import { AccessPolicy } from './slack/access-policy.js';
import { AgentViewConversations } from './slack/agent-view.js';
import { AnswerWebClient } from './slack/answer-web-client.js';
import { registerCommands } from './slack/commands.js';
import { DurableApp } from './slack/durable-app.js';
import { SlackHttpReceiver } from './slack/http-receiver.js';
import { AGENT_VIEW_SCOPES, missingScopes, scopePurpose } from './slack/requirements.js';
import { cachedUserNameResolver } from './slack/user-names.js';
import { webApiTransport } from './slack/web-api-transport.js';

const HOUSEKEEPING_INTERVAL_MS = 60 * 60 * 1000;
/** Threads worked on at once by one process; jobs mostly wait on the agent, so this can be large. */
const WORKER_CONCURRENCY = 2_000;

/** Slack request bodies are small; anything near this is not Slack and is refused (HTTP 413). */
const MAX_REQUEST_BODY_BYTES = 1024 * 1024;
/** Keep-alive sockets to Slack's Web API: enough that a burst of replies never waits for one. */
const SLACK_MAX_SOCKETS = 512;
const SLACK_CALL_TIMEOUT_MS = 20_000;

/** Who the bot is in Slack, from auth.test. */
export interface BotIdentity {
  teamId?: string;
  botUserId: string;
  botId?: string;
  /** Workspace URL, e.g. https://acme.slack.com/ */
  url?: string;
  /** Bot scopes Slack reports as granted (x-oauth-scopes), when it reports them. */
  scopes?: string[];
}

export interface Bot {
  app: App;
  identity: BotIdentity;
  sessions: SessionManager;
  deleter: SessionDeleter;
  inbox: Inbox;
  metrics: BotMetrics;
  start(): Promise<void>;
  /**
   * Stops taking events, finishes in-flight work for up to `drainMs` (then hands back what was not
   * sent to the agent yet), and releases every resource.
   */
  stop(drainMs?: number): Promise<void>;
}

/** Thrown when Slack refuses the bot token at start-up; the message is one line for the operator. */
export class SlackAuthError extends Error {}

/** Builds the whole bot from configuration: store, agent client, Slack identity check, Bolt app. */
export async function createBot(config: Config, logger: Logger): Promise<Bot> {
  const identity = await checkSlackIdentity(config, logger);
  reportMissingScopes(identity, config.agentView.mode === 'on', logger);
  const metrics = new BotMetrics();
  const rawDb = await openDatabase(config.store);
  const db = instrumentDatabase(rawDb, metrics);
  try {
    await migrate(db);
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
  const store = new SessionStore(
    createSqlKeyv<ThreadSession>(db, { table: SESSIONS_TABLE, namespace: SessionStore.namespace }),
    db,
  );
  const agent = new AgentClient({
    baseUrl: config.agent.baseUrl,
    apiKey: config.agent.apiKey,
    timeoutMs: config.agent.timeoutMs,
    // One socket per thread in flight: threads must never queue behind each other for a connection.
    maxSockets: WORKER_CONCURRENCY,
    onCall: agentCallObserver(metrics),
  });
  const deleter = new SessionDeleter(db, agent, logger, {
    onDeleted: (reason) => metrics.sessionsDeleted.inc({ reason }),
    retryBaseMs: config.sessions.deleteRetryMs,
    pollMs: Math.min(config.sessions.deleteRetryMs, 30_000),
  });
  const idleTtlMs = config.sessions.idleTtlMs;
  const sessions = new SessionManager(
    store,
    agent,
    deleter,
    logger,
    idleTtlMs > 0 ? Math.min(60_000, idleTtlMs / 10) : 60_000,
  );
  const sweeper = new IdleSweeper(sessions, config.sessions.idleTtlMs, logger);
  const agentFor = agentRouter(config.agent);
  const owner = `${hostname()}/${process.pid}/${randomBytes(3).toString('hex')}`;
  const inbox = new Inbox(db, owner, config.delivery.leaseMs);
  const claims = new MessageClaims(db);

  let draining = false;
  const routes = [...healthRoutes(() => !draining, db), metricsRoute(metrics)];
  // One transport (and so one connection pool) for Bolt's client and the answer client.
  const slackFetch = instrumentedSlackFetch(
    metrics,
    webApiTransport({ maxSockets: SLACK_MAX_SOCKETS, timeoutMs: SLACK_CALL_TIMEOUT_MS }),
  );
  const slackClientOptions = {
    slackApiUrl: config.slack.apiUrl,
    // Bolt's default of 100 concurrent Web API calls would make threads wait on each other in a burst.
    maxRequestConcurrency: 1_000,
    // The transport times calls out itself (one timer per call, not an AbortSignal per call).
    timeout: 0,
    // A few quick retries: Bolt's default keeps retrying a post for half an hour, holding the thread.
    retryConfig: { retries: 4, factor: 2, minTimeout: 500, maxTimeout: 5_000 },
  };
  // The intake needs the app's client (for after-ack notices) and the app needs the intake: tie them late.
  let intake: Intake | undefined;
  const app = new DurableApp(
    {
      token: config.slack.botToken,
      botUserId: identity.botUserId,
      botId: identity.botId,
      // auth.test already ran above; Bolt need not repeat it per event.
      tokenVerificationEnabled: false,
      convoStore: false,
      logger: boltLogger(logger),
      clientOptions: { ...slackClientOptions, fetch: slackFetch as typeof fetch },
      ...(config.slack.connection.mode === 'socket'
        ? {
            socketMode: true,
            appToken: config.slack.connection.appToken,
            customRoutes: routes,
            installerOptions: { port: config.port, clientOptions: { slackApiUrl: config.slack.apiUrl } },
          }
        : {
            receiver: new SlackHttpReceiver({
              signingSecret: config.slack.connection.signingSecret,
              port: config.port,
              routes,
              bodyLimit: MAX_REQUEST_BODY_BYTES,
              logger,
            }),
          }),
    },
    async (envelope) => {
      if (draining) throw new Error('shutting down: not accepting events');
      await intake?.accept(envelope);
    },
  );

  // Replies and working indicators go by AnswerWebClient's short path; it shares Bolt's client options.
  const answerClient = new AnswerWebClient(config.slack.botToken, {
    ...slackClientOptions,
    fetch: slackFetch,
    logger: boltLogger(logger),
  });
  const access = new AccessPolicy(config.access);
  const agentViewConversations = new AgentViewConversations(db, config.agentView.mode);
  const relay = new Relay({
    inbox,
    agentFor,
    agent,
    sessions,
    indicators: new WorkIndicators(
      answerClient,
      logger,
      config.conversation.slowNoticeMs,
      config.conversation.workingIndicatorDelayMs,
    ),
    slack: answerClient,
    botUserId: identity.botUserId,
    resolveUserName: cachedUserNameResolver(app.client),
    maxPromptChars: config.conversation.maxPromptChars,
    logger,
  });
  const worker = new Worker(inbox, relay.run, logger, {
    concurrency: WORKER_CONCURRENCY,
    pollMs: Math.max(100, Math.min(1_000, config.delivery.leaseMs / 4)),
    leaseMs: config.delivery.leaseMs,
  });
  intake = new Intake({
    inbox,
    sessions,
    claims,
    relay,
    agentFor,
    botUserId: identity.botUserId,
    mentionOnly: config.conversation.mentionOnly,
    agentView: config.agentView,
    agentViewConversations,
    worker,
    access,
    userRateLimit: config.access.userRateLimit,
    metrics,
    logger,
  });
  metrics.collectOnScrape(async () => ({ inFlight: worker.inFlight, ...(await inbox.counts()) }));
  registerCommands(app, {
    command: config.slashCommand,
    intake,
    sessions,
    agent,
    workspaceUrl: identity.url,
    access,
    agentViewConversations,
    logger,
  });
  app.error(async (error) => {
    logger.error({ err: error }, 'unhandled error in a Slack listener');
  });

  let housekeeping: NodeJS.Timeout | undefined;
  return {
    app,
    identity,
    sessions,
    deleter,
    inbox,
    metrics,
    async start() {
      // The embedded store is locked to this process, so jobs left running belong to a process that is gone.
      if (db.kind === 'embedded') await inbox.reclaimAll();
      worker.start();
      deleter.start();
      sweeper.start();
      housekeeping = setInterval(() => {
        Promise.all([claims.prune(), inbox.prune()]).catch((error: unknown) =>
          logger.warn({ err: error }, 'could not prune old inbox entries'),
        );
      }, HOUSEKEEPING_INTERVAL_MS);
      housekeeping.unref();
      await app.start(config.port);
      logger.info(
        {
          mode: config.slack.connection.mode,
          port: config.port,
          store: db.kind,
          botUserId: identity.botUserId,
          owner,
        },
        'slack-agent-bridge is running',
      );
    },
    async stop(drainMs = 10_000) {
      draining = true;
      sweeper.stop();
      clearInterval(housekeeping);
      await app
        .stop()
        .catch((error: unknown) => logger.warn({ err: error }, 'error while stopping the Slack receiver'));
      const { finished, handedBack } = await worker.stop(drainMs);
      if (!finished) logger.warn({ handedBack }, 'stopped before all in-flight work finished');
      await deleter.stop();
      agent.close();
      await db
        .close()
        .catch((error: unknown) => logger.warn({ err: error }, 'error while closing the store'));
    },
  };
}

async function checkSlackIdentity(config: Config, logger: Logger): Promise<BotIdentity> {
  const client = new WebClient(config.slack.botToken, {
    slackApiUrl: config.slack.apiUrl,
    // Fail fast at start-up instead of Bolt's default of retrying for half an hour.
    retryConfig: { retries: 2, factor: 2, minTimeout: 500, maxTimeout: 2000 },
    logger: boltLogger(logger),
  });
  let result: Awaited<ReturnType<WebClient['auth']['test']>>;
  try {
    result = await client.auth.test();
  } catch (error) {
    const code = slackError(error);
    if (code) throw new SlackAuthError(`SLACK_BOT_TOKEN was rejected by Slack (auth.test: ${code})`);
    throw new SlackAuthError(
      `cannot reach Slack at ${config.slack.apiUrl} (auth.test failed: ${error instanceof Error ? error.message : String(error)})`,
    );
  }
  if (!result.user_id) {
    throw new SlackAuthError('auth.test did not return the bot user id; is SLACK_BOT_TOKEN a bot token?');
  }
  return {
    teamId: result.team_id,
    botUserId: result.user_id,
    botId: result.bot_id,
    url: result.url,
    scopes: result.response_metadata?.scopes,
  };
}

/** One clear line per scope the token lacks, naming the manifest entry that fixes it. */
function reportMissingScopes(identity: BotIdentity, agentView: boolean, logger: Logger): void {
  const missing = missingScopes(identity.scopes, agentView);
  if (missing === undefined) {
    logger.info('Slack did not report the granted scopes; skipping the scope self-check');
    return;
  }
  for (const scope of missing) {
    const neededFor = scopePurpose(scope);
    logger.warn(
      { scope, neededFor },
      `Slack scope "${scope}" is not granted (needed for ${neededFor}): add it under oauth_config.scopes.bot in manifest.yml and reinstall the app` +
        (scope in AGENT_VIEW_SCOPES ? ', or set SLACK_AGENT_VIEW=false for the classic bot' : ''),
    );
  }
}

function metricsRoute(metrics: BotMetrics): CustomRoute {
  return {
    path: '/metrics',
    method: ['GET'],
    handler: (_req: IncomingMessage, res: ServerResponse) => {
      metrics.registry.metrics().then(
        (body) => {
          res.writeHead(200, { 'content-type': metrics.registry.contentType });
          res.end(body);
        },
        () => {
          res.writeHead(500);
          res.end();
        },
      );
    },
  };
}

function healthRoutes(isAcceptingWork: () => boolean, db: SqlDatabase): CustomRoute[] {
  const json = (res: ServerResponse, status: number, body: object) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };
  return [
    {
      path: '/healthz',
      method: ['GET'],
      handler: (_req: IncomingMessage, res: ServerResponse) => json(res, 200, { status: 'ok' }),
    },
    {
      path: '/readyz',
      method: ['GET'],
      handler: (_req: IncomingMessage, res: ServerResponse) => {
        if (!isAcceptingWork()) {
          json(res, 503, { status: 'draining' });
          return;
        }
        const timeout = new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('store check timed out')), 2_000).unref(),
        );
        Promise.race([db.query('SELECT 1'), timeout]).then(
          () => json(res, 200, { status: 'ready', store: 'ok', slack: 'ok' }),
          () => json(res, 503, { status: 'not ready', store: 'unreachable' }),
        );
      },
    },
  ];
}
