import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import {
  App,
  type AppOptions,
  type Logger as BoltLogger,
  type CustomRoute,
  HTTPReceiver,
  type HTTPReceiverOptions,
  type ReceiverEvent,
  SocketModeReceiver,
} from '@slack/bolt';
import type { SlackConnection } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import type { Tracing } from '../observability/tracing.js';
import { type EventEnvelope, isEventEnvelope } from './events.js';

/** Slack's requests are small (a message event, a form); anything near this is not Slack. */
export const MAX_REQUEST_BODY_BYTES = 512 * 1024;
/** A client that has not sent its whole request by then is cut off (Slack sends at once). */
const REQUEST_TIMEOUT_MS = 10_000;
const HEADERS_TIMEOUT_MS = 5_000;
/** How often Node looks for requests past those timeouts; its default (30 s) would let them run 40 s. */
const TIMEOUT_CHECK_MS = 1_000;
/** Idle keep-alive connections stay open longer than load balancers' usual 60 s, so they close them first. */
const KEEP_ALIVE_MS = 65_000;
/** Connections open at once on the public port: beyond, new ones are refused rather than starving the bot. */
const MAX_CONNECTIONS = 1_000;
/** Slack signs its requests with a timestamp; older than this is a replay (Bolt checks the same). */
const MAX_SIGNATURE_AGE_S = 5 * 60;
/** Slack's SSL check, the one unsigned request, is `ssl_check=1` and a token: a few dozen bytes. */
const MAX_UNSIGNED_BODY_BYTES = 1024;
/** What Slack sends: a timestamp in whole seconds, and a version-0 HMAC-SHA256 in hex. */
const TIMESTAMP_HEADER = /^\d{1,12}$/;
const SIGNATURE_HEADER = /^v0=[0-9a-f]{64}$/;

/**
 * Bolt's App with record-before-ack. Bolt acknowledges Events API requests before any listener runs; here each
 * event is first handed to `intake`, which records it durably, and only then acknowledged. If recording fails
 * the error propagates: Slack gets HTTP 500 (or the Socket Mode envelope stays unacknowledged) and delivers the
 * event again. Everything else (commands, shortcuts, buttons) goes through Bolt's listeners as usual, and a
 * request no listener acknowledged (an unknown payload, a click nobody handles) is acknowledged and ignored
 * rather than left for Slack to time out.
 */
export class DurableApp extends App {
  constructor(
    options: AppOptions,
    private readonly intake: (envelope: EventEnvelope) => Promise<void>,
    private readonly log: Logger,
    private readonly tracing: Tracing,
  ) {
    super(options);
  }

  override processEvent(event: ReceiverEvent): Promise<void> {
    const body = event.body as {
      type?: unknown;
      team_id?: unknown;
      event?: { type?: unknown; channel?: unknown };
    };
    return this.tracing.inSpan(
      'slack request',
      'server',
      {
        'slack.request.type': String(body.type ?? 'unknown'),
        ...(typeof body.team_id === 'string' ? { 'slack.team': body.team_id } : {}),
        ...(typeof body.event?.type === 'string' ? { 'slack.event.type': body.event.type } : {}),
        ...(typeof body.event?.channel === 'string' ? { 'slack.channel': body.event.channel } : {}),
      },
      () => this.handle(event),
    );
  }

  private async handle(event: ReceiverEvent): Promise<void> {
    const body = event.body as { type?: unknown };
    if (body.type === 'event_callback') {
      // A malformed envelope is answered 200 and dropped: Slack would only send it again.
      if (!isEventEnvelope(body)) this.log.warn('ignored an event_callback without a usable event');
      else {
        try {
          await this.intake(body);
        } catch (error) {
          // Bolt's own line for this names no cause; the operator's line does.
          this.log.warn(
            { err: error, eventId: body.event_id, type: body.event.type },
            'could not record a Slack event; not acknowledged, so Slack delivers it again',
          );
          throw error;
        }
      }
      // Recorded, but slower than the receiver waits (it answered 503 already): Slack's retry is a duplicate.
      await event.ack().catch((error: unknown) => this.log.debug({ err: error }, 'acknowledged too late'));
      return;
    }
    let acknowledged = false;
    await super.processEvent({
      ...event,
      ack: async (response) => {
        acknowledged = true;
        await event.ack(response);
      },
    });
    if (!acknowledged) {
      this.log.debug({ type: body.type }, 'a Slack request no listener handled was acknowledged and ignored');
      await event.ack();
    }
  }
}

/**
 * Bolt's HTTPReceiver with the guards it lacks on POST /slack/events. Before Bolt sees a request: a declared
 * body over the limit is refused unread (413); so is a request without Slack's signature headers, with
 * malformed ones or a stale timestamp (401), and one that is neither JSON nor a form (415). Only a signature
 * that looks right needs the body to be checked: the body is read here (up to the limit; Slack's unsigned SSL
 * check up to a few bytes) and must be a JSON object or a form, else 400: Bolt would crash on a signed `null`
 * and leave the request unanswered. Bolt reuses the body
 * read here (`rawBody`) and checks the signature itself. The server's timeouts and connection cap are set in
 * `createSlackApp`.
 */
