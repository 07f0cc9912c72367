import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { within } from '../util/within.js';
import { capConnections } from './connection-cap.js';
import type { BotMetrics } from './metrics.js';
import { dropConnectionsWhileClosing } from './server-close.js';

export interface ReadinessChecks {
  /** False once the bot is shutting down. */
  accepting: () => boolean;
  /** Resolves when the store answers. */
  store: () => Promise<unknown>;
  /** Why the store refuses writes (the embedded store's disk is full or read-only), if it does. */
  storeWrites?: () => string | undefined;
  /** Socket Mode: whether the connection to Slack is up (undefined in HTTP mode). */
  slackConnected?: () => boolean;
  /** False while Slack's events are served without the store (a long outage): it is then reported, not required. */
  storeRequired?: () => boolean;
}

export interface ReadinessState {
  ready: boolean;
  body: Record<string, string>;
}

/** How long one readiness answer is reused: probes and scrapers must not each cost a store query. */
const CACHE_MS = 1_000;
const STORE_CHECK_TIMEOUT_MS = 2_000;

/** Readiness: accepting work, store answering, and (Socket Mode) connected to Slack; cached for a second. */
export class Readiness {
  private cached: { at: number; state: Promise<ReadinessState> } | undefined;

  constructor(private readonly checks: ReadinessChecks) {}

  state(): Promise<ReadinessState> {
    const now = Date.now();
    if (this.cached && now - this.cached.at < CACHE_MS) return this.cached.state;
    const state = this.evaluate();
    this.cached = { at: now, state };
    return state;
  }

  private async evaluate(): Promise<ReadinessState> {
    if (!this.checks.accepting()) return { ready: false, body: { status: 'draining' } };
    const slack =
      this.checks.slackConnected === undefined ? 'ok' : this.checks.slackConnected() ? 'ok' : 'disconnected';
    const answered = await within(this.checks.store(), STORE_CHECK_TIMEOUT_MS).catch(() => undefined);
    const store = answered ? 'ok' : 'unreachable';
    // Answering reads is not enough: every event the bot acknowledges is written first (unless a long outage
    // has the bot acknowledging without the store, when the store is reported, not required).
    const storeRequired = this.checks.storeRequired?.() !== false;
    const writes = store === 'ok' && storeRequired ? this.checks.storeWrites?.() : undefined;
    if (writes !== undefined)
      return { ready: false, body: { status: 'not ready', store: `refusing writes: ${writes}`, slack } };
    const ready = (store === 'ok' || !storeRequired) && slack === 'ok';
    return { ready, body: { status: ready ? 'ready' : 'not ready', store, slack } };
  }
}

/**
 * The operator routes are GET requests without a body, from probes and scrapers on the cluster network: a
 * request whose headers take over 2 s is not one of theirs. Node looks for requests past these bounds every
 * connectionsCheckingInterval (default 30 s): here once a second.
 */
const ROUTE_SERVER_TIMEOUTS = {
  headersTimeout: 2_000,
  requestTimeout: 2_000,
  keepAliveTimeout: 3_000,
  connectionsCheckingInterval: 1_000,
};
/** A connection silent this long (sending nothing, or not reading its answer) is closed: Node's bounds above start with a request's first byte. */
const IDLE_SOCKET_TIMEOUT_MS = 3_000;
/** Open connections kept at once; beyond, the oldest one not being answered is closed (see capConnections). */
const MAX_CONNECTIONS = 100;

export type RouteHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** `/healthz` (the process runs) and `/readyz` (see Readiness). */
export function healthHandlers(readiness: Readiness): Record<string, RouteHandler> {
  return {
    '/healthz': (_req, res) => json(res, 200, { status: 'ok' }),
    '/readyz': (_req, res) => {
      readiness.state().then(
        ({ ready, body }) => json(res, ready ? 200 : 503, body),
        () => json(res, 503, { status: 'not ready' }),
      );
    },
  };
}

/** Prometheus text format. */
export function metricsHandler(metrics: BotMetrics): RouteHandler {
  return (_req, res) => {
    metrics.registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
      },
      () => json(res, 500, { status: 'metrics unavailable' }),
    );
  };
}

/** A small server for operator routes (GET only): the admin port, and the public port in Socket Mode. */
export async function startRouteServer(
  port: number,
  host: string | undefined,
  handlers: Record<string, RouteHandler>,
): Promise<Server> {
  const server = createServer(ROUTE_SERVER_TIMEOUTS, (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const handler = handlers[path];
    if (!handler) return json(res, 404, { status: 'not found' });
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return json(res, 405, { status: 'method not allowed' });
    handler(req, res);
  });
  server.timeout = IDLE_SOCKET_TIMEOUT_MS;
  capConnections(server, MAX_CONNECTIONS);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

export async function stopRouteServer(server: Server | undefined): Promise<void> {
  if (!server) return;
  const done = dropConnectionsWhileClosing(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  done();
}

function json(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
