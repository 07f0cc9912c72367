import { randomUUID } from 'node:crypto';
import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import {
  agentSessionStoppedEvent,
  agentSessionTitleChangedEvent,
  DEFAULT_APP_ID,
  nextTs,
  type SlackEventEnvelope,
} from '../helpers/slack-events.js';
import { validateMessageBlocks } from './slack-blocks.js';
import {
  type ContractRefusal,
  type ConversationType,
  checkArguments,
  checkScope,
  documentsError,
  loadContracts,
  type SlackContracts,
  undocumentedAnswer,
} from './slack-contracts.js';
import { readManifest } from './slack-manifest.js';
import { type FakeOAuthAppOptions, FakeSlackOAuth } from './slack-oauth.js';
import {
  OUTSIDE_MARKETPLACE_PAGE_MAX,
  OUTSIDE_MARKETPLACE_READS,
  type RateLimit,
  RateLimiter,
} from './slack-rate-limits.js';
import {
  callerOf,
  type FakeCaller,
  type FakeInstallation,
  type FakeOrg,
  FakeSlackTenancy,
  type FakeWorkspace,
  type TokenCheck,
  type TokenRotation,
} from './slack-tenancy.js';

export type SlackTokenKind = 'bot' | 'app' | 'none' | 'invalid';

export interface SlackApiCall {
  method: string;
  /** Request arguments without the token; JSON-encoded form fields (blocks, metadata, ...) are decoded. */
  args: Record<string, unknown>;
  at: number;
  tokenKind: SlackTokenKind;
  /** The installation whose bot token made the call (which workspace or org it acts for). */
  caller?: FakeCaller;
  /** Turned away by the workspace's rate limit (HTTP 429); the client waits and calls again. */
  throttled?: true;
}

export interface SlackApiResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

export type SlackCallListener = (call: SlackApiCall, response: SlackApiResponse) => void;

export type SlackFailure =
  | { type: 'error'; error: string }
  | { type: 'rate_limited'; retryAfterSeconds: number }
  /** `taken`: Slack acted on the call before answering with this status (a gateway timing out, say). */
  | { type: 'http'; status: number; taken?: boolean }
  /**
   * The connection is cut without an answer, when the answer would have been sent (after any latency).
   * `taken`: Slack acted on the call first (a post is in the channel), as when the answer is lost on its way
   * back; the client cannot tell which happened.
   */
  | { type: 'reset'; taken: boolean };

export interface FakeSlackUser {
  name: string;
  realName?: string;
  isBot?: boolean;
}

export interface FakeSlackChannel {
  name?: string;
  type?: 'channel' | 'group' | 'im' | 'mpim';
  isArchived?: boolean;
  /** The other member of an IM. */
  user?: string;
  /**
   * Whether the bot is a member (default true). A private channel (`group`, `mpim`) the bot is not in is invisible
   * to it, as in Slack: conversations.info and conversations.replies answer `channel_not_found`.
   */
  botIsMember?: boolean;
  /**
   * The people in it, when a test cares: chat.postEphemeral to anyone else answers `user_not_in_channel` (its
   * `user` "should be in the channel"). Unset: everyone is. An IM's members are its `user` and the bot.
   */
  members?: string[];
  /** The workspace it belongs to (default the fake's `teamId`): another workspace's token cannot see it. */
  teamId?: string;
  /** Other workspaces it is shared with (a channel shared across an org, or Slack Connect). */
  sharedWith?: string[];
}

export interface FakeSlackOptions {
  port?: number;
  teamId?: string;
  teamName?: string;
  botUserId?: string;
  botId?: string;
  appId?: string;
  botToken?: string;
  appToken?: string;
  users?: Record<string, FakeSlackUser>;
  channels?: Record<string, FakeSlackChannel>;
  /**
   * The app manifest installed in the workspace (a path or file URL; default the repository's manifest.yml).
   * Its `oauth_config.scopes.bot` are exactly the bot scopes granted.
   */
  manifest?: string | URL;
  /**
   * Granted bot scopes instead of the manifest's, for tests about missing scopes; reported in the
   * `x-oauth-scopes` response header. A call needing a scope not granted answers `missing_scope`.
   */
  scopes?: readonly string[];
  /**
   * Per-method limits replacing Slack's (slack-rate-limits.ts), only for a test that must make more calls in
   * one workspace than Slack allows; name the method, there is no switch for all.
   */
  rateLimits?: Readonly<Record<string, RateLimit>>;
  /** Artificial response delay per Web API method; the key `*` applies to every method. */
  latencyMs?: Record<string, number>;
  /** Interval of server-initiated WebSocket pings, as Slack sends; 0 disables. */
  socketPingIntervalMs?: number;
  /**
   * Whether the app subscribes to `agent_session_stopped` (default true). When not, Slack shows no stop
   * button and agents.sessions.setStatus warns `missing_agent_session_stopped_event_subscription`.
   */
  agentSessionStoppedSubscribed?: boolean;
  /**
   * The app is distributed outside the Slack Marketplace, unapproved (as a multi-workspace install with public
   * distribution can be): Slack's limits for such apps on conversations.history and conversations.replies
   * apply, 1 call a minute and at most 15 messages a page ("Effective May 29, 2025, all newly-created Slack
   * apps that have not been approved for the Slack Marketplace will be subject to new rate limits for the
   * conversations.history and conversations.replies API methods": api.slack.com/apis/rate-limits; the figures
   * from Slack's changelog of that date). `rateLimits` still wins for a method it names.
   */
  outsideMarketplace?: boolean;
  /**
   * Whether the app has `features.agent_view` (default true, as manifest.yml does). Without it agents.sessions.*
   * answer `feature_disabled` and assistant.threads.setSuggestedPrompts `not_agent_app` (see
   * addAgentSessionHandlers for the sources).
   */
  agentView?: boolean;
  /**
   * Whether agents.sessions.setStatus answers with the session's `title` (default true: @slack/web-api's
   * AgentsSessionsSetStatusResponse, generated from Slack's answers, has one; its reference does not say when).
   * False is the other reading: no title in the answer.
   */
  agentSessionTitleAnswered?: boolean;
  /** Every request (Web API, response URLs, mounts, WebSocket) this refuses is answered 403 and ignored. */
  acceptRequest?: (req: IncomingMessage) => boolean;
  /**
   * The app's OAuth settings (client id and secret, Redirect URLs, org_deploy_enabled: the manifest's unless
   * given) for installs through `/oauth/v2/authorize` and oauth.v2.access; see slack-oauth.ts. The manifest's
   * redirect_urls are not taken (they hold a placeholder host): without `redirectUrls` every install is refused.
   */
  oauth?: FakeOAuthAppOptions;
  /**
   * settings.token_rotation_enabled (default: the manifest's): installs then get expiring tokens (`expires_in`,
   * default 43200 s) and single-use refresh tokens.
   */
  tokenRotation?: boolean | Partial<TokenRotation>;
  /** More workspaces besides the fake's own (`teamId`); an `enterpriseId` puts one in an org of `orgs`. */
  workspaces?: FakeWorkspace[];
  /** Enterprise Grid organisations. */
  orgs?: FakeOrg[];
  /** The org the fake's own workspace belongs to. */
  enterpriseId?: string;
  /**
   * Whether the app starts installed in the fake's own workspace with `botToken` (default true). An OAuth test
   * sets false and installs through the consent page.
   */
  preinstalled?: boolean;
}

export interface SlackReaction {
  name: string;
  users: string[];
  count: number;
}

/** A message as Slack returns it from conversations.replies / history. */
export interface SlackMessage {
  type: 'message';
  ts: string;
  text: string;
  user?: string;
  bot_id?: string;
  app_id?: string;
  team?: string;
  subtype?: string;
  hidden?: boolean;
  thread_ts?: string;
  parent_user_id?: string;
  blocks?: unknown[];
  attachments?: unknown[];
  metadata?: unknown;
  edited?: { user: string; ts: string };
  bot_profile?: Record<string, unknown>;
  reply_count?: number;
  reply_users?: string[];
  reply_users_count?: number;
  latest_reply?: string;
  reactions?: SlackReaction[];
}

export interface SeedMessage {
  text: string;
  user?: string;
  ts?: string;
  threadTs?: string;
  botId?: string;
  subtype?: string;
  blocks?: unknown[];
}

export interface EphemeralMessage {
  channel: string;
  user: string;
  messageTs: string;
  text?: string;
  blocks?: unknown[];
  /** The thread it was sent to (for a response_url answer: the thread it shows in, if any). */
  threadTs?: string;
  /**
   * Whether Slack shows it to `user`: one sent into a thread without replies is accepted and never shown
   * (chat.postEphemeral, `thread_ts`: "only shown if there is already an active thread").
   */
  visible: boolean;
  via: 'chat.postEphemeral' | 'response_url';
}

/** Where to look for ephemeral messages: a channel, and in it one thread (omitted: anywhere in the channel). */
export interface EphemeralPlace {
  channel?: string;
  threadTs?: string;
}

export interface AssistantThreadState {
  status?: string;
  loadingMessages?: unknown;
  title?: string;
  prompts?: unknown;
  promptsTitle?: string;
}

/** Lifecycle statuses of an agent session (https://docs.slack.dev/ai/agent-sessions). */
export type AgentSessionStatus = 'active' | 'processing' | 'suspended' | 'closed';

export interface AgentSessionTransition {
  status: AgentSessionStatus;
  at: number;
  /** The Web API method that set it. */
  via: string;
}

export interface AgentSessionTitleChange {
  title: string;
  at: number;
  /** The Web API method, or `user` for a rename in Slack's UI. */
  via: string;
}

/** A thread's agent session as Slack keeps it; sessions are named by channel + thread root ts. */
export interface AgentSessionState {
  channel: string;
  threadTs: string;
  status: AgentSessionStatus;
  title?: string;
  initiatorUserId?: string;
  /** icon_emoji / icon_url / username overrides of the loading UX, replaced as a set. */
  appearance?: { icon_emoji?: string; icon_url?: string; username?: string };
  createdAt: number;
  /** Every status set, the creating one first, in order; repeats of the same status included. */
  history: AgentSessionTransition[];
  titles: AgentSessionTitleChange[];
  /** Slack shows its stop button only in `processing`, and only to apps subscribed to agent_session_stopped. */
  stopButtonVisible: boolean;
}

/**
 * Answers one response_url takes: up to five, within 30 minutes of the interaction
 * (https://docs.slack.dev/interactivity/handling-user-interaction#message_responses, and for slash commands
 * https://docs.slack.dev/interactivity/implementing-slash-commands). A test moves past the 30 minutes with
 * `expireResponseUrl`.
 */
const RESPONSE_URL_USES = 5;
const RESPONSE_URL_LIFETIME_MS = 30 * 60_000;

/** Where an interaction happened, so that posts to its response_url land where Slack would put them. */
export interface ResponseUrlContext {
  channel: string;
  /** Who interacted: ephemeral answers are shown to them. */
  user: string;
  /** The message the interaction came from (replace_original / delete_original act on it). */
  messageTs?: string;
  threadTs?: string;
}

export interface SocketEventOptions {
  type?: 'events_api' | 'slash_commands' | 'interactive';
  retryAttempt?: number;
  retryReason?: string;
  acceptsResponsePayload?: boolean;
  /** Slack expects an ack within 3 s. */
  ackTimeoutMs?: number;
}

export interface SocketEventResult {
  envelopeId: string;
  /** The `payload` of the ack; undefined for a bare ack (the client sends `payload: {}`). */
  ackPayload?: unknown;
}

/** Serves requests under a path prefix on the fake's own server (the demo's web page and its API). */
export type MountedHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> | void;

/** A conversation as the demo page lists it. */
export interface ChannelSummary {
  id: string;
  name: string;
  type: 'channel' | 'group' | 'im' | 'mpim';
  archived: boolean;
  /** The other member of an IM. */
  user?: string;
}

type Args = Record<string, unknown>;
type ApiBody = { ok: true; [key: string]: unknown } | { ok: false; error: string; [key: string]: unknown };
type Handler = (args: Args) => ApiBody;

interface StoredMessage {
  message: SlackMessage;
  /** Still open via chat.startStream; not part of the wire shape. */
  streaming: boolean;
}

