import type { CustomRoute } from '@slack/bolt';
import { Readiness, type RouteHandler } from '../observability/health.js';
import type { StoreOutagePolicy } from '../slack-in/store-outage.js';
import type { Database } from '../store/database.js';
import type { EventAdmission } from './lifecycle.js';

/**
 * What the readiness check asks of the bot's parts: events still taken, the store answering and taking
 * writes (required unless a long outage has events acknowledged without it), and in Socket Mode the socket.
 */
export function botReadiness(parts: {
  admission: EventAdmission;
  db: Database;
  storeOutage: StoreOutagePolicy;
  /** Socket Mode only: whether the socket to Slack is connected. */
  slackConnected: (() => boolean) | undefined;
}): Readiness {
  const { admission, db, storeOutage, slackConnected } = parts;
  return new Readiness({
    accepting: () => admission.accepting,
    store: () =>
      // A failed check starts the outage clock (a replica with no traffic); only a recorded event ends it, as a
      // store that answers reads may still refuse writes (a read-only failover, a full disk).
      db.ping().catch((error: unknown) => {
        storeOutage.failed();
        throw error;
      }),
    storeWrites: () => db.writeProblem?.(),
    // Past the outage bound events are acknowledged without the store: a balancer must keep sending them.
    storeRequired: () => !storeOutage.acknowledging,
    slackConnected,
  });
}

/** The health routes in Bolt's form, for the HTTP receiver on PORT. */
export function customRoutes(handlers: Record<string, RouteHandler>): CustomRoute[] {
  return Object.entries(handlers).map(([path, handler]) => ({ path, method: ['GET', 'HEAD'], handler }));
}
