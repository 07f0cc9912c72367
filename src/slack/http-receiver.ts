import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { App, CustomRoute, Receiver, ReceiverEvent } from '@slack/bolt';
import { isValidSlackRequest } from '@slack/bolt';
import type { Logger } from '../observability/logger.js';

/** How long an idle keep-alive connection stays open (above the usual 60 s of load balancers). */
const IDLE_CONNECTION_MS = 65_000;
/** At shutdown, connections still busy after this are cut (acknowledgements take milliseconds). */
const CLOSE_BOUND_MS = 5_000;

export interface SlackHttpReceiverOptions {
  signingSecret: string;
  port: number;
  /** Slack's path for events, slash commands and interactivity. */
  path?: string;
  /** Larger request bodies are refused with 413 without being read further. */
  bodyLimit: number;
  routes: CustomRoute[];
  logger: Logger;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Serves Slack's HTTP deliveries at POST /slack/events (plus the operator routes). It replaces Bolt's
 * HTTPReceiver so that every bad request gets a clear 4xx and never reaches Bolt: oversized bodies (413),
 * bad or stale signatures (401), and bodies that are not a JSON object or a form (400). Bolt's own receiver
 * leaves a signed but non-object body (e.g. `null`) unanswered with an unhandled rejection.
 */
export class SlackHttpReceiver implements Receiver {
  private app: App | undefined;
  private server: Server | undefined;
  private readonly path: string;

  constructor(private readonly options: SlackHttpReceiverOptions) {
    this.path = options.path ?? '/slack/events';
  }

  init(app: App): void {
    this.app = app;
  }

  start(): Promise<Server> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        this.options.logger.error({ err: error }, 'unexpected error while serving an HTTP request');
        if (!res.headersSent) respond(res, 500);
      });
    });
    // Slack and load balancers reuse idle connections for longer than Node's 5 s default; closing one just as
    // a request arrives on it resets that request (a failed delivery Slack has to retry).
    server.keepAliveTimeout = IDLE_CONNECTION_MS;
    server.headersTimeout = IDLE_CONNECTION_MS + 1_000;
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, () => resolve(server));
    });
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      // close() drops the idle keep-alive connections; a busy one would stay open for IDLE_CONNECTION_MS
      // after its answer, so it closes as soon as it is answered (or, at the latest, after a bound).
      server.keepAliveTimeout = 1;
      const bound = setTimeout(() => server.closeAllConnections(), CLOSE_BOUND_MS).unref();
      server.close(() => {
        clearTimeout(bound);
        resolve();
      });
    });
    this.server = undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { pathname } = new URL(req.url ?? '/', 'http://localhost');
    const method = (req.method ?? 'GET').toUpperCase();
    if (pathname === this.path) {
      if (method !== 'POST') {
        respond(res, 405);
        return;
      }
      await this.handleSlackRequest(req, res);
      return;
    }
    const route = this.options.routes.find(
      (candidate) =>
        candidate.path === pathname && [candidate.method].flat().some((m) => m.toUpperCase() === method),
    );
    if (route) route.handler(Object.assign(req, { params: {} }), res);
    else respond(res, 404);
  }

  private async handleSlackRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { logger } = this.options;
    let body: Record<string, unknown>;
    let raw: string;
    try {
      raw = await readBody(req, this.options.bodyLimit);
      this.verify(req, raw);
      body = parseBody(raw, String(req.headers['content-type'] ?? ''));
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      logger.warn({ status: error.status, path: this.path }, `refused a Slack request: ${error.message}`);
      respond(res, error.status);
      // Stop reading an oversized body; the client has its answer.
      if (error.status === 413) req.destroy();
      return;
    }
    if (body.ssl_check === '1') {
      respond(res, 200);
      return;
    }
    if (body.type === 'url_verification') {
      respond(res, 200, JSON.stringify({ challenge: body.challenge }), 'application/json');
      return;
    }
    if (!this.app) throw new Error('receiver used before init');

    let acked = false;
    const event: ReceiverEvent = {
      body,
      retryNum: numberHeader(req, 'x-slack-retry-num'),
      retryReason: stringHeader(req, 'x-slack-retry-reason'),
      ack: async (response?: unknown) => {
        if (acked) return;
        acked = true;
        if (response === undefined || response === '') respond(res, 200);
        else if (typeof response === 'string') respond(res, 200, response, 'text/plain');
        else respond(res, 200, JSON.stringify(response), 'application/json');
      },
    };
    try {
      await this.app.processEvent(event);
    } catch (error) {
      // Not acknowledged: Slack delivers the event again (the store may be back by then).
      logger.error({ err: error }, 'could not process a Slack request; answering 500 so Slack retries');
      if (!acked) {
        acked = true;
        respond(res, 500);
      }
    }
  }

  private verify(req: IncomingMessage, raw: string): void {
    const signature = stringHeader(req, 'x-slack-signature');
    const timestamp = numberHeader(req, 'x-slack-request-timestamp');
    if (!signature || timestamp === undefined) throw new HttpError(401, 'missing Slack signature headers');
    const valid = isValidSlackRequest({
      signingSecret: this.options.signingSecret,
      body: raw,
      headers: { 'x-slack-signature': signature, 'x-slack-request-timestamp': timestamp },
    });
    if (!valid) throw new HttpError(401, 'bad signature or a timestamp older than 5 minutes');
  }
}

async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit)
    throw new HttpError(413, `body larger than ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new HttpError(413, `body larger than ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Slack sends JSON (events) or a form (slash commands; interactivity as a `payload` JSON field). */
function parseBody(raw: string, contentType: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    if (contentType.startsWith('application/json')) {
      parsed = JSON.parse(raw);
    } else if (contentType.startsWith('application/x-www-form-urlencoded')) {
      const form = Object.fromEntries(new URLSearchParams(raw));
      parsed = typeof form.payload === 'string' ? JSON.parse(form.payload) : form;
    } else {
      throw new HttpError(415, `unsupported content type "${contentType}"`);
    }
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(400, 'malformed body');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new HttpError(400, 'body is not an object');
  }
  return parsed as Record<string, unknown>;
}

function respond(res: ServerResponse, status: number, body = '', contentType = 'text/plain'): void {
  if (res.headersSent) return;
  res.writeHead(status, body ? { 'content-type': contentType } : {});
  res.end(body);
}

function stringHeader(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function numberHeader(req: IncomingMessage, name: string): number | undefined {
  const value = Number(stringHeader(req, name));
  return Number.isFinite(value) ? value : undefined;
}