export class GuardedHTTPReceiver extends HTTPReceiver {
  constructor(options: HTTPReceiverOptions, log: Logger) {
    super({
      ...options,
      bodyLimit: MAX_REQUEST_BODY_BYTES,
      // Not acknowledged in time (the store is slow): 503 before Slack's 3 s, so Slack retries.
      unhandledRequestTimeoutMillis: 2_500,
      unhandledRequestHandler: ({ response }) => {
        log.warn(
          'a Slack request was not acknowledged within 2.5 s; answered 503 so Slack delivers it again',
        );
        if (!response.headersSent) response.writeHead(503).end();
      },
    });
    const boltListener = this.requestListener;
    this.requestListener = (req: IncomingMessage, res: ServerResponse) => {
      if (req.method !== 'POST' || (req.url ?? '/').split('?')[0] !== '/slack/events')
        return boltListener(req, res);
      checkSlackRequest(req).then(
        (status) => {
          if (status === undefined) return boltListener(req, res);
          log.debug({ status }, 'refused a request to /slack/events');
          res.writeHead(status, { connection: 'close' }).end();
        },
        () => {
          // The client hung up or sent a broken body: routine on a public port.
          log.debug('a request to /slack/events was abandoned by its client');
          if (!res.headersSent) res.writeHead(400, { connection: 'close' }).end();
          req.destroy();
        },
      );
    };
  }
}

/** undefined: hand the request to Bolt (its body now read into `rawBody`); otherwise the status to refuse it with. */
async function checkSlackRequest(req: IncomingMessage & { rawBody?: Buffer }): Promise<number | undefined> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > MAX_REQUEST_BODY_BYTES) return 413;
  // Bolt parses exactly these two (a form by its exact type); nothing else is Slack's.
  const contentType = req.headers['content-type'] ?? '';
  const form = contentType === 'application/x-www-form-urlencoded';
  if (!form && !/^application\/json\s*(;|$)/i.test(contentType)) return 415;
  const timestampHeader = req.headers['x-slack-request-timestamp'];
  const signatureHeader = req.headers['x-slack-signature'];
  const signed = timestampHeader !== undefined || signatureHeader !== undefined;
  if (signed) {
    if (typeof timestampHeader !== 'string' || !TIMESTAMP_HEADER.test(timestampHeader)) return 401;
    if (typeof signatureHeader !== 'string' || !SIGNATURE_HEADER.test(signatureHeader)) return 401;
    if (Math.abs(Date.now() / 1000 - Number(timestampHeader)) > MAX_SIGNATURE_AGE_S) return 401;
  } else if (!form) {
    return 401;
  }
  // Slack's SSL check is an unsigned form of a few bytes; anything longer unsigned is refused unread.
  const limit = signed ? MAX_REQUEST_BODY_BYTES : MAX_UNSIGNED_BODY_BYTES;
  if (Number.isFinite(declared) && declared > limit) return signed ? 413 : 401;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return signed ? 413 : 401;
    chunks.push(chunk as Buffer);
  }
  req.rawBody = Buffer.concat(chunks);
  const text = req.rawBody.toString('utf8');
  if (form) {
    const fields = new URLSearchParams(text);
    if (!signed) return fields.get('ssl_check') === '1' ? undefined : 401;
    const payload = fields.get('payload');
    return payload === null || isJsonObject(payload) ? undefined : 400;
  }
  return isJsonObject(text) ? undefined : 400;
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

export interface SlackAppOptions {
  botToken: string;
  botUserId: string;
  botId?: string;
  connection: SlackConnection;
  apiUrl: string;
  port: number;
  /** The address to listen on; undefined: every interface. */
  host?: string;
  /** HTTP mode: the public port's health routes, served beside /slack/events. */
  routes: CustomRoute[];
  /** Options of the WebClient Bolt builds for listeners (the bot itself writes through SlackWrites). */
  clientOptions: AppOptions['clientOptions'];
  boltLogger: BoltLogger;
  intake: (envelope: EventEnvelope) => Promise<void>;
  logger: Logger;
  tracing: Tracing;
}

/** The Bolt app on Bolt's own receivers, HTTP (with guards) or Socket Mode, and how to start and stop it. */
export interface SlackIngress {
  app: DurableApp;
  /** Socket Mode: the WebSocket client, for its connection state. */
  socket?: SocketModeReceiver['client'];
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createSlackApp(options: SlackAppOptions): SlackIngress {
  const receiver =
    options.connection.mode === 'socket'
      ? new SocketModeReceiver({
          appToken: options.connection.appToken,
          logger: options.boltLogger,
          installerOptions: { clientOptions: { slackApiUrl: options.apiUrl } },
        })
      : new GuardedHTTPReceiver(
          {
            signingSecret: options.connection.signingSecret,
            endpoints: '/slack/events',
            customRoutes: options.routes,
            logger: options.boltLogger,
          },
          options.logger,
        );
  const app = new DurableApp(
    {
      token: options.botToken,
      botUserId: options.botUserId,
      botId: options.botId,
      // auth.test already ran at start-up; Bolt need not repeat it per event.
      tokenVerificationEnabled: false,
      convoStore: false,
      logger: options.boltLogger,
      clientOptions: options.clientOptions,
      receiver,
    },
    options.intake,
    options.logger,
    options.tracing,
  );
  if (receiver instanceof SocketModeReceiver) {
    return {
      app,
      socket: receiver.client,
      start: async () => {
        await app.start();
      },
      stop: async () => {
        await app.stop();
      },
    };
  }
  let server: Server | undefined;
  return {
    app,
    async start() {
      server = (await app.start(
        { port: options.port, host: options.host },
        {
          requestTimeout: REQUEST_TIMEOUT_MS,
          headersTimeout: HEADERS_TIMEOUT_MS,
          connectionsCheckingInterval: TIMEOUT_CHECK_MS,
          keepAliveTimeout: KEEP_ALIVE_MS,
        },
      )) as Server;
      server.maxConnections = MAX_CONNECTIONS;
    },
    async stop() {
      // Idle keep-alive connections would hold close() for a minute; busy ones get a few seconds to answer.
      server?.closeIdleConnections();
      const cut = setTimeout(() => server?.closeAllConnections(), 5_000).unref();
      try {
        await app.stop();
      } finally {
        clearTimeout(cut);
      }
    },
  };
}
