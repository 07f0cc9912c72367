import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { BotMetrics } from './metrics.js';

export interface ReadinessChecks {
  /** False once the bot is shutting down. */
  accepting: () => boolean;
  /** Resolves when the store answers. */
  store: () => Promise<unknown>;
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
    const store = await Promise.race([
      this.checks.store().then(() => 'ok'),
      new Promise<string>((resolve) => setTimeout(resolve, STORE_CHECK_TIMEOUT_MS, 'unreachable').unref()),
    ]).catch(() => 'unreachable');
    const ready = (store === 'ok' || this.checks.storeRequired?.() === false) && slack === 'ok';
    return { ready, body: { status: ready ? 'ready' : 'not ready', store, slack } };
  }
}

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
  // Node looks for requests past their timeouts every connectionsCheckingInterval (default 30 s): once a second.
  const options = { requestTimeout: 5_000, headersTimeout: 5_000, connectionsCheckingInterval: 1_000 };
  const server = createServer(options, (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const handler = handlers[path];
    if (!handler) return json(res, 404, { status: 'not found' });
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return json(res, 405, { status: 'method not allowed' });
    handler(req, res);
  });
  server.maxConnections = 100;
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
  server.closeIdleConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

function json(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
