import type { Server, ServerResponse } from 'node:http';
import {
  App,
  type AppOptions,
  type Logger as BoltLogger,
  type CustomRoute,
  type InstallationStore,
  type ReceiverEvent,
  SocketModeReceiver,
} from '@slack/bolt';
import type { SlackConnection } from '../config/index.js';
import { capConnections } from '../observability/connection-cap.js';
import type { Logger } from '../observability/logger.js';
import { dropConnectionsWhileClosing } from '../observability/server-close.js';
import type { Tracing } from '../observability/tracing.js';
import { type EventEnvelope, envelopeOf } from './events.js';
import { GuardedHTTPReceiver } from './http-receiver.js';
import {
  INSTALL_PATH,
  OAUTH_REDIRECT_PATH,
  renderInstallFailurePage,
  renderInstallPage,
} from './install-page.js';

/** A client that has not sent its whole request by then is cut off (Slack sends at once). */
const REQUEST_TIMEOUT_MS = 10_000;
const HEADERS_TIMEOUT_MS = 5_000;
/** How often Node looks for requests past those timeouts; its default (30 s) would let them run 40 s. */
const TIMEOUT_CHECK_MS = 1_000;
/** Idle keep-alive connections stay open longer than load balancers' usual 60 s, so they close them first. */
const KEEP_ALIVE_MS = 65_000;
/**
 * Connections open at once on the public port: beyond, the oldest one not being answered is closed, so that
 * whoever holds that many open never shuts out Slack's deliveries or a load balancer's probes.
 */
const MAX_CONNECTIONS = 1_000;

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
      const envelope = envelopeOf(body);
      if (!envelope) this.log.warn('ignored an event_callback without a usable event');
      else {
        try {
          await this.intake(envelope);
        } catch (error) {
          // Bolt's own line for this names no cause; the operator's line does.
          this.log.warn(
            { err: error, eventId: envelope.event_id, type: envelope.event.type },
            'could not record a Slack event; not acknowledged, so Slack delivers it again',
          );
          throw error;
        }
      }
      // Recorded, but slower than the receiver waits (it answered 503 already): Slack's retry is a duplicate.
      await event.ack().catch((error: unknown) => this.log.debug({ err: error }, 'acknowledged too late'));
      return;
    }
    if (body.type === 'app_rate_limited') {
      // No event: Slack says it is dropping this app's events in a workspace for the rest of the minute
      // (Events API rate limiting, on docs.slack.dev). Bolt knows no such type; answered 200 as Slack asks.
      this.log.warn(
        { team: (body as { team_id?: unknown }).team_id },
        "Slack is dropping this app's events in a workspace: it sent more than Slack's limit (30,000 an hour)",
      );
      await event.ack();
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
      const command = (body as { command?: unknown }).command;
      // A command the manifest routes here that the bot does not answer: its users see nothing at all.
      if (typeof command === 'string')
        this.log.warn(
          { command },
          'a slash command this bot does not answer (set SLASH_COMMAND to the command in the manifest)',
        );
      else
        this.log.debug(
          { type: body.type },
          'a Slack request no listener handled was acknowledged and ignored',
        );
      await event.ack();
    }
  }
}

/** The one workspace's bot, or (OAuth mode) Bolt's installer over the installations. */
export type SlackAppCredentials =
  | { mode: 'single'; botToken: string; botUserId: string; botId?: string }
  | {
      mode: 'oauth';
      clientId: string;
      clientSecret: string;
      stateSecret: string;
      installationStore: InstallationStore;
      /** Bot scopes asked for on the install page. */
      scopes: string[];
    };

export interface SlackAppOptions {
  credentials: SlackAppCredentials;
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
  const { credentials } = options;
  const oauth = credentials.mode === 'oauth' ? installerOf(credentials, options) : undefined;
  const receiver =
    options.connection.mode === 'socket'
      ? new SocketModeReceiver({
          appToken: options.connection.appToken,
          logger: options.boltLogger,
          installerOptions: { clientOptions: { slackApiUrl: options.apiUrl } },
          ...(oauth && {
            ...oauth,
            // Socket Mode serves the install pages on a server of its own, on PORT (Bolt's design), with the
            // health routes beside them.
            installerOptions: { ...oauth.installerOptions, port: options.port },
            customRoutes: options.routes,
          }),
        })
      : new GuardedHTTPReceiver(
          {
            signingSecret: options.connection.signingSecret,
            endpoints: '/slack/events',
            customRoutes: options.routes,
            logger: options.boltLogger,
            ...oauth,
          },
          options.logger,
        );
  const app = new DurableApp(
    {
      ...(credentials.mode === 'single' && {
        token: credentials.botToken,
        botUserId: credentials.botUserId,
        botId: credentials.botId,
      }),
      // auth.test already ran at start-up (OAuth mode: at install); Bolt need not repeat it per event.
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
      capConnections(server, MAX_CONNECTIONS);
    },
    async stop() {
      // Idle keep-alive connections would hold close() for a minute; busy ones get a few seconds to answer.
      const done = server ? dropConnectionsWhileClosing(server, 5_000) : () => {};
      try {
        await app.stop();
      } finally {
        done();
      }
    },
  };
}

/**
 * Bolt's own installer (@slack/oauth): the install page, the state it signs, the code exchange on the
 * redirect, and authorize through the installation store. Slack's authorize page is found beside SLACK_API_URL
 * (https://slack.com/api/ → https://slack.com/oauth/v2/authorize), so a fake Slack serves it in tests.
 */
function installerOf(
  credentials: Extract<SlackAppCredentials, { mode: 'oauth' }>,
  options: Pick<SlackAppOptions, 'apiUrl'>,
) {
  return {
    clientId: credentials.clientId,
    clientSecret: credentials.clientSecret,
    stateSecret: credentials.stateSecret,
    installationStore: credentials.installationStore,
    scopes: credentials.scopes,
    installerOptions: {
      installPath: INSTALL_PATH,
      redirectUriPath: OAUTH_REDIRECT_PATH,
      authorizationUrl: new URL('../oauth/v2/authorize', options.apiUrl).toString(),
      // Our page, not Bolt's: it carries the AI disclaimer Slack asks for beside "Add to Slack".
      renderHtmlForInstallPath: renderInstallPage,
      // Our page, not Bolt's, when no installation came of the redirect: a Cancel is not "Something Went Wrong".
      callbackOptions: {
        failure: (error: { code: string }, _options: unknown, _req: unknown, res: ServerResponse) => {
          const page = renderInstallFailurePage(error.code);
          res.writeHead(page.status, { 'content-type': 'text/html; charset=utf-8' }).end(page.html);
        },
      },
      stateVerification: true,
      clientOptions: { slackApiUrl: options.apiUrl },
    },
  };
}