interface SocketConnection {
  ws: WebSocket;
  host: string;
}

interface PendingAck {
  connection: SocketConnection;
  resolve: (result: SocketEventResult) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

interface FailureSlot {
  failure: SlackFailure;
  remaining: number;
  /** Only calls with these arguments fail (other calls of the method pass untouched). */
  when?: (args: Record<string, unknown>) => boolean;
}

interface FailureWindow {
  /** A method name, or `*` for every Web API method. */
  method: string;
  failure: SlackFailure;
  until: number;
  when?: (args: Record<string, unknown>) => boolean;
}

/** Internal session record; the public view adds the derived stop-button state. */
type StoredAgentSession = Omit<AgentSessionState, 'stopButtonVisible'>;

const AGENT_SESSION_STATUSES: ReadonlySet<string> = new Set(['active', 'processing', 'suspended', 'closed']);
const AGENT_SESSION_TITLE_MAX = 200;

/** What an install from manifest.yml grants. */
export const DEFAULT_SCOPES: readonly string[] = readManifest().botScopes;

/** Slack's method reference for the methods implemented here (slack-contracts/methods.json). */
const CONTRACTS: SlackContracts = loadContracts();

/**
 * The error a method documents for refused content. Slack's pages differ: chat.postMessage and chat.stopStream
 * document `msg_blocks_too_long` for the blocks' text, chat.update and chat.postEphemeral only `msg_too_long`;
 * chat.postMessage documents no `invalid_attachments` (an attachment's blocks are blocks: `invalid_blocks`).
 */
function contentError(method: string, error: string): string {
  if (documentsError(CONTRACTS, method, error)) return error;
  if (error === 'msg_blocks_too_long') return 'msg_too_long';
  if (error === 'invalid_attachments') return 'invalid_blocks';
  return error;
}

/** Free-text fields that must stay strings even if they happen to look like JSON. */
const TEXT_FIELDS = new Set([
  'text',
  'markdown_text',
  'title',
  'status',
  'name',
  'alt_text',
  'initial_comment',
  'username',
  'query',
  'channel',
  'channel_id',
  'user',
  'ts',
  'thread_ts',
  'timestamp',
]);

const MAX_BLOCKS = 50;
const SOCKET_CLOSE_GRACE_MS = 250;

/**
 * A message call with nothing to show: no text (an empty one is none), no blocks, no attachments. chat.postMessage,
 * chat.postEphemeral and chat.update document `no_text` for it (slack-api-ref: "No message text provided").
 */
function withoutContent(args: Args): boolean {
  return (
    str(args, 'text') === undefined &&
    str(args, 'markdown_text') === undefined &&
    !args.blocks &&
    !args.attachments
  );
}

function str(args: Args, key: string): string | undefined {
  const value = args[key];
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number') return String(value);
  return undefined;
}

/** Form encoding turns booleans into strings, so accept both spellings. */
function flag(args: Args, key: string): boolean {
  const value = args[key];
  return value === true || value === 'true' || value === '1' || value === 1;
}

function int(args: Args, key: string): number | undefined {
  const value = args[key];
  const parsed =
    typeof value === 'number' ? value : typeof value === 'string' ? Number.parseInt(value, 10) : NaN;
  return Number.isFinite(parsed) ? parsed : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function decodeFormValue(key: string, value: string): unknown {
  // WebClient JSON-encodes every non-primitive argument into its form field.
  if (!TEXT_FIELDS.has(key) && (value.startsWith('[') || value.startsWith('{'))) {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}

function isAgentSessionStatus(value: string): value is AgentSessionStatus {
  return AGENT_SESSION_STATUSES.has(value);
}

function fail(error: string): ApiBody {
  return { ok: false, error };
}

function byTs(a: SlackMessage, b: SlackMessage): number {
  return Number(a.ts) - Number(b.ts) || a.ts.localeCompare(b.ts);
}

function failureResponse(failure: Exclude<SlackFailure, { type: 'reset' }>): SlackApiResponse {
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  switch (failure.type) {
    case 'error':
      return { status: 200, headers, body: fail(failure.error) };
    case 'rate_limited':
      return {
        status: 429,
        headers: { ...headers, 'retry-after': String(failure.retryAfterSeconds) },
        body: fail('ratelimited'),
      };
    case 'http':
      return {
        status: failure.status,
        headers: { 'content-type': 'text/plain' },
        body: STATUS_CODES[failure.status] ?? 'Error',
      };
  }
}

function encodeCursor(ts: string): string {
  return Buffer.from(`next_ts:${ts}`).toString('base64');
}

function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  const decoded = Buffer.from(cursor, 'base64').toString('utf8');
  return decoded.startsWith('next_ts:') ? decoded.slice('next_ts:'.length) : undefined;
}

/**
 * An in-process impersonation of Slack's Web API and Socket Mode gateway on a real HTTP server, so the
 * real WebClient / SocketModeClient (and therefore Bolt) can be exercised end to end over the wire.
 */
export class FakeSlack {
  readonly teamId: string;
  readonly teamName: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly appId: string;
  readonly botToken: string;
  readonly appToken: string;
  readonly calls: SlackApiCall[] = [];
  readonly ephemeralMessages: EphemeralMessage[] = [];
  /** Workspaces, orgs, installations and their tokens (slack-tenancy.ts). */
  readonly tenancy: FakeSlackTenancy;
  /** The consent page and oauth.v2.access (slack-oauth.ts). */
  readonly oauth: FakeSlackOAuth;

  private readonly server: Server;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly users: Map<string, FakeSlackUser>;
  private readonly channelConfig: Map<string, FakeSlackChannel>;
  private readonly archived = new Set<string>();
  /** The workspace's message limit is reached (see reachMessageLimit). */
  private messageLimitReached = false;
  /** Channels only some members may post in (see makeReadOnly). */
  private readonly readOnlyChannels = new Set<string>();
  /** `channel:thread_ts` of threads an admin locked (see lockThread). */
  private readonly lockedThreads = new Set<string>();
  /** Conversations an event told of (ingestEvent), besides the configured ones and those with messages. */
  private readonly seenChannels = new Set<string>();
  /**
   * Conversations an event said were deleted (https://docs.slack.dev/reference/events/channel_deleted,
   * group_deleted; @slack/types ChannelDeletedEvent): they exist no more, and calls about them answer
   * channel_not_found as for any conversation the workspace does not have.
   */
  private readonly deletedChannels = new Set<string>();
  /**
   * Calls about a conversation or a message the fake was never told of, which Slack refuses as not found:
   * stop() fails while any exist, since a test most likely delivered an event past the fake (a forgotten
   * `via`), unless unknown ones are allowed (allowUnknownTargets).
   */
  readonly unknownTargets: string[] = [];
  private unknownTargetsAllowed = false;
  private readonly scopes: readonly string[];
  private readonly rateLimiter: RateLimiter;
  /** Answers the fake gave that Slack does not document for the method; stop() fails while any exist. */
  readonly contractViolations: string[] = [];
  private readonly latency: Map<string, number>;
  private readonly arrivalDelay = new Map<string, number>();
  private readonly failures = new Map<string, FailureSlot[]>();
  private failureWindows: FailureWindow[] = [];
  private readonly listeners = new Set<SlackCallListener>();
  private readonly waiters = new Set<() => void>();
  private readonly messages = new Map<string, Map<string, StoredMessage>>();
  private readonly deleted = new Set<string>();
  private readonly reactions = new Map<string, SlackReaction[]>();
  private readonly assistantThreads = new Map<string, AssistantThreadState>();
  private readonly agentSessions = new Map<string, StoredAgentSession>();
  private readonly responseContexts = new Map<string, ResponseUrlContext>();
  /** How many answers each response_url has taken (RESPONSE_URL_USES). */
  private readonly responseUses = new Map<string, number>();
  /** When each response_url was made: it takes answers for RESPONSE_URL_LIFETIME_MS. */
  private readonly responseUrlsMadeAt = new Map<string, number>();
  private agentSessionStoppedSubscribed: boolean;
  private readonly agentView: boolean;
  private readonly agentSessionTitleAnswered: boolean;
  private readonly tickets = new Set<string>();
  private readonly sockets = new Set<SocketConnection>();
  private readonly pendingAcks = new Map<string, PendingAck>();
  private readonly responseTimers = new Set<NodeJS.Timeout>();
  private readonly handlers: Map<string, Handler>;
  private readonly mounts: [prefix: string, handler: MountedHandler][] = [];
  private readonly socketPingIntervalMs: number;
  private readonly acceptRequest: (req: IncomingMessage) => boolean;
  private pingTimer: NodeJS.Timeout | undefined;
  private socketCounter = 0;
  private roundRobin = 0;
  private stopped = false;
  /** The installation whose token the Web API method now running was called with. */
  private acting: FakeInstallation | undefined;
  /** Who each call's bot token acts for, or why it is refused. */
  private readonly tokenChecks = new WeakMap<SlackApiCall, TokenCheck>();
  /** The most messages a page of conversations.history or conversations.replies holds. */
  private readonly readPageMax: number;

  private constructor(options: FakeSlackOptions) {
    this.teamId = options.teamId ?? 'T0TEAM';
    this.teamName = options.teamName ?? 'Fake Team';
    this.botUserId = options.botUserId ?? 'U0BOT';
    this.botId = options.botId ?? 'B0BOT';
    this.appId = options.appId ?? DEFAULT_APP_ID;
    this.botToken = options.botToken ?? 'xoxb-test-token';
    this.appToken = options.appToken ?? 'xapp-test-token';
    const manifest = readManifest(options.manifest);
    this.scopes = options.scopes ?? manifest.botScopes;
    this.rateLimiter = new RateLimiter({
      ...(options.outsideMarketplace ? OUTSIDE_MARKETPLACE_READS : {}),
      ...options.rateLimits,
    });
    this.readPageMax = options.outsideMarketplace ? OUTSIDE_MARKETPLACE_PAGE_MAX : 1000;
    this.latency = new Map(Object.entries(options.latencyMs ?? {}));
    this.socketPingIntervalMs = options.socketPingIntervalMs ?? 5000;
    this.agentSessionStoppedSubscribed = options.agentSessionStoppedSubscribed ?? true;
    this.agentView = options.agentView ?? true;
    this.agentSessionTitleAnswered = options.agentSessionTitleAnswered ?? true;
    this.acceptRequest = options.acceptRequest ?? (() => true);
    this.users = new Map([
      [this.botUserId, { name: 'bot', realName: 'Bot', isBot: true }],
      ...Object.entries(options.users ?? {}),
    ]);
    this.channelConfig = new Map(Object.entries(options.channels ?? {}));
    for (const [id, channel] of this.channelConfig) if (channel.isArchived) this.archived.add(id);
    const rotation = options.tokenRotation ?? manifest.tokenRotation;
    this.tenancy = new FakeSlackTenancy(
      this.appId,
      rotation === undefined || rotation === false
        ? undefined
        : {
            lifetimeSeconds: 43_200,
            keepSupersededTokens: false,
            ...(typeof rotation === 'object' ? rotation : {}),
          },
    );
    for (const org of options.orgs ?? []) this.tenancy.addOrg(org);
    this.tenancy.addWorkspace({
      teamId: this.teamId,
      name: this.teamName,
      botUserId: this.botUserId,
      ...(options.enterpriseId !== undefined && { enterpriseId: options.enterpriseId }),
    });
    for (const workspace of options.workspaces ?? []) this.tenancy.addWorkspace(workspace);
    if (options.preinstalled ?? true) {
      this.tenancy.install(
        { teamId: this.teamId },
        { installerUserId: 'U0ADMIN', scopes: this.scopes, token: this.botToken, botId: this.botId },
      );
    }
    this.oauth = new FakeSlackOAuth(this.tenancy, {
      orgDeployEnabled: manifest.orgDeployEnabled,
      ...options.oauth,
    });
    this.mount('/oauth/v2/authorize', (req, res, url) => this.oauth.handleAuthorizePage(req, res, url));
    this.handlers = this.buildHandlers();
    const uncontracted = [...this.handlers.keys()].filter((method) => !CONTRACTS.methods[method]);
    if (uncontracted.length > 0) {
      throw new Error(
        `FakeSlack: no contract for ${uncontracted.join(', ')}; add them to slack-contracts/generate.ts`,
      );
    }
    this.server = createServer((req, res) => {
      this.handleHttp(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(error));
      });
    });
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.handleUpgrade(req, socket, head),
    );
  }

  static async start(options: FakeSlackOptions = {}): Promise<FakeSlack> {
    const fake = new FakeSlack(options);
    await new Promise<void>((resolve, reject) => {
      fake.server.once('error', reject);
      fake.server.listen(options.port ?? 0, '127.0.0.1', () => {
        fake.server.off('error', reject);
        resolve();
      });
    });
    if (fake.socketPingIntervalMs > 0) {
      fake.pingTimer = setInterval(() => {
        for (const { ws } of fake.sockets) if (ws.readyState === WebSocket.OPEN) ws.ping('ping');
      }, fake.socketPingIntervalMs);
      fake.pingTimer.unref();
    }
    return fake;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Pass as `slackApiUrl` (WebClient / Bolt `clientOptions`); WebClient appends the method name directly. */
  get apiUrl(): string {
    return `http://127.0.0.1:${this.port}/api/`;
  }

  /** The bot scopes the workspace granted (the manifest's, or the `scopes` option). */
  get grantedScopes(): readonly string[] {
    return this.scopes;
  }

  get socketConnectionCount(): number {
    return [...this.sockets].filter((c) => c.ws.readyState === WebSocket.OPEN).length;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.pingTimer);
    for (const timer of this.responseTimers) clearTimeout(timer);
    this.responseTimers.clear();
    for (const [id, pending] of this.pendingAcks) {
      clearTimeout(pending.timer);
      pending.reject(new Error(`FakeSlack stopped before envelope ${id} was acked`));
    }
    this.pendingAcks.clear();
    await this.closeSockets();
    this.wss.close();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      // Keep-alive sockets from fetch's pool would otherwise hold close() open.
      this.server.closeAllConnections();
    });
    if (this.contractViolations.length > 0) {
      throw new Error(
        `FakeSlack answered what Slack does not document:\n${this.contractViolations.join('\n')}`,
      );
    }
    if (this.unknownTargets.length > 0 && !this.unknownTargetsAllowed) {
      throw new Error(
        `FakeSlack was asked about what it was never told of (deliver the event through the fake: stack.ts deliver, postSignedEvent's via; or configure the channel):\n${this.unknownTargets.join('\n')}`,
      );
    }
  }

  /**
   * Calls about unknown conversations or messages are still refused, as Slack does, but do not fail stop():
   * for a test of those refusals, and where events may come from anywhere (the demo, `npm run fakes`, the
   * benchmark, which counts only the posts Slack took).
   */
  allowUnknownTargets(): void {
    this.unknownTargetsAllowed = true;
  }

  /**
   * Lets close handshakes already under way finish (Bolt's app.stop() does not await its own) and asks
   * remaining clients to go away; anything still open after a short grace period is cut off.
   */
  private async closeSockets(): Promise<void> {
    const sockets = [...this.sockets].map((c) => c.ws);
    let timer: NodeJS.Timeout | undefined;
    const closed = sockets.map(
      (ws) =>
        new Promise<void>((resolve) => {
          if (ws.readyState === WebSocket.CLOSED) return resolve();
          ws.once('close', () => resolve());
          if (ws.readyState === WebSocket.OPEN) ws.close(1001, 'server stopping');
        }),
    );
    await Promise.race([
      Promise.all(closed),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, SOCKET_CLOSE_GRACE_MS);
      }),
    ]);
    clearTimeout(timer);
    for (const ws of sockets) ws.terminate();
    this.sockets.clear();
  }

  // ---------------------------------------------------------------- recording

  onCall(listener: SlackCallListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The calls of a method Slack took in. Calls the workspace's rate limit turned away are left out (here and in
   * waitForCall/s): the client makes them again after Retry-After, and a test waits for what was done. They
   * stay in `calls` and reach onCall listeners, marked `throttled`.
   */
  callsOf(method: string): SlackApiCall[] {
    return this.calls.filter((c) => c.method === method && !c.throttled);
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

  /**
   * Gives every method its full rate-limit allowance again, as after a quiet minute (Slack's limits are per
   * minute, https://docs.slack.dev/apis/web-api/rate-limits): for tests sharing one fake Slack, so a case does
   * not spend the allowance of the next. Real Slack would still count those calls if the cases ran within one
   * minute in one workspace; the bot's handling of a spent allowance is tested on fakes that are not reset.
   */
  resetRateLimits(): void {
    this.rateLimiter.reset();
  }

  waitForCall(
    method: string,
    predicate?: (call: SlackApiCall) => boolean,
    timeoutMs = 5000,
  ): Promise<SlackApiCall> {
    return this.waitForCalls(method, 1, predicate, timeoutMs).then((calls) => calls[0]!);
  }

  /** Resolves with the first `count` matching calls, counting ones already recorded. */
  waitForCalls(
    method: string,
    count: number,
    predicate?: (call: SlackApiCall) => boolean,
    timeoutMs = 5000,
  ): Promise<SlackApiCall[]> {
    const matching = () => this.callsOf(method).filter((c) => predicate?.(c) ?? true);
    return this.waitFor(
      () => {
        const found = matching();
        return found.length >= count ? found.slice(0, count) : undefined;
      },
      timeoutMs,
      () =>
        `FakeSlack: expected ${count} matching ${method} call(s) within ${timeoutMs}ms, saw ${matching().length}. ` +
        `Recorded: ${this.calls.map((c) => c.method).join(', ') || '(none)'}`,
    );
  }

  waitForSocketConnection(timeoutMs = 5000): Promise<void> {
    return this.waitFor(
      () => (this.socketConnectionCount > 0 ? true : undefined),
      timeoutMs,
      () => `FakeSlack: no Socket Mode connection within ${timeoutMs}ms`,
    ).then(() => undefined);
  }

  // ---------------------------------------------------------------- behaviour control

  failNext(
    method: string,
    failure: SlackFailure,
    times = 1,
    when?: (args: Record<string, unknown>) => boolean,
  ): void {
    this.checkInjectable(method, failure);
    const queue = this.failures.get(method) ?? [];
    queue.push({ failure, remaining: times, ...(when ? { when } : {}) });
    this.failures.set(method, queue);
  }

  /**
   * Fails every call of `method` (`*`: of every Web API method) for the next `ms` milliseconds, as an
   * outage would, e.g. `failFor('*', { type: 'http', status: 503 }, 10_000)`. Checked before `failNext`.
   */
  failFor(
    method: string,
    failure: SlackFailure,
    ms: number,
    when?: (args: Record<string, unknown>) => boolean,
  ): void {
    this.checkInjectable(method, failure);
    this.failureWindows.push({ method, failure, until: Date.now() + ms, ...(when ? { when } : {}) });
  }

  /**
   * Answers the next call(s) of `method` with HTTP 200 and an error Slack documents for it, e.g.
   * `failNextWith('chat.postMessage', 'rate_limited')` or `'message_limit_exceeded'`.
   */
  failNextWith(
    method: string,
    error: string,
    times = 1,
    when?: (args: Record<string, unknown>) => boolean,
  ): void {
    this.failNext(method, { type: 'error', error }, times, when);
  }

  /** An injected `{ type: 'error' }` may only be an error Slack documents for the method (`*`: for all). */
  private checkInjectable(method: string, failure: SlackFailure): void {
    if (failure.type !== 'error' || method === 'response_url') return;
    if (method !== '*' && !CONTRACTS.methods[method])
      throw new Error(`FakeSlack: ${method} is not implemented`);
    if (!documentsError(CONTRACTS, method, failure.error)) {
      throw new Error(`FakeSlack: Slack documents no error ${failure.error} for ${method}`);
    }
  }

  /** Drops the failures still queued for a method, and its failFor windows (`*` windows with `*`). */
  clearFailures(method: string): void {
    this.failures.delete(method);
    this.failureWindows = this.failureWindows.filter((w) => w.method !== method);
  }

  setLatency(method: string, ms: number | undefined): void {
    if (ms === undefined) this.latency.delete(method);
    else this.latency.set(method, ms);
  }

  /**
   * Delays acting on a method's calls (where `setLatency` delays only the answer), as a slow network
   * path would: a call made later on another connection can then take effect first.
   */
  delayArrival(method: string, ms: number | undefined): void {
    if (ms === undefined) this.arrivalDelay.delete(method);
    else this.arrivalDelay.set(method, ms);
  }

  /**
   * The workspace reaches its plan's message limit. Every method that posts or changes a message documents
   * `message_limit_exceeded` (slack-api-ref: chat.postMessage, chat.postEphemeral, chat.update), so all three
   * refuse until it is lifted: a note about the limit is refused as well.
   */
  reachMessageLimit(reached = true): void {
    this.messageLimitReached = reached;
  }

  /**
   * An admin lets only some members post in a channel (an announcement channel): chat.postMessage answers
   * `restricted_action_read_only_channel` ("Cannot post any message into a read-only channel", slack-api-ref
   * chat.postMessage.json). Slack does not say whether an app's ephemeral message is refused there too; the
   * stricter reading is taken: chat.postEphemeral answers `restricted_action` (which it documents).
   */
  makeReadOnly(channel: string, readOnly = true): void {
    if (readOnly) this.readOnlyChannels.add(channel);
    else this.readOnlyChannels.delete(channel);
  }

  /**
   * An admin locks a thread: replies to it are refused with `restricted_action_thread_locked` ("Cannot post
   * replies to a thread that has been locked by admins", slack-api-ref chat.postMessage.json). Slack does not
   * say whether an ephemeral message in it is refused too; the stricter reading is taken (`restricted_action`).
   */
  lockThread(channel: string, threadTs: string): void {
    this.lockedThreads.add(`${channel}:${threadTs}`);
  }

  archiveChannel(channel: string, archived = true): void {
    if (archived) this.archived.add(channel);
    else this.archived.delete(channel);
  }

  /**
   * Routes requests whose path starts with `prefix` to `handler` (checked before the Web API; first
   * mount wins). `/api/` and `/response/` stay Slack's.
   */
  mount(prefix: string, handler: MountedHandler): void {
    if (prefix.startsWith('/api/') || prefix.startsWith('/response/'))
      throw new Error(`FakeSlack: ${prefix} is reserved for the Web API`);
    this.mounts.push([prefix, handler]);
  }

  /** The configured conversations, with their current archived state. */
  channelList(): ChannelSummary[] {
    return [...this.channelConfig].map(([id, channel]) => ({
      id,
      name: channel.name ?? id,
      type: channel.type ?? 'channel',
      archived: this.archived.has(id),
      ...(channel.user ? { user: channel.user } : {}),
    }));
  }

  /** Every known user, the bot included. */
  userList(): ({ id: string } & FakeSlackUser)[] {
    return [...this.users].map(([id, user]) => ({ id, ...user }));
  }

  // ---------------------------------------------------------------- message model

  /** The thread as conversations.replies would return it now: parent first, then replies by ts. */
  threadMessages(channel: string, threadTs: string): SlackMessage[] {
    return this.thread(channel, threadTs).map((m) => this.view(channel, m, true));
  }

  /** Every visible message in a channel (top level and replies) in ts order. */
  channelMessages(channel: string): SlackMessage[] {
    return this.sortedMessages(channel).map((m) => this.view(channel, m, true));
  }

  reactionsOn(channel: string, ts: string): SlackReaction[] {
    return (this.reactions.get(`${channel}:${ts}`) ?? []).map((r) => ({ ...r, users: [...r.users] }));
  }

  /** The ephemeral messages Slack shows `user` (never those sent into a thread without replies), oldest first. */
  visibleEphemerals(user: string, where: EphemeralPlace = {}): EphemeralMessage[] {
    return this.ephemeralMessages.filter(
      (m) =>
        m.visible &&
        m.user === user &&
        (where.channel === undefined || m.channel === where.channel) &&
        (where.threadTs === undefined || m.threadTs === where.threadTs),
    );
  }

  /** Resolves with the first ephemeral message `user` sees (in `where`) that matches; fails naming hidden ones. */
  waitForVisibleEphemeral(
    user: string,
    where: EphemeralPlace = {},
    predicate: (message: EphemeralMessage) => boolean = () => true,
    timeoutMs = 5000,
  ): Promise<EphemeralMessage> {
    return this.waitFor(
      () => this.visibleEphemerals(user, where).find(predicate),
      timeoutMs,
      () => {
        const hidden = this.ephemeralMessages.filter((m) => m.user === user && !m.visible);
        return (
          `FakeSlack: ${user} saw no matching ephemeral message within ${timeoutMs}ms; sent but never shown: ` +
          (hidden.map((m) => `${m.channel}/${m.threadTs} "${m.text ?? ''}"`).join('; ') || '(none)')
        );
      },
    );
  }

  /** `threadTs` undefined: what was set for the conversation as a whole (the Messages tab's prompts). */
  assistantThread(channel: string, threadTs: string | undefined): AssistantThreadState | undefined {
    const state = this.assistantThreads.get(`${channel}:${threadTs ?? ''}`);
    return state && { ...state };
  }

  /** A thread's agent session now (status, title, initiator, every transition), or undefined if none. */
  agentSession(channel: string, threadTs: string): AgentSessionState | undefined {
    const session = this.liveAgentSession(channel, threadTs);
    if (!session) return undefined;
    return {
      ...structuredClone(session),
      stopButtonVisible: this.agentSessionStoppedSubscribed && session.status === 'processing',
    };
  }

  /** Every agent session, in creation order. */
  agentSessionList(): AgentSessionState[] {
    return [...this.agentSessions.values()]
      .map((s) => this.agentSession(s.channel, s.threadTs))
      .filter((s) => s !== undefined);
  }

  /** Resolves once a Web API call has left the session in `status` (counting the state already reached). */
  waitForAgentSessionStatus(
    channel: string,
    threadTs: string,
    status: AgentSessionStatus,
    timeoutMs = 5000,
  ): Promise<AgentSessionState> {
    return this.waitFor(
      () => {
        const session = this.agentSession(channel, threadTs);
        return session?.status === status ? session : undefined;
      },
      timeoutMs,
      () =>
        `FakeSlack: agent session ${channel}/${threadTs} did not reach ${status} within ${timeoutMs}ms; ` +
        `history: ${
          this.agentSession(channel, threadTs)
            ?.history.map((h) => h.status)
            .join(' → ') ?? '(no session)'
        }`,
    );
  }

  /** Turns the app's agent_session_stopped subscription on or off (see FakeSlackOptions). */
  setAgentSessionStoppedSubscribed(subscribed: boolean): void {
    this.agentSessionStoppedSubscribed = subscribed;
  }

  /**
   * A person presses Slack's stop button on a session. As in Slack, the app's open streams in the thread are
   * stopped and the status is left alone; returns the `agent_session_stopped` event to deliver to the bot
   * (sendSocketEvent or postSignedEvent). Throws when Slack would show no stop button.
   */
  pressStopButton(
    channel: string,
    threadTs: string,
    user: string,
  ): SlackEventEnvelope<Record<string, unknown>> {
    const session = this.agentSession(channel, threadTs);
    if (!session?.stopButtonVisible) {
      throw new Error(
        `FakeSlack: no stop button on ${channel}/${threadTs} (status ${session?.status ?? 'no session'}, ` +
          `subscribed ${this.agentSessionStoppedSubscribed})`,
      );
    }
    const stopped: string[] = [];
    for (const stored of this.messages.get(channel)?.values() ?? []) {
      if (stored.streaming && stored.message.thread_ts === threadTs) {
        stored.streaming = false;
        stopped.push(stored.message.ts);
      }
    }
    return agentSessionStoppedEvent({
      channel,
      user,
      threadTs,
      streamingMessageTs: stopped,
      teamId: this.teamId,
    });
  }

  /** A person renames a session in Slack's UI; returns the `agent_session_title_changed` event to deliver. */
  renameAgentSessionAsUser(
    channel: string,
    threadTs: string,
    user: string,
    title: string,
  ): SlackEventEnvelope<Record<string, unknown>> {
    const session = this.liveAgentSession(channel, threadTs);
    if (!session) throw new Error(`FakeSlack: no agent session on ${channel}/${threadTs} to rename`);
    const previousTitle = session.title;
    this.retitle(session, title, 'user');
    return agentSessionTitleChangedEvent({
      channel,
      user,
      threadTs,
      title,
      previousTitle,
      teamId: this.teamId,
    });
  }

  /** Puts a message into history as if a person (or another app) had posted it. Returns its ts. */
  seedMessage(channel: string, seed: SeedMessage): string {
    const ts = seed.ts ?? nextTs();
    const message: SlackMessage = { type: 'message', ts, text: seed.text, team: this.teamId };
    if (seed.user !== undefined) message.user = seed.user;
    if (seed.botId !== undefined) message.bot_id = seed.botId;
    if (seed.subtype !== undefined) message.subtype = seed.subtype;
    if (seed.blocks !== undefined) message.blocks = seed.blocks;
    this.insertMessage(channel, message, seed.threadTs);
    return ts;
  }

  /**
   * Mirrors what an Events API body implies about workspace state (the conversations it names; new, edited,
   * deleted messages; archived channels) so later calls about them find them, as in Slack. sendSocketEvent
   * does this itself; over HTTP, postSignedEvent's `via` does (helpers/slack-events.ts).
   */
  ingestEvent(body: unknown): void {
    if (!isRecord(body)) return;
    const event = body.type === 'event_callback' && isRecord(body.event) ? body.event : body;
    for (const id of channelsNamedBy(event)) this.seenChannels.add(id);
    if (
      (event.type === 'channel_deleted' || event.type === 'group_deleted') &&
      typeof event.channel === 'string'
    )
      this.deletedChannels.add(event.channel);
    const channel = typeof event.channel === 'string' ? event.channel : undefined;
    if (event.type === 'channel_archive' && channel) this.archived.add(channel);
    if (event.type === 'channel_unarchive' && channel) this.archived.delete(channel);
    if ((event.type !== 'message' && event.type !== 'app_mention') || !channel) return;
    const subtype = typeof event.subtype === 'string' ? event.subtype : undefined;
    if (subtype === 'message_changed' && isRecord(event.message)) {
      const stored = this.find(channel, String(event.message.ts));
      if (stored && typeof event.message.text === 'string') stored.message.text = event.message.text;
      return;
    }
    if (subtype === 'message_deleted') {
      this.removeMessage(channel, String(event.deleted_ts));
      // Also one the fake never held: a later delivery of it does not bring it back (@slack/types
      // MessageDeletedEvent: `deleted_ts` names the message).
      this.deleted.add(`${channel}:${String(event.deleted_ts)}`);
      return;
    }
    const ts = typeof event.ts === 'string' ? event.ts : undefined;
    // app_mention and message events describe the same message; keep the first. A retried delivery of a
    // message deleted since (Slack retries an unacknowledged event: https://docs.slack.dev/apis/events-api/)
    // does not bring it back.
    if (!ts || this.find(channel, ts) || this.deleted.has(`${channel}:${ts}`)) return;
    this.seedMessage(channel, {
      ts,
      text: typeof event.text === 'string' ? event.text : '',
      user: typeof event.user === 'string' ? event.user : undefined,
      botId: typeof event.bot_id === 'string' ? event.bot_id : undefined,
      subtype,
      threadTs: typeof event.thread_ts === 'string' ? event.thread_ts : undefined,
      blocks: Array.isArray(event.blocks) ? event.blocks : undefined,
    });
  }

  // ---------------------------------------------------------------- Socket Mode

  /** Delivers an envelope to a connected client (round-robin) and resolves on its ack. */
  sendSocketEvent(body: unknown, options: SocketEventOptions = {}): Promise<SocketEventResult> {
    const open = [...this.sockets].filter((c) => c.ws.readyState === WebSocket.OPEN);
    const connection = open[this.roundRobin++ % Math.max(open.length, 1)];
    if (!connection) return Promise.reject(new Error('FakeSlack: no Socket Mode client is connected'));
    const type = options.type ?? 'events_api';
    const envelopeId = randomUUID();
    const acceptsDefault =
      type === 'slash_commands' ||
      (type === 'interactive' &&
        isRecord(body) &&
        (body.type === 'view_submission' || body.type === 'block_suggestion'));
    const envelope: Record<string, unknown> = {
      envelope_id: envelopeId,
      payload: body,
      type,
      accepts_response_payload: options.acceptsResponsePayload ?? acceptsDefault,
    };
    // Only Events API deliveries are retried by Slack, so only they carry retry fields.
    if (type === 'events_api' || options.retryAttempt !== undefined) {
      envelope.retry_attempt = options.retryAttempt ?? 0;
      envelope.retry_reason = options.retryReason ?? '';
    }
    if (type === 'events_api') this.ingestEvent(body);
    const ackTimeoutMs = options.ackTimeoutMs ?? 3000;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pendingAcks.delete(envelopeId);
        reject(
          new Error(`FakeSlack: envelope ${envelopeId} (${type}) was not acked within ${ackTimeoutMs}ms`),
        );
      }, ackTimeoutMs);
      this.pendingAcks.set(envelopeId, { connection, resolve, reject, timer });
      connection.ws.send(JSON.stringify(envelope));
    });
  }

  /** Sends Slack's `disconnect` message; the client closes and reconnects via apps.connections.open. */
  requestSocketReconnect(
    reason: 'warning' | 'refresh_requested' | 'link_disabled' = 'refresh_requested',
  ): void {
    for (const { ws, host } of this.sockets) {
      if (ws.readyState === WebSocket.OPEN) {
        ws.send(JSON.stringify({ type: 'disconnect', reason, debug_info: { host } }));
      }
    }
  }

  /** Drops every WebSocket without a close frame, like a network failure. */
  dropSocketConnections(): void {
    for (const { ws } of this.sockets) ws.terminate();
  }

  // ---------------------------------------------------------------- internals: waiting

  private waitFor<T>(check: () => T | undefined, timeoutMs: number, describe: () => string): Promise<T> {
    const immediate = check();
    if (immediate !== undefined) return Promise.resolve(immediate);
    return new Promise<T>((resolve, reject) => {
      const poke = () => {
        try {
          const value = check();
          if (value === undefined) return;
          cleanup();
          resolve(value);
        } catch (error) {
          cleanup();
          reject(error);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(describe()));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.waiters.delete(poke);
      };
      this.waiters.add(poke);
    });
  }

  private pokeWaiters(): void {
    for (const poke of [...this.waiters]) poke();
  }

  // ---------------------------------------------------------------- internals: HTTP

  private async handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.acceptRequest(req)) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end('Forbidden');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const slackPath = url.pathname.startsWith('/api/') || url.pathname.startsWith('/response/');
    const mounted = slackPath ? undefined : this.mounts.find(([prefix]) => url.pathname.startsWith(prefix));
    if (mounted) {
      await mounted[1](req, res, url);
      return;
    }
    if (url.pathname.startsWith('/response/') && req.method === 'POST') {
      await this.handleResponseUrl(req, res, url);
      return;
    }
    if (!url.pathname.startsWith('/api/')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found');
      return;
    }
    const method = decodeURIComponent(url.pathname.slice('/api/'.length));
    const args = await this.readArgs(req, url);
    const arrival = this.arrivalDelay.get(method) ?? 0;
    if (arrival > 0) await new Promise((resolve) => setTimeout(resolve, arrival));
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const token = bearer ?? (typeof args.token === 'string' ? args.token : undefined);
    delete args.token;
    const call: SlackApiCall = { method, args, at: Date.now(), tokenKind: this.classifyToken(token) };
    if (call.tokenKind === 'bot' && token !== undefined) {
      const checked = this.tenancy.check(token);
      if ('installation' in checked) call.caller = callerOf(checked.installation);
      this.tokenChecks.set(call, checked);
    }
    const { response, cut } = this.respond(call);
    this.record(call, response);

    const send = () => {
      if (res.destroyed) return;
      if (cut) {
        res.destroy();
        return;
      }
      const payload = typeof response.body === 'string' ? response.body : JSON.stringify(response.body);
      res.writeHead(response.status, response.headers).end(payload);
    };
    const delay = this.latency.get(method) ?? this.latency.get('*') ?? 0;
    if (delay <= 0) {
      send();
      return;
    }
    const timer = setTimeout(() => {
      this.responseTimers.delete(timer);
      send();
    }, delay);
    this.responseTimers.add(timer);
  }

  /** Keeps the call, tells the observers and wakes whoever waits for it. */
  private record(call: SlackApiCall, response: SlackApiResponse): void {
    this.calls.push(call);
    for (const listener of this.listeners) {
      try {
        listener(call, response);
      } catch (error) {
        // A faulty observer (e.g. the demo UI) must not break the API for the bot under test.
        process.emitWarning(`FakeSlack onCall listener threw: ${String(error)}`);
      }
    }
    this.pokeWaiters();
  }

  /**
   * Slash commands, shortcuts and block actions carry a `response_url`; apps POST JSON there to answer.
   * Recorded as calls of the pseudo-method `response_url`, with `responseId` naming which request it
   * answers. If the URL was made with a context, the answer also takes effect as in Slack.
   */
  private async handleResponseUrl(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const args = await this.readArgs(req, url);
    const responseId = decodeURIComponent(url.pathname.slice('/response/'.length));
    args.responseId = responseId;
    const uses = (this.responseUses.get(responseId) ?? 0) + 1;
    this.responseUses.set(responseId, uses);
    const expired =
      Date.now() - (this.responseUrlsMadeAt.get(responseId) ?? Date.now()) > RESPONSE_URL_LIFETIME_MS;
    if (uses > RESPONSE_URL_USES || expired) {
      // Slack documents the limits, not the answer past them: refused, and nothing shown, is the strict reading.
      const body = expired ? 'expired_url' : 'used_url';
      this.record(
        { method: 'response_url', args, at: Date.now(), tokenKind: 'none' },
        { status: 404, headers: { 'content-type': 'text/plain' }, body },
      );
      res.writeHead(404, { 'content-type': 'text/plain' }).end(body);
      return;
    }
    const context = this.responseContexts.get(responseId);
    // Applied before recording, so whoever waits for the call sees its effect.
    if (context) this.applyResponse(context, args);
    const call: SlackApiCall = { method: 'response_url', args, at: Date.now(), tokenKind: 'none' };
    this.record(call, { status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok' });
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  }

  /**
   * A response_url for a slash command, shortcut or block_actions payload sent to the bot; answers are
   * recorded. With `context` (where the interaction happened) answers also take effect as Slack documents:
   * ephemeral to `context.user` by default (see `ephemeralMessages`), `response_type: "in_channel"` posts
   * (in `thread_ts` if given), `replace_original` / `delete_original` act on `context.messageTs`.
   */
  responseUrl(id: string, context?: ResponseUrlContext): string {
    if (context) this.responseContexts.set(id, context);
    if (!this.responseUrlsMadeAt.has(id)) this.responseUrlsMadeAt.set(id, Date.now());
    return `http://127.0.0.1:${this.port}/response/${encodeURIComponent(id)}`;
  }

  /** As if the interaction that made this response_url were over 30 minutes old: it takes no more answers. */
  expireResponseUrl(id: string): void {
    this.responseUrlsMadeAt.set(id, Date.now() - RESPONSE_URL_LIFETIME_MS - 1);
  }

  /** https://docs.slack.dev/interactivity/handling-user-interaction#message_responses */
  private applyResponse(context: ResponseUrlContext, args: Args): void {
    const { channel, messageTs } = context;
    const hasContent =
      args.text !== undefined || Array.isArray(args.blocks) || Array.isArray(args.attachments);
    if (flag(args, 'delete_original') && messageTs) {
      this.removeMessage(channel, messageTs);
      // A new message in the same answer is published after the source is deleted.
      if (!hasContent) return;
    } else if (flag(args, 'replace_original') && messageTs) {
      const stored = this.find(channel, messageTs);
      if (stored) {
        this.applyContent(stored.message, args);
        stored.message.edited = { user: this.botUserId, ts: nextTs() };
      }
      return;
    }
    if (!hasContent) return;
    const threadTs = str(args, 'thread_ts');
    if (args.response_type === 'in_channel') {
      const message = this.botMessage(nextTs(), '');
      this.applyContent(message, args);
      this.insertMessage(channel, message, threadTs);
      return;
    }
    // Slack shows the answer to the person who interacted, where they did: in the thread if it has replies (as for
    // chat.postEphemeral), else in the channel. Slack documents no thread rule here; this reading never hides one.
    const shownIn = threadTs ?? context.threadTs;
    this.ephemeralMessages.push({
      channel,
      user: context.user,
      messageTs: nextTs(),
      text: typeof args.text === 'string' ? args.text : undefined,
      blocks: Array.isArray(args.blocks) ? args.blocks : undefined,
      ...(shownIn !== undefined && this.hasReplies(channel, shownIn) ? { threadTs: shownIn } : {}),
      visible: true,
      via: 'response_url',
    });
  }

  private async readArgs(req: IncomingMessage, url: URL): Promise<Args> {
    const args: Args = {};
    for (const [key, value] of url.searchParams) args[key] = decodeFormValue(key, value);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    if (raw.length === 0) return args;
    const contentType = (req.headers['content-type'] ?? '').toLowerCase();
    if (contentType.startsWith('application/json')) {
      try {
        const parsed: unknown = JSON.parse(raw.toString('utf8'));
        if (isRecord(parsed)) Object.assign(args, parsed);
      } catch {
        // Slack answers malformed JSON with invalid_json-style errors; here the method just sees no args.
      }
    } else if (contentType.startsWith('multipart/form-data')) {
      // WebClient switches to multipart when an argument is a Buffer (file uploads).
      const form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
      for (const [key, value] of form) {
        args[key] =
          typeof value === 'string'
            ? decodeFormValue(key, value)
            : { filename: value.name, size: value.size };
      }
    } else {
      for (const [key, value] of new URLSearchParams(raw.toString('utf8'))) {
        args[key] = decodeFormValue(key, value);
      }
    }
    return args;
  }

  private classifyToken(token: string | undefined): SlackTokenKind {
    if (token === undefined || token === '') return 'none';
    if (token === this.appToken) return 'app';
    // Every token an installation was given is a bot token, revoked or expired ones too (refused in handle).
    if (this.tenancy.issued(token)) return 'bot';
    return 'invalid';
  }

  /** What Slack does with a call; `cut`: the connection is then dropped instead of answered. */
  private respond(call: SlackApiCall): { response: SlackApiResponse; cut: boolean } {
    const failure = this.takeFailure(call.method, call.args);
    if (failure?.type === 'reset') {
      // Recorded as what Slack did; status 0 when it did nothing.
      const response = failure.taken ? this.handle(call) : { status: 0, headers: {}, body: '' };
      return { response, cut: true };
    }
    if (failure?.type === 'http' && failure.taken) this.handle(call);
    return { response: failure ? failureResponse(failure) : this.handle(call), cut: false };
  }

  private handle(call: SlackApiCall): SlackApiResponse {
    const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
    const handler = this.handlers.get(call.method);
    if (!handler)
      return { status: 200, headers, body: { ...fail('unknown_method'), req_method: call.method } };
    // oauth.v2.access takes no token: the app's client id and secret authenticate it.
    if (call.method === 'oauth.v2.access') return { status: 200, headers, body: handler(call.args) };
    const required: SlackTokenKind = call.method === 'apps.connections.open' ? 'app' : 'bot';
    if (call.tokenKind === 'none') return { status: 200, headers, body: fail('not_authed') };
    if (call.tokenKind === 'invalid') return { status: 200, headers, body: fail('invalid_auth') };
    if (call.tokenKind !== required) return { status: 200, headers, body: fail('not_allowed_token_type') };
    // A revoked or expired token: token_revoked / account_inactive / invalid_auth / token_expired.
    const checked = this.tokenChecks.get(call);
    if (checked && 'error' in checked) return { status: 200, headers, body: fail(checked.error) };
    const installation = checked?.installation;
    const scopes = installation?.scopes ?? this.scopes;
    // Slack reports the token's granted scopes on every authenticated response.
    headers['x-oauth-scopes'] = call.tokenKind === 'app' ? 'connections:write' : scopes.join(',');
    const contract = CONTRACTS.methods[call.method];
    if (!contract) throw new Error(`FakeSlack: no contract for ${call.method}`);
    const channel = str(call.args, 'channel') ?? str(call.args, 'channel_id');
    const retryAfterSeconds = this.rateLimiter.take(call.method, contract.tier, channel, installation?.key);
    if (retryAfterSeconds !== undefined) {
      call.throttled = true;
      return failureResponse({ type: 'rate_limited', retryAfterSeconds });
    }
    // Slack checks a call's arguments and the token's scopes before the method runs; a private conversation
    // the bot is not in does not exist for it, whatever its scopes: every method that names it answers
    // channel_not_found, writes included (slack-api-ref's method files, e.g. chat.postMessage.json,
    // chat.postEphemeral.json, reactions.add.json: "Value passed for `channel` was invalid."; the contract check
    // below refuses an error a method does not document).
    const hidden = channel !== undefined && this.hiddenFromBot(channel);
    const refused: ContractRefusal | undefined =
      checkArguments(contract, call.args) ??
      (call.tokenKind === 'bot' && !hidden
        ? checkScope(contract, scopes, channel === undefined ? undefined : this.conversationType(channel))
        : undefined);
    // A channel the workspace does not have does not exist (conversations.info, chat.postMessage …:
    // channel_not_found), nor does another workspace's for a token, unless it is shared with a workspace the
    // token's installation serves.
    const unknown = channel !== undefined && !this.knows(channel);
    // Only a call answered for that reason, and not about a conversation deleted since (which the bot may
    // race), points at an event delivered past the fake.
    if (unknown && refused === undefined && !this.deletedChannels.has(channel))
      this.unknownTargets.push(`${call.method} ${channel}`);
    const unreachable =
      channel !== undefined &&
      (unknown || (installation !== undefined && !this.reaches(installation, channel)));
    let body: ApiBody;
    this.acting = installation;
    try {
      body =
        refused ??
        (unreachable || hidden
          ? fail('channel_not_found')
          : (this.refusedOutside(channel, call.method, scopes) ?? handler(call.args)));
    } finally {
      this.acting = undefined;
    }
    const violation = undocumentedAnswer(CONTRACTS, call.method, body);
    if (violation) {
      this.contractViolations.push(violation);
      throw new Error(`FakeSlack: ${violation}`);
    }
    return { status: 200, headers, body };
  }

  /** The workspace a channel belongs to. */
  private teamOf(channel: string): string {
    return this.channelConfig.get(channel)?.teamId ?? this.teamId;
  }

  private reaches(installation: FakeInstallation, channel: string): boolean {
    return this.tenancy.reaches(
      installation,
      this.teamOf(channel),
      this.channelConfig.get(channel)?.sharedWith,
    );
  }

  /** The bot user and bot of the installation calling now (the fake's own outside a call). */
  private get me(): { botUserId: string; botId: string; teamId: string } {
    return {
      botUserId: this.acting?.botUserId ?? this.botUserId,
      botId: this.acting?.botId ?? this.botId,
      teamId: this.acting?.teamId ?? this.teamId,
    };
  }

  private conversationType(id: string): ConversationType {
    return (
      this.channelConfig.get(id)?.type ??
      (id.startsWith('D') ? 'im' : id.startsWith('G') ? 'group' : 'channel')
    );
  }

  private takeFailure(method: string, args: Record<string, unknown>): SlackFailure | undefined {
    const now = Date.now();
    this.failureWindows = this.failureWindows.filter((w) => w.until > now);
    const window = this.failureWindows.find(
      (w) => (w.method === '*' || w.method === method) && (w.when?.(args) ?? true),
    );
    if (window) return window.failure;
    const queue = this.failures.get(method);
    const slot = queue?.[0];
    if (!queue || !slot || (slot.when && !slot.when(args))) return undefined;
    slot.remaining -= 1;
    if (slot.remaining <= 0) queue.shift();
    return slot.failure;
  }

  // ---------------------------------------------------------------- internals: Socket Mode

  private handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (!this.acceptRequest(req)) {
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const ticket = url.searchParams.get('ticket');
    // Tickets from apps.connections.open are single use, so every reconnect must fetch a fresh URL.
    if (this.stopped || !url.pathname.startsWith('/link') || !ticket || !this.tickets.delete(ticket)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.acceptSocket(ws));
  }

  private acceptSocket(ws: WebSocket): void {
    this.socketCounter += 1;
    const connection: SocketConnection = { ws, host: `applink-fake-${this.socketCounter}` };
    this.sockets.add(connection);
    ws.on('error', () => {
      // Client-side resets surface here; the close handler does the bookkeeping.
    });
    ws.on('message', (data: RawData, isBinary: boolean) => this.handleSocketMessage(data, isBinary));
    ws.on('close', () => {
      this.sockets.delete(connection);
      for (const [id, pending] of this.pendingAcks) {
        if (pending.connection !== connection) continue;
        clearTimeout(pending.timer);
        this.pendingAcks.delete(id);
        pending.reject(new Error(`FakeSlack: socket closed before envelope ${id} was acked`));
      }
      this.pokeWaiters();
    });
    // SocketModeClient only resolves start() (emits "connected") once it sees this hello.
    ws.send(
      JSON.stringify({
        type: 'hello',
        num_connections: this.socketConnectionCount,
        debug_info: { host: connection.host, build_number: 1, approximate_connection_time: 18060 },
        connection_info: { app_id: this.appId },
      }),
    );
    this.pokeWaiters();
  }

  private handleSocketMessage(data: RawData, isBinary: boolean): void {
    if (isBinary) return;
    let message: unknown;
    try {
      message = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : String(data));
    } catch {
      return;
    }
    if (!isRecord(message) || typeof message.envelope_id !== 'string') return;
    const pending = this.pendingAcks.get(message.envelope_id);
    if (!pending) return;
    clearTimeout(pending.timer);
    this.pendingAcks.delete(message.envelope_id);
    const payload = message.payload;
    const bare = payload === undefined || (isRecord(payload) && Object.keys(payload).length === 0);
    pending.resolve({ envelopeId: message.envelope_id, ackPayload: bare ? undefined : payload });
  }

  // ---------------------------------------------------------------- internals: message model

  private channelMap(channel: string): Map<string, StoredMessage> {
    let map = this.messages.get(channel);
    if (!map) {
      map = new Map();
      this.messages.set(channel, map);
    }
    return map;
  }

  /**
   * The message a call is about. One that is not there, or no longer, is refused as message_not_found
   * (slack-api-ref chat.update.json, chat.delete.json, chat.getPermalink.json, reactions.add.json,
   * reactions.remove.json); one the fake never saw, in a conversation it knows, is recorded in unknownTargets,
   * as its event most likely went past the fake.
   */
  private messageAskedAbout(method: string, channel: string, ts: string): StoredMessage | undefined {
    const stored = this.find(channel, ts);
    if (!stored && this.knows(channel) && !this.deleted.has(`${channel}:${ts}`))
      this.unknownTargets.push(`${method} ${channel} ${ts}`);
    return stored;
  }

  private find(channel: string, ts: string): StoredMessage | undefined {
    return this.messages.get(channel)?.get(ts);
  }

  private insertMessage(channel: string, message: SlackMessage, threadTs?: string, streaming = false): void {
    if (threadTs !== undefined && threadTs !== message.ts) {
      message.thread_ts = threadTs;
      const parentUser = this.find(channel, threadTs)?.message.user;
      if (parentUser !== undefined) message.parent_user_id = parentUser;
    }
    this.channelMap(channel).set(message.ts, { message, streaming });
  }

  private sortedMessages(channel: string): SlackMessage[] {
    return [...(this.messages.get(channel)?.values() ?? [])].map((s) => s.message).sort(byTs);
  }

  private replies(channel: string, rootTs: string): SlackMessage[] {
    return this.sortedMessages(channel).filter((m) => m.thread_ts === rootTs && m.ts !== rootTs);
  }

  /** Whether the thread `ts` belongs to (a root or a reply) has at least one reply now. */
  private hasReplies(channel: string, ts: string): boolean {
    const rootTs = this.find(channel, ts)?.message.thread_ts ?? ts;
    return this.replies(channel, rootTs).length > 0;
  }

  /** chat.postEphemeral's `user` "should be in the channel": configured members, an IM's person, else anyone. */
  private isMember(channel: string, user: string): boolean {
    const config = this.channelConfig.get(channel);
    if (config?.members) return config.members.includes(user);
    if (config?.type === 'im' && config.user !== undefined) return user === config.user;
    return true;
  }

  /** Slack resolves any ts inside a thread to the whole thread. */
  private thread(channel: string, ts: string): SlackMessage[] {
    const found = this.find(channel, ts)?.message;
    if (!found) return [];
    const rootTs = found.thread_ts ?? found.ts;
    const root = this.find(channel, rootTs)?.message;
    return [...(root ? [root] : []), ...this.replies(channel, rootTs)];
  }

  private removeMessage(channel: string, ts: string): void {
    const map = this.messages.get(channel);
    const stored = map?.get(ts);
    if (!map || !stored) return;
    this.deleted.add(`${channel}:${ts}`);
    const isRoot = stored.message.thread_ts === undefined || stored.message.thread_ts === ts;
    if (isRoot && this.replies(channel, ts).length > 0) {
      // A deleted parent with replies stays behind as a tombstone, as in the Slack client.
      map.set(ts, {
        streaming: false,
        message: {
          type: 'message',
          subtype: 'tombstone',
          hidden: true,
          user: 'USLACKBOT',
          text: 'This message was deleted.',
          ts,
          thread_ts: ts,
        },
      });
    } else {
      map.delete(ts);
    }
  }

  /** The wire shape of a stored message: thread summary and reactions are derived at read time. */
  private view(channel: string, message: SlackMessage, includeMetadata: boolean): SlackMessage {
    const out: SlackMessage = structuredClone(message);
    if (!includeMetadata) delete out.metadata;
    if (out.thread_ts === undefined || out.thread_ts === out.ts) {
      const replies = this.replies(channel, out.ts);
      if (replies.length > 0) {
        const replyUsers = [...new Set(replies.map((r) => r.user).filter((u) => u !== undefined))];
        out.thread_ts = out.ts;
        out.reply_count = replies.length;
        out.reply_users = replyUsers;
        out.reply_users_count = replyUsers.length;
        out.latest_reply = replies[replies.length - 1]!.ts;
      }
    }
    const reactions = this.reactions.get(`${channel}:${out.ts}`);
    if (reactions && reactions.length > 0) out.reactions = structuredClone(reactions);
    return out;
  }

  // ---------------------------------------------------------------- internals: agent sessions

  /**
   * The stored session. `processing` is not expired here, though Slack documents it: "Sessions in the
   * `processing` status time out after one hour and automatically transition to `active`" (docs.slack.dev,
   * ai/agent-sessions, "Session timeouts"); the bot sets it again every 50 minutes, which no test waits for.
   */
  private liveAgentSession(channel: string, threadTs: string): StoredAgentSession | undefined {
    return this.agentSessions.get(`${channel}:${threadTs}`);
  }

  /** Sets a session's status, creating the session first if the thread has none. */
  private transitionAgentSession(
    channel: string,
    threadTs: string,
    status: AgentSessionStatus,
    via: string,
    create: { title?: string; initiator?: string } = {},
  ): StoredAgentSession {
    const at = Date.now();
    let session = this.liveAgentSession(channel, threadTs);
    if (!session) {
      session = { channel, threadTs, status, createdAt: at, history: [], titles: [] };
      if (create.initiator !== undefined) session.initiatorUserId = create.initiator;
      if (create.title !== undefined) this.retitle(session, create.title, via);
      this.agentSessions.set(`${channel}:${threadTs}`, session);
    }
    session.status = status;
    session.history.push({ status, at, via });
    return session;
  }

  private retitle(session: StoredAgentSession, title: string, via: string): void {
    session.title = title;
    session.titles.push({ title, at: Date.now(), via });
  }

  private addAgentSessionHandlers(h: Map<string, Handler>): void {
    const overrideKeys = ['icon_emoji', 'icon_url', 'username'] as const;

    // Slack's reference for agents.sessions.* (slack-api-ref f4837c0c) documents `feature_disabled` and says nothing
    // of an app without features.agent_view, so that is the answer here; setSuggestedPrompts documents
    // `not_agent_app` for it. The bot reads both as "not an agent app here".
    h.set('agents.sessions.setStatus', (args) => {
      if (!this.agentView) return fail('feature_disabled');
      const status = str(args, 'status');
      if (!status) return fail('invalid_arguments');
      if (!isAgentSessionStatus(status)) return fail('invalid_status');
      const channel = str(args, 'channel_id');
      if (!channel) return fail('channel_not_found');
      // agents.sessions.setStatus.json: `not_authorized`, "The caller is not a member of the specified channel".
      if (this.publicWithoutBot(channel)) return fail('not_authorized');
      // Every session here is thread-based (the fake has no session channels), so thread_ts is required.
      const threadTs = str(args, 'thread_ts');
      if (!threadTs) return fail('thread_ts_required');
      const title = args.title;
      if (title !== undefined && (typeof title !== 'string' || title.length > AGENT_SESSION_TITLE_MAX)) {
        return fail('invalid_arguments');
      }
      const username = args.username;
      if (typeof username === 'string' && username.length > AGENT_SESSION_TITLE_MAX)
        return fail('invalid_arguments');
      const overrides = overrideKeys.filter((key) => args[key] !== undefined);
      const setsOverride = overrides.some((key) => typeof args[key] === 'string' && args[key] !== '');
      if (setsOverride && !this.scopes.includes('chat:write.customize')) {
        return { ...fail('missing_scope'), needed: 'chat:write.customize', provided: this.scopes.join(',') };
      }
      // The initiator "Must be a member of the channel" (@slack/web-api's AgentsSessionsSetStatusArguments);
      // Slack's reference lists `user_not_found` among the method's errors, the one answered here.
      const initiator = str(args, 'initiator_user_id');
      if (
        initiator !== undefined &&
        !this.liveAgentSession(channel, threadTs) &&
        !this.isMember(channel, initiator)
      )
        return fail('user_not_found');
      // "creating the session if needed" (the method's description), whatever the status, `closed` included;
      // title and initiator_user_id only count when this call creates the session (@slack/web-api's
      // AgentsSessionsSetStatusArguments: "Only used when creating a new session; ignored if the session already
      // exists").
      const session = this.transitionAgentSession(channel, threadTs, status, 'agents.sessions.setStatus', {
        title: typeof title === 'string' && title !== '' ? title : undefined,
        initiator,
      });
      // Naming any of the three replaces the whole set; naming none leaves it (null or '' clears one).
      if (overrides.length > 0) {
        const appearance: NonNullable<StoredAgentSession['appearance']> = {};
        for (const key of overrides) {
          const value = args[key];
          if (typeof value === 'string' && value !== '') appearance[key] = value;
        }
        session.appearance = appearance;
      }
      const body: ApiBody = { ok: true, status: session.status, agent_status: session.status };
      if (session.title !== undefined && this.agentSessionTitleAnswered) body.title = session.title;
      if (!this.agentSessionStoppedSubscribed) {
        const warning = 'missing_agent_session_stopped_event_subscription';
        body.warning = warning;
        body.response_metadata = { warnings: [warning] };
      }
      return body;
    });

    h.set('agents.sessions.rename', (args) => {
      if (!this.agentView) return fail('feature_disabled');
      const channel = str(args, 'channel_id');
      if (!channel) return fail('channel_not_found');
      const title = args.title;
      if (typeof title !== 'string' || title.length === 0 || title.length > AGENT_SESSION_TITLE_MAX) {
        return fail('invalid_arguments');
      }
      const threadTs = str(args, 'thread_ts');
      if (!threadTs) return fail('thread_ts_required');
      // "Cannot rename an archived channel" (agents.sessions.rename.json): said of session channels, applied to
      // a thread's session in an archived channel too, the stricter reading.
      if (this.archived.has(channel)) return fail('is_archived');
      const session = this.liveAgentSession(channel, threadTs);
      if (!session) return fail('session_not_found');
      this.retitle(session, title, 'agents.sessions.rename');
      return { ok: true, title };
    });
  }

  private botProfile(): Record<string, unknown> {
    return {
      id: this.me.botId,
      app_id: this.appId,
      name: this.users.get(this.botUserId)?.name ?? 'bot',
      deleted: false,
      team_id: this.me.teamId,
      icons: {},
      updated: 1700000000,
    };
  }

  private botMessage(ts: string, text: string): SlackMessage {
    return {
      type: 'message',
      ts,
      text,
      user: this.me.botUserId,
      bot_id: this.me.botId,
      app_id: this.appId,
      team: this.me.teamId,
      bot_profile: this.botProfile(),
    };
  }

  /**
   * Checks shared by methods that write into a channel. `archivedError`: what the method documents for an
   * archived channel (chat.update: `is_inactive`).
   */
  private writableChannel(args: Args, archivedError = 'is_archived'): string | ApiBody {
    const channel = str(args, 'channel');
    if (!channel) return fail('channel_not_found');
    if (this.archived.has(channel)) return fail(archivedError);
    return channel;
  }

  /** Why a post (an ephemeral one: `ephemeral`) is refused: the message limit, a read-only channel, a locked thread. */
  private postingRefusal(
    channel: string,
    threadTs: string | undefined,
    ephemeral: boolean,
  ): ApiBody | undefined {
    if (this.messageLimitReached) return fail('message_limit_exceeded');
    if (this.readOnlyChannels.has(channel))
      return fail(ephemeral ? 'restricted_action' : 'restricted_action_read_only_channel');
    if (threadTs !== undefined && this.lockedThreads.has(`${channel}:${threadTs}`))
      return fail(ephemeral ? 'restricted_action' : 'restricted_action_thread_locked');
    return undefined;
  }

  private checkContent(method: string, args: Args): ApiBody | undefined {
    const blocks = args.blocks;
    if (blocks !== undefined && (!Array.isArray(blocks) || blocks.length > MAX_BLOCKS)) {
      return fail('invalid_blocks');
    }
    if (args.attachments !== undefined && !Array.isArray(args.attachments))
      return fail(contentError(method, 'invalid_attachments'));
    const violation = validateMessageBlocks(blocks, args.attachments);
    if (!violation) return undefined;
    const error = contentError(method, violation.error);
    // Slack names the breach in response_metadata.messages; WebClient surfaces it on the error's data.
    if (violation.message) return { ok: false, error, response_metadata: { messages: [violation.message] } };
    return fail(error);
  }

  private applyContent(message: SlackMessage, args: Args): void {
    const text = typeof args.text === 'string' ? args.text : str(args, 'markdown_text');
    if (text !== undefined) message.text = text;
    // Omitted blocks/attachments are retained on update; an empty array clears them.
    for (const key of ['blocks', 'attachments'] as const) {
      const value = args[key];
      if (!Array.isArray(value)) continue;
      if (value.length > 0) message[key] = value;
      else delete message[key];
    }
    if (isRecord(args.metadata)) message.metadata = args.metadata;
  }

  private streamText(args: Args): string {
    let text = str(args, 'markdown_text') ?? '';
    if (Array.isArray(args.chunks)) {
      for (const chunk of args.chunks) {
        if (isRecord(chunk) && chunk.type === 'markdown_text' && typeof chunk.text === 'string')
          text += chunk.text;
      }
    }
    return text;
  }

  private userObject(id: string, user: FakeSlackUser): Record<string, unknown> {
    const realName = user.realName ?? user.name;
    return {
      id,
      team_id: this.teamId,
      name: user.name,
      deleted: false,
      real_name: realName,
      tz: 'Europe/London',
      tz_label: 'Greenwich Mean Time',
      tz_offset: 0,
      is_admin: false,
      is_owner: false,
      is_bot: user.isBot ?? false,
      is_app_user: false,
      updated: 1700000000,
      profile: {
        real_name: realName,
        real_name_normalized: realName,
        display_name: user.name,
        display_name_normalized: user.name,
        team: this.teamId,
        ...(id === this.botUserId ? { bot_id: this.botId } : {}),
      },
    };
  }

  /**
   * Why the bot may not read a conversation's messages (conversations.history / replies), if it may not: a
   * private conversation it is not in does not exist for it, and each kind of conversation needs its own
   * history scope (docs: those methods' scopes and `missing_scope`).
   */
  private unreadable(id: string): ApiBody | undefined {
    if (this.hiddenFromBot(id)) return fail('channel_not_found');
    return this.missingScopeFor(id, 'history');
  }

  /**
   * The scope a method needs for this kind of conversation (`channels:`, `groups:`, `im:` or `mpim:`, then
   * `history` or `read`), when the token lacks it: slack-api-ref lists all four for conversations.history,
   * .replies and .info, and Slack answers `missing_scope` for a conversation whose own is not granted.
   */
  private missingScopeFor(id: string, access: 'history' | 'read'): ApiBody | undefined {
    const type =
      this.channelConfig.get(id)?.type ??
      (id.startsWith('D') ? 'im' : id.startsWith('G') ? 'group' : 'channel');
    const needed = `${{ channel: 'channels', group: 'groups', im: 'im', mpim: 'mpim' }[type]}:${access}`;
    if (this.scopes.includes(needed)) return undefined;
    return { ...fail('missing_scope'), needed, provided: this.scopes.join(',') };
  }

  /**
   * A public channel the bot is not in, and a method that needs it to be: posting there takes
   * `chat:write.public` (which the manifest does not ask for), reading its history a user token
   * (slack-api-ref: chat.postMessage.json, chat.postEphemeral.json and conversations.history.json document
   * `not_in_channel`; conversations.history: "Only user tokens can access public channels they are not in").
   */
  private refusedOutside(
    channel: string | undefined,
    method: string,
    scopes: readonly string[],
  ): ApiBody | undefined {
    if (channel === undefined || !this.publicWithoutBot(channel)) return undefined;
    if (method === 'conversations.history') return fail('not_in_channel');
    const posts = method === 'chat.postMessage' || method === 'chat.postEphemeral';
    return posts && !scopes.includes('chat:write.public') ? fail('not_in_channel') : undefined;
  }

  private publicWithoutBot(channel: string): boolean {
    return (
      this.channelConfig.get(channel)?.botIsMember === false && this.conversationType(channel) === 'channel'
    );
  }

  /**
   * Whether the conversation exists: configured, told of by an event, or holding messages, and not deleted.
   * Slack answers channel_not_found for any other ID (slack-api-ref: "Value passed for `channel` was
   * invalid."). A channel's name, or a user's ID for the app's DM, which chat.postMessage also takes, is not
   * modelled: the bot passes neither, and the fake refuses both.
   */
  private knows(id: string): boolean {
    if (this.deletedChannels.has(id)) return false;
    return this.channelConfig.has(id) || this.seenChannels.has(id) || this.messages.has(id);
  }

  /** A private channel the bot is not in: Slack answers as if it did not exist. */
  private hiddenFromBot(id: string): boolean {
    const config = this.channelConfig.get(id);
    return config?.botIsMember === false && (config.type === 'group' || config.type === 'mpim');
  }

  private channelObject(id: string): Record<string, unknown> {
    const config = this.channelConfig.get(id) ?? {};
    const type = config.type ?? (id.startsWith('D') ? 'im' : id.startsWith('G') ? 'group' : 'channel');
    const base = {
      id,
      created: 1700000000,
      is_archived: this.archived.has(id),
      is_org_shared: false,
      context_team_id: this.teamOf(id),
    };
    if (type === 'im') {
      return { ...base, is_im: true, user: config.user ?? 'U0UNKNOWN', is_user_deleted: false, priority: 0 };
    }
    const name = config.name ?? id.toLowerCase();
    return {
      ...base,
      name,
      name_normalized: name,
      is_channel: type === 'channel',
      is_group: type === 'group',
      is_im: false,
      is_mpim: type === 'mpim',
      is_private: type !== 'channel',
      is_general: false,
      is_shared: false,
      is_ext_shared: false,
      is_member: true,
      creator: 'U0ADMIN',
      topic: { value: '', creator: '', last_set: 0 },
      purpose: { value: '', creator: '', last_set: 0 },
    };
  }

  /** Applies oldest/latest/limit/cursor the way Slack's history methods do. */
  private page(
    messages: SlackMessage[],
    args: Args,
    channel: string,
    pinned?: SlackMessage,
  ): { messages: SlackMessage[]; has_more: boolean; response_metadata?: { next_cursor: string } } {
    const oldest = str(args, 'oldest');
    const latest = str(args, 'latest');
    const inclusive = flag(args, 'inclusive');
    const inRange = (m: SlackMessage) =>
      (oldest === undefined ||
        (inclusive ? Number(m.ts) >= Number(oldest) : Number(m.ts) > Number(oldest))) &&
      (latest === undefined || (inclusive ? Number(m.ts) <= Number(latest) : Number(m.ts) < Number(latest)));
    let list = messages.filter((m) => m === pinned || inRange(m));
    const cursorTs = decodeCursor(str(args, 'cursor'));
    if (cursorTs !== undefined) {
      const start = list.findIndex((m) => m.ts === cursorTs);
      list = start >= 0 ? list.slice(start) : [];
    }
    const limit = Math.min(Math.max(int(args, 'limit') ?? 100, 1), this.readPageMax);
    const includeMetadata = flag(args, 'include_all_metadata');
    const pageItems = list.slice(0, limit).map((m) => this.view(channel, m, includeMetadata));
    const next = list[limit];
    return next
      ? { messages: pageItems, has_more: true, response_metadata: { next_cursor: encodeCursor(next.ts) } }
      : { messages: pageItems, has_more: false };
  }

  // ---------------------------------------------------------------- Web API methods

  private buildHandlers(): Map<string, Handler> {
    const h = new Map<string, Handler>();

    // Per token: the workspace of a workspace install; for an org-wide install the org (its id as team_id),
    // with enterprise_id and is_enterprise_install. auth.test documents these fields, not their values for an
    // org token; the bot must not take team_id for a workspace there (Bolt's installer reads only bot_id and url).
    h.set('auth.test', () => {
      const acting = this.acting;
      const org = acting?.enterpriseId === undefined ? undefined : this.tenancy.orgs.get(acting.enterpriseId);
      const teamId = acting?.teamId ?? org?.enterpriseId ?? this.teamId;
      const teamName = acting?.isEnterpriseInstall
        ? (org?.name ?? teamId)
        : (this.tenancy.workspaces.get(teamId)?.name ?? this.teamName);
      const host = acting?.isEnterpriseInstall ? '.enterprise.slack.com' : '.slack.com';
      return {
        ok: true,
        url: `https://${teamName.toLowerCase().replace(/[^a-z0-9]+/g, '-')}${host}/`,
        team: teamName,
        user: this.users.get(this.botUserId)?.name ?? 'bot',
        team_id: teamId,
        user_id: this.me.botUserId,
        bot_id: this.me.botId,
        ...(org && { enterprise_id: org.enterpriseId }),
        is_enterprise_install: acting?.isEnterpriseInstall ?? false,
      };
    });

    h.set('oauth.v2.access', (args) => this.oauth.access(args));

    h.set('apps.connections.open', () => {
      const ticket = randomUUID();
      this.tickets.add(ticket);
      return { ok: true, url: `ws://127.0.0.1:${this.port}/link/?ticket=${ticket}&app_id=${this.appId}` };
    });

    h.set('chat.postMessage', (args) => {
      const channel = this.writableChannel(args);
      if (typeof channel !== 'string') return channel;
      const refused = this.postingRefusal(channel, str(args, 'thread_ts'), false);
      if (refused) return refused;
      const invalid = this.checkContent('chat.postMessage', args);
      if (invalid) return invalid;
      if (withoutContent(args)) return fail('no_text');
      const message = this.botMessage(nextTs(), '');
      this.applyContent(message, args);
      if (flag(args, 'reply_broadcast') && str(args, 'thread_ts')) message.subtype = 'thread_broadcast';
      this.insertMessage(channel, message, str(args, 'thread_ts'));
      // As in Slack, the app's reply in an agent-view DM thread clears the thread's status: the status stays
      // only "if no message has been sent" (docs.slack.dev/reference/methods/assistant.threads.setStatus).
      const assistantThread = this.assistantThreads.get(`${channel}:${str(args, 'thread_ts') ?? ''}`);
      if (assistantThread) assistantThread.status = '';
      return { ok: true, channel, ts: message.ts, message: this.view(channel, message, true) };
    });

    h.set('chat.update', (args) => {
      const channel = this.writableChannel(args, 'is_inactive');
      if (typeof channel !== 'string') return channel;
      if (this.messageLimitReached) return fail('message_limit_exceeded');
      const ts = str(args, 'ts');
      const stored = ts ? this.messageAskedAbout('chat.update', channel, ts) : undefined;
      if (!ts || !stored) return fail('message_not_found');
      if (stored.message.user !== this.me.botUserId) return fail('cant_update_message');
      const invalid = this.checkContent('chat.update', args);
      if (invalid) return invalid;
      if (withoutContent(args)) return fail('no_text');
      this.applyContent(stored.message, args);
      stored.message.edited = { user: this.me.botUserId, ts: nextTs() };
      const message = this.view(channel, stored.message, true);
      return { ok: true, channel, ts, text: message.text, message };
    });

    h.set('chat.delete', (args) => {
      const channel = str(args, 'channel');
      if (!channel) return fail('channel_not_found');
      const ts = str(args, 'ts');
      const stored = ts ? this.messageAskedAbout('chat.delete', channel, ts) : undefined;
      if (!ts || !stored || stored.message.subtype === 'tombstone') return fail('message_not_found');
      if (stored.message.user !== this.me.botUserId) return fail('cant_delete_message');
      this.removeMessage(channel, ts);
      return { ok: true, channel, ts };
    });

    h.set('chat.postEphemeral', (args) => {
      const channel = this.writableChannel(args);
      if (typeof channel !== 'string') return channel;
      const user = str(args, 'user');
      if (!user || !this.isMember(channel, user)) return fail('user_not_in_channel');
      const refused = this.postingRefusal(channel, str(args, 'thread_ts'), true);
      if (refused) return refused;
      const invalid = this.checkContent('chat.postEphemeral', args);
      if (invalid) return invalid;
      if (withoutContent(args)) return fail('no_text');
      const messageTs = nextTs();
      const threadTs = str(args, 'thread_ts');
      this.ephemeralMessages.push({
        channel,
        user,
        messageTs,
        text: typeof args.text === 'string' ? args.text : undefined,
        blocks: Array.isArray(args.blocks) ? args.blocks : undefined,
        threadTs,
        // Accepted either way, shown only in a thread that already has replies (thread_ts, chat.postEphemeral).
        visible: threadTs === undefined || this.hasReplies(channel, threadTs),
        via: 'chat.postEphemeral',
      });
      return { ok: true, message_ts: messageTs };
    });

    h.set('chat.getPermalink', (args) => {
      const channel = str(args, 'channel');
      const ts = str(args, 'message_ts');
      if (!channel) return fail('channel_not_found');
      if (!ts || !this.messageAskedAbout('chat.getPermalink', channel, ts)) return fail('message_not_found');
      const base = `https://${this.teamName.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.slack.com`;
      return { ok: true, channel, permalink: `${base}/archives/${channel}/p${ts.replace('.', '')}` };
    });

    h.set('chat.startStream', (args) => {
      const channel = this.writableChannel(args);
      if (typeof channel !== 'string') return channel;
      const threadTs = str(args, 'thread_ts');
      if (!threadTs) return fail('invalid_arguments');
      const message = this.botMessage(nextTs(), this.streamText(args));
      this.insertMessage(channel, message, threadTs, true);
      // A stream creates the thread's session if needed (initiator: the root's author) and sets processing.
      const initiator = this.find(channel, threadTs)?.message.user;
      this.transitionAgentSession(channel, threadTs, 'processing', 'chat.startStream', { initiator });
      return { ok: true, channel, ts: message.ts };
    });

    h.set('chat.appendStream', (args) => {
      const channel = str(args, 'channel') ?? '';
      const stored = this.find(channel, str(args, 'ts') ?? '');
      if (!stored) return fail('message_not_found');
      if (!stored.streaming) return fail('message_not_in_streaming_state');
      stored.message.text += this.streamText(args);
      return { ok: true, channel, ts: stored.message.ts };
    });

    h.set('chat.stopStream', (args) => {
      const channel = str(args, 'channel') ?? '';
      const stored = this.find(channel, str(args, 'ts') ?? '');
      if (!stored) return fail('message_not_found');
      if (!stored.streaming) return fail('message_not_in_streaming_state');
      const sessionStatus = str(args, 'session_status') ?? 'active';
      if (!isAgentSessionStatus(sessionStatus)) return fail('invalid_arguments');
      const invalid = this.checkContent('chat.stopStream', args);
      if (invalid) return invalid;
      stored.message.text += this.streamText(args);
      if (Array.isArray(args.blocks)) stored.message.blocks = args.blocks;
      if (isRecord(args.metadata)) stored.message.metadata = args.metadata;
      stored.streaming = false;
      // session_status (default active) moves the thread's session on, if there is one.
      const rootTs = stored.message.thread_ts ?? stored.message.ts;
      if (this.agentSessions.has(`${channel}:${rootTs}`)) {
        this.transitionAgentSession(channel, rootTs, sessionStatus, 'chat.stopStream');
      }
      return { ok: true, channel, ts: stored.message.ts, message: this.view(channel, stored.message, true) };
    });

    // reactions.remove documents no error for an archived channel; `no_access` is the one that fits.
    const reactionTarget = (
      method: string,
      args: Args,
      archivedError: string,
    ): { key: string; name: string } | ApiBody => {
      const channel = this.writableChannel(args, archivedError);
      if (typeof channel !== 'string') return channel;
      const ts = str(args, 'timestamp');
      if (!ts) return fail('no_item_specified');
      const name = str(args, 'name');
      if (!name) return fail('invalid_name');
      // A message deleted (a root with replies stays as a tombstone) takes no reaction either.
      if (this.deleted.has(`${channel}:${ts}`) || !this.messageAskedAbout(method, channel, ts))
        return fail('message_not_found');
      return { key: `${channel}:${ts}`, name };
    };

    h.set('reactions.add', (args) => {
      const target = reactionTarget('reactions.add', args, 'is_archived');
      if ('ok' in target) return target;
      const list = this.reactions.get(target.key) ?? [];
      const existing = list.find((r) => r.name === target.name);
      if (existing?.users.includes(this.me.botUserId)) return fail('already_reacted');
      if (existing) {
        existing.users.push(this.me.botUserId);
        existing.count += 1;
      } else {
        list.push({ name: target.name, users: [this.me.botUserId], count: 1 });
      }
      this.reactions.set(target.key, list);
      return { ok: true };
    });

    h.set('reactions.remove', (args) => {
      const target = reactionTarget('reactions.remove', args, 'no_access');
      if ('ok' in target) return target;
      const list = this.reactions.get(target.key) ?? [];
      const existing = list.find((r) => r.name === target.name);
      if (!existing?.users.includes(this.me.botUserId)) return fail('no_reaction');
      existing.users = existing.users.filter((u) => u !== this.me.botUserId);
      existing.count -= 1;
      this.reactions.set(
        target.key,
        list.filter((r) => r.count > 0),
      );
      return { ok: true };
    });

    h.set('users.info', (args) => {
      const id = str(args, 'user');
      const user = id ? this.users.get(id) : undefined;
      if (!id || !user) return fail('user_not_found');
      return { ok: true, user: this.userObject(id, user) };
    });

    h.set('conversations.info', (args) => {
      const id = str(args, 'channel');
      if (!id || this.hiddenFromBot(id)) return fail('channel_not_found');
      const unreadable = this.missingScopeFor(id, 'read');
      if (unreadable) return unreadable;
      return { ok: true, channel: this.channelObject(id) };
    });

    h.set('conversations.replies', (args) => {
      const channel = str(args, 'channel');
      if (!channel) return fail('channel_not_found');
      const unreadable = this.unreadable(channel);
      if (unreadable) return unreadable;
      const thread = this.thread(channel, str(args, 'ts') ?? '');
      if (thread.length === 0) return fail('thread_not_found');
      // The parent leads the first page whatever oldest/latest say, and counts towards limit.
      const root = thread.find((m) => m.thread_ts === undefined || m.thread_ts === m.ts);
      return { ok: true, ...this.page(thread, args, channel, root) };
    });

    h.set('conversations.history', (args) => {
      const channel = str(args, 'channel');
      if (!channel) return fail('channel_not_found');
      const unreadable = this.unreadable(channel);
      if (unreadable) return unreadable;
      const topLevel = this.sortedMessages(channel)
        .filter((m) => m.thread_ts === undefined || m.thread_ts === m.ts || m.subtype === 'thread_broadcast')
        .reverse();
      return { ok: true, ...this.page(topLevel, args, channel), pin_count: 0 };
    });

    /** A thread's state; with `conversationLevel`, no thread_ts names the whole Messages tab conversation. */
    const assistantThread = (args: Args, conversationLevel = false): AssistantThreadState | ApiBody => {
      const channel = str(args, 'channel_id');
      const threadTs = str(args, 'thread_ts');
      if (!channel || (!threadTs && !conversationLevel)) return fail('invalid_arguments');
      const key = `${channel}:${threadTs ?? ''}`;
      const state = this.assistantThreads.get(key) ?? {};
      this.assistantThreads.set(key, state);
      return state;
    };

    h.set('assistant.threads.setStatus', (args) => {
      const state = assistantThread(args);
      if ('ok' in state) return state;
      if (typeof args.status !== 'string') return fail('invalid_arguments');
      state.status = args.status;
      state.loadingMessages = args.loading_messages;
      // An agent app's thread is an agent session, and this moves it: "with a non-empty `status` string sets the
      // session to `processing`. An empty `status` string sets the session to `active`." (docs.slack.dev,
      // ai/migrating-to-agent-messaging, "Compatibility bridge"). Slack does not say whether a thread without a
      // session gets one; here it does (untitled, no initiator), the reading that costs an app the most.
      const threadTs = str(args, 'thread_ts');
      const channel = str(args, 'channel_id');
      if (this.agentView && channel && threadTs) {
        const status = args.status === '' ? 'active' : 'processing';
        this.transitionAgentSession(channel, threadTs, status, 'assistant.threads.setStatus');
      }
      return { ok: true };
    });

    // Agent apps (features.agent_view) send no thread_ts: the prompts belong to the Messages tab.
    h.set('assistant.threads.setSuggestedPrompts', (args) => {
      if (!this.agentView) return fail('not_agent_app');
      const state = assistantThread(args, true);
      if ('ok' in state) return state;
      // "Up to four suggested prompts" (docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts),
      // "each ... with its `title` and `message`" (slack-api-ref, assistant.threads.setSuggestedPrompts.json):
      // Slack names no error for more, so the common one.
      const prompts: unknown = args.prompts;
      const wellFormed = (prompt: unknown) =>
        typeof prompt === 'object' &&
        prompt !== null &&
        typeof (prompt as Record<string, unknown>).title === 'string' &&
        typeof (prompt as Record<string, unknown>).message === 'string';
      if (!Array.isArray(prompts) || prompts.length > 4 || !prompts.every(wellFormed)) {
        return fail('invalid_arguments');
      }
      state.prompts = prompts;
      state.promptsTitle = str(args, 'title');
      return { ok: true };
    });

    h.set('assistant.threads.setTitle', (args) => {
      const state = assistantThread(args);
      if ('ok' in state) return state;
      const title = str(args, 'title');
      if (!title) return fail('invalid_arguments');
      state.title = title;
      // "applies the provided title to the thread's agent session" (the same "Compatibility bridge").
      const session = this.liveAgentSession(str(args, 'channel_id') ?? '', str(args, 'thread_ts') ?? '');
      if (this.agentView && session) this.retitle(session, title, 'assistant.threads.setTitle');
      return { ok: true };
    });

    this.addAgentSessionHandlers(h);
    return h;
  }
}

/** The conversations an event names: its channel, a reaction's item, an agent thread's, a created channel. */
function channelsNamedBy(event: Record<string, unknown>): string[] {
  const named = [
    event.channel,
    isRecord(event.channel) ? event.channel.id : undefined,
    isRecord(event.item) ? event.item.channel : undefined,
    isRecord(event.assistant_thread) ? event.assistant_thread.channel_id : undefined,
    event.channel_id,
  ];
  return named.filter((id): id is string => typeof id === 'string' && id !== '');
}
