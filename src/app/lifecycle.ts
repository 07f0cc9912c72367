import type { Server } from 'node:http';
import type { AgentClient } from '../agent/client.js';
import type { Config } from '../config/index.js';
import type { Relay } from '../conversation/relay.js';
import type { Inbox } from '../inbox/inbox.js';
import type { WorkspaceRemovals } from '../inbox/removals.js';
import type { Worker } from '../inbox/worker.js';
import { type RouteHandler, startRouteServer, stopRouteServer } from '../observability/health.js';
import type { Logger } from '../observability/logger.js';
import type { Tracing } from '../observability/tracing.js';
import type { SessionDeleter } from '../sessions/deleter.js';
import type { IdleSweeper } from '../sessions/idle-sweeper.js';
import type { SlackIngress } from '../slack-in/bolt-app.js';
import type { Database } from '../store/database.js';
import type { Housekeeping } from './housekeeping.js';

/**
 * Whether the bot takes Slack's events: true until it starts stopping. Made before the parts that ask it
 * (readiness, the event intake), so they are built in the order they are wired.
 */
export class EventAdmission {
  private open = true;

  get accepting(): boolean {
    return this.open;
  }

  /** From now on events are refused (Slack delivers them again) and readiness says so. */
  close(): void {
    this.open = false;
  }
}

/** The running parts of a built bot, as far as starting and stopping them goes. */
export interface LifecycleParts {
  admission: EventAdmission;
  config: Config;
  logger: Logger;
  tracing: Tracing;
  db: Database;
  /** This process's name on the jobs it leases. */
  owner: string;
  inbox: Pick<Inbox, 'expireLeases'>;
  worker: Pick<Worker, 'start' | 'stop'>;
  relay: Pick<Relay, 'abandonRunning'>;
  deleter: Pick<SessionDeleter, 'start' | 'stop'>;
  removals: Pick<WorkspaceRemovals, 'start' | 'stop'>;
  sweeper: Pick<IdleSweeper, 'start' | 'stop'>;
  housekeeping: Housekeeping;
  agent: Pick<AgentClient, 'close'>;
  slackIngress: Pick<SlackIngress, 'start' | 'stop'>;
  /** The health endpoints (on ADMIN_PORT, and on PORT in Socket Mode). */
  health: Record<string, RouteHandler>;
  /** ADMIN_PORT's routes besides the health endpoints. */
  adminRoutes: Record<string, RouteHandler>;
}

/**
 * The order the bot starts and stops in. Starting: the background work first, Slack's events last, so nothing
 * is taken before it can be worked on. Stopping: events refused first, then in-flight work drained, then what
 * that work used, the store last.
 */
export class BotLifecycle {
  private adminServer: Server | undefined;
  private healthServer: Server | undefined;

  constructor(private readonly parts: LifecycleParts) {}

  async start(): Promise<void> {
    const { config, db, inbox, worker, deleter, removals, sweeper, housekeeping, health, logger } =
      this.parts;
    // The embedded store is one process's, so jobs left running belong to a process that is gone.
    if (db.kind === 'embedded') await inbox.expireLeases();
    worker.start();
    deleter.start();
    removals.start();
    sweeper.start();
    housekeeping.start();
    this.adminServer = await startRouteServer(config.adminPort, config.host, {
      ...health,
      ...this.parts.adminRoutes,
    });
    // Socket Mode needs no public endpoint: PORT serves the health endpoints only. With OAuth, Bolt's receiver
    // serves its install pages there, and the health endpoints beside them (see createSlackApp).
    if (config.slack.connection.mode === 'socket' && config.slack.auth.mode === 'single') {
      this.healthServer = await startRouteServer(config.port, config.host, health);
    }
    await this.parts.slackIngress.start();
    logger.info(
      {
        mode: config.slack.connection.mode,
        port: config.port,
        adminPort: config.adminPort,
        store: db.kind,
        owner: this.parts.owner,
      },
      'slack-agent-bridge is running',
    );
  }

  /**
   * Stops taking events, finishes in-flight work for up to `drainMs` (then hands back what was not sent to
   * the agent yet), and releases every resource.
   */
  async stop(drainMs: number): Promise<void> {
    const { logger, worker, relay, deleter, removals, sweeper, housekeeping, agent, tracing, db } =
      this.parts;
    this.parts.admission.close();
    sweeper.stop();
    housekeeping.stop();
    await this.parts.slackIngress
      .stop()
      .catch((error: unknown) => logger.warn({ err: error }, 'error while stopping the Slack receiver'));
    const { finished, handedBack } = await worker.stop(drainMs);
    if (!finished) {
      relay.abandonRunning();
      logger.warn({ handedBack }, 'stopped before all in-flight work finished');
    }
    // A removal under way schedules session deletions: it ends first.
    await removals.stop();
    await deleter.stop();
    await housekeeping.settled();
    await Promise.all([stopRouteServer(this.adminServer), stopRouteServer(this.healthServer)]);
    agent.close();
    await tracing
      .shutdown()
      .catch((error: unknown) => logger.warn({ err: error }, 'could not send the last spans'));
    await db.close().catch((error: unknown) => logger.warn({ err: error }, 'error while closing the store'));
  }
}
