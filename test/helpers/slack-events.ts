import { createHmac, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { BlockAction, BlockElementAction } from '@slack/bolt';

/** Defaults shared with FakeSlack so events and Web API answers describe the same workspace. */
export const DEFAULT_TEAM_ID = 'T0TEAM';
export const DEFAULT_APP_ID = 'A0APP';
export const DEFAULT_BOT_USER_ID = 'U0BOT';
/** The deprecated verification token Slack still puts in every Events API body. */
export const VERIFICATION_TOKEN = 'fake-verification-token';

let lastTsMicros = 0;

/**
 * Unique, strictly increasing Slack-style ts (`<seconds>.<6 digits>`), derived from the wall clock so that
 * messages created here and by FakeSlack (which uses this too) sort in creation order within a thread.
 */
export function nextTs(): string {
  lastTsMicros = Math.max(Date.now() * 1000, lastTsMicros + 1);
  const seconds = Math.floor(lastTsMicros / 1_000_000);
  const micros = lastTsMicros % 1_000_000;
  return `${seconds}.${String(micros).padStart(6, '0')}`;
}

let eventCounter = 0;

function nextEventId(): string {
  eventCounter += 1;
  return `Ev${Date.now().toString(36).toUpperCase()}${String(eventCounter).padStart(4, '0')}`;
}

export interface SlackSignatureHeaders {
  'x-slack-signature': string;
  'x-slack-request-timestamp': string;
}

/** Signs a request body the way Slack does: `v0=` + hex HMAC-SHA256 of `v0:<ts>:<raw body>`. */
export function signSlackRequest(
  signingSecret: string,
  rawBody: string,
  timestampSeconds: number = Math.floor(Date.now() / 1000),
): SlackSignatureHeaders {
  const digest = createHmac('sha256', signingSecret)
    .update(`v0:${timestampSeconds}:${rawBody}`)
    .digest('hex');
  return { 'x-slack-signature': `v0=${digest}`, 'x-slack-request-timestamp': String(timestampSeconds) };
}

export interface SignedPostOptions {
  retryNum?: number;
  retryReason?: string;
  timestampSeconds?: number;
  /** Sends a signature computed with the wrong secret. */
  badSignature?: boolean;
  contentType?: string;
  /** Sends these exact bytes instead of serialising `body` (e.g. malformed JSON). */
  rawBody?: string;
}

export interface SignedPostResult {
  status: number;
  body: string;
  /** Wall time until the full response arrived; Slack gives up after 3 s. */
  ms: number;
}

export interface SignedEventOptions extends SignedPostOptions {
  /**
   * The fake Slack the event comes from: it learns the message (or channel) first, as Slack has it before its
   * event goes out, so the bot's calls about it find it there (FakeSlack.ingestEvent).
   */
  via?: { ingestEvent(body: unknown): void };
}

/** POSTs a signed Events API body as JSON, like Slack's event delivery. */
export function postSignedEvent(
  url: string,
  signingSecret: string,
  body: unknown,
  options: SignedEventOptions = {},
): Promise<SignedPostResult> {
  options.via?.ingestEvent(body);
  const rawBody = options.rawBody ?? JSON.stringify(body);
  return postSigned(url, signingSecret, rawBody, options.contentType ?? 'application/json', options);
}

/** POSTs signed form fields, like Slack's slash command and interactivity deliveries. */
export function postSignedForm(
  url: string,
  signingSecret: string,
  fields: Record<string, string>,
  options: SignedPostOptions = {},
): Promise<SignedPostResult> {
  const rawBody = options.rawBody ?? new URLSearchParams(fields).toString();
  return postSigned(
    url,
    signingSecret,
    rawBody,
    options.contentType ?? 'application/x-www-form-urlencoded',
    options,
  );
}

/** Interactivity (block_actions, view_submission, ...) arrives as a form with one `payload` JSON field. */
export function postSignedInteraction(
  url: string,
  signingSecret: string,
  payload: unknown,
  options: SignedPostOptions = {},
): Promise<SignedPostResult> {
  return postSignedForm(url, signingSecret, { payload: JSON.stringify(payload) }, options);
}

function postSigned(
  url: string,
  signingSecret: string,
  rawBody: string,
  contentType: string,
  options: SignedPostOptions,
): Promise<SignedPostResult> {
  const secret = options.badSignature ? `${signingSecret}-wrong` : signingSecret;
  const headers: Record<string, string> = {
    'content-type': contentType,
    'content-length': String(Buffer.byteLength(rawBody)),
    'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
    ...signSlackRequest(secret, rawBody, options.timestampSeconds),
  };
  if (options.retryNum !== undefined) headers['x-slack-retry-num'] = String(options.retryNum);
  if (options.retryReason !== undefined) headers['x-slack-retry-reason'] = options.retryReason;

  const started = performance.now();
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : request;
  return new Promise((resolve, reject) => {
    // agent:false gives one connection per request, so no pooled keep-alive socket delays the bot's shutdown.
    const req = send(target, { method: 'POST', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString('utf8'),
          ms: performance.now() - started,
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(rawBody);
  });
}

export interface EventEnvelopeOptions {
  teamId?: string;
  appId?: string;
  botUserId?: string;
  eventId?: string;
  /** Seconds since epoch; defaults to now. */
  eventTime?: number;
  /** Whose authorization the event is delivered for (default: the bot's). */
  authorization?: { userId: string; isBot: boolean };
}

export interface SlackEventEnvelope<E> {
  token: string;
  /** null on an org-level event of an org-wide install. */
  team_id: string | null;
  /** On Enterprise Grid (FakeSlack's tenancy fills these in: `slack.tenancy.addressed(envelope)`). */
  enterprise_id?: string;
  context_team_id?: string;
  context_enterprise_id?: string | null;
  api_app_id: string;
  event: E;
  type: 'event_callback';
  event_id: string;
  event_time: number;
  authorizations: Array<{
    enterprise_id: string | null;
    /** null for an org-wide install. */
    team_id: string | null;
    user_id: string;
    is_bot: boolean;
    is_enterprise_install: boolean;
  }>;
  authed_users: string[];
  is_ext_shared_channel: boolean;
  event_context: string;
}

/** Wraps any inner event in the `event_callback` envelope Slack posts to the Request URL. */
export function eventEnvelope<E>(event: E, options: EventEnvelopeOptions = {}): SlackEventEnvelope<E> {
  const teamId = options.teamId ?? DEFAULT_TEAM_ID;
  const botUserId = options.botUserId ?? DEFAULT_BOT_USER_ID;
  return {
    token: VERIFICATION_TOKEN,
    team_id: teamId,
    api_app_id: options.appId ?? DEFAULT_APP_ID,
    event,
    type: 'event_callback',
    event_id: options.eventId ?? nextEventId(),
    event_time: options.eventTime ?? Math.floor(Date.now() / 1000),
    // Slack truncates authorizations to one entry; the full list needs apps.event.authorizations.list.
    authorizations: [
      {
        enterprise_id: null,
        team_id: teamId,
        user_id: options.authorization?.userId ?? botUserId,
        is_bot: options.authorization?.isBot ?? true,
        is_enterprise_install: false,
      },
    ],
    authed_users: [botUserId],
    is_ext_shared_channel: false,
    event_context: `4-${Buffer.from(JSON.stringify({ tid: teamId, aid: options.appId ?? DEFAULT_APP_ID })).toString('base64url')}`,
  };
}

type RichTextElement = { type: 'text'; text: string } | { type: 'user'; user_id: string };

/** Slack attaches a rich_text block to human-typed messages; mentions become `user` elements. */
function richTextBlocks(text: string): Array<Record<string, unknown>> {
  const elements: RichTextElement[] = [];
  let last = 0;
  for (const match of text.matchAll(/<@([A-Z0-9]+)(?:\|[^>]*)?>/g)) {
    if (match.index > last) elements.push({ type: 'text', text: text.slice(last, match.index) });
    elements.push({ type: 'user', user_id: match[1] ?? '' });
    last = match.index + match[0].length;
  }
  if (last < text.length) elements.push({ type: 'text', text: text.slice(last) });
  return [
    {
      type: 'rich_text',
      block_id: randomUUID().slice(0, 5),
      elements: [{ type: 'rich_text_section', elements }],
    },
  ];
}

export interface AppMentionEventOptions {
  teamId?: string;
  channel: string;
  user: string;
  text: string;
  ts?: string;
  threadTs?: string;
  eventId?: string;
}

export interface SlackMessageEventBody {
  type: 'message' | 'app_mention';
  channel: string;
  text?: string;
  ts: string;
  event_ts: string;
  user?: string;
  subtype?: string;
  bot_id?: string;
  thread_ts?: string;
  channel_type?: 'channel' | 'group' | 'im' | 'mpim';
  [key: string]: unknown;
}

export function appMentionEvent(options: AppMentionEventOptions): SlackEventEnvelope<SlackMessageEventBody> {
  const teamId = options.teamId ?? DEFAULT_TEAM_ID;
  const ts = options.ts ?? nextTs();
  const event: SlackMessageEventBody = {
    type: 'app_mention',
    user: options.user,
    text: options.text,
    ts,
    client_msg_id: randomUUID(),
    team: teamId,
    blocks: richTextBlocks(options.text),
    channel: options.channel,
    event_ts: ts,
  };
  if (options.threadTs !== undefined) event.thread_ts = options.threadTs;
  return eventEnvelope(event, { teamId, eventId: options.eventId });
}

export interface MessageEventOptions {
  teamId?: string;
  channel: string;
  channelType: 'channel' | 'group' | 'im' | 'mpim';
  user?: string;
  text: string;
  ts?: string;
  threadTs?: string;
  subtype?: string;
  botId?: string;
  eventId?: string;
  /** Merged last into the inner event, for fields like `message`/`previous_message` of message_changed. */
  extra?: Record<string, unknown>;
}

export function messageEvent(options: MessageEventOptions): SlackEventEnvelope<SlackMessageEventBody> {
  const teamId = options.teamId ?? DEFAULT_TEAM_ID;
  const ts = options.ts ?? nextTs();
  const event: SlackMessageEventBody = {
    type: 'message',
    channel: options.channel,
    text: options.text,
    ts,
    event_ts: ts,
  };
  if (options.subtype !== undefined) event.subtype = options.subtype;
  if (options.user !== undefined) event.user = options.user;
  if (options.botId !== undefined) event.bot_id = options.botId;
  // Only human-typed messages carry client_msg_id and auto-generated rich_text blocks.
  if (options.subtype === undefined && options.botId === undefined) {
    event.client_msg_id = randomUUID();
    event.blocks = richTextBlocks(options.text);
  }
  event.team = teamId;
  if (options.threadTs !== undefined) event.thread_ts = options.threadTs;
  event.channel_type = options.channelType;
  Object.assign(event, options.extra);
  return eventEnvelope(event, { teamId, eventId: options.eventId });
}

/**
 * Slack's `message_changed` for a person's message `ts` in a channel: its words went from `oldText` to
 * `newText` (the same words: an unfurl). `threadTs` for a reply in a thread.
 */
export function messageEditedEvent(options: {
  channel: string;
  user: string;
  ts: string;
  newText: string;
  oldText: string;
  threadTs?: string;
}): SlackEventEnvelope<SlackMessageEventBody> {
  const { channel, user, ts, threadTs } = options;
  const inThread = threadTs === undefined ? {} : { thread_ts: threadTs };
  return messageEvent({
    channel,
    channelType: 'channel',
    text: '',
    subtype: 'message_changed',
    extra: {
      hidden: true,
      message: {
        type: 'message',
        user,
        text: options.newText,
        ts,
        ...inThread,
        edited: { user, ts: nextTs() },
      },
      previous_message: { type: 'message', user, text: options.oldText, ts, ...inThread },
    },
  });
}

export interface ChannelArchiveEventOptions {
  channel: string;
  user?: string;
  teamId?: string;
  eventId?: string;
}

export function channelArchiveEvent(
  options: ChannelArchiveEventOptions,
): SlackEventEnvelope<{ type: 'channel_archive'; channel: string; user: string; event_ts: string }> {
  return eventEnvelope(
    {
      type: 'channel_archive',
      channel: options.channel,
      user: options.user ?? 'U0ADMIN',
      event_ts: nextTs(),
    },
    { teamId: options.teamId, eventId: options.eventId },
  );
}

/** The one-off handshake Slack sends when a Request URL is saved. */
export function urlVerification(challenge: string): {
  token: string;
  challenge: string;
  type: 'url_verification';
} {
  return { token: VERIFICATION_TOKEN, challenge, type: 'url_verification' };
}

/** Any channel lifecycle event (`channel_archive`, `group_deleted`, ...) as Slack delivers it. */
export function channelLifecycleEvent(
  type: 'channel_archive' | 'group_archive' | 'channel_deleted' | 'group_deleted',
  options: ChannelArchiveEventOptions,
): SlackEventEnvelope<{ type: string; channel: string; user?: string; event_ts: string }> {
  const event: { type: string; channel: string; user?: string; event_ts: string } = {
    type,
    channel: options.channel,
    event_ts: nextTs(),
  };
  // Deletions carry no actor; archives do.
  if (type.endsWith('_archive')) event.user = options.user ?? 'U0ADMIN';
  return eventEnvelope(event, { teamId: options.teamId, eventId: options.eventId });
}

/**
 * Someone left a channel, or was removed from it: `member_left_channel` names who (its payload in
 * docs.slack.dev/reference/events/member_left_channel); `channel_left` and `group_left` are sent to the one
 * who left, and name only the channel (docs.slack.dev/reference/events/channel_left, group_left).
 */
export function channelLeftEvent(
  type: 'member_left_channel' | 'channel_left' | 'group_left',
  options: { channel: string; user?: string; teamId?: string },
): SlackEventEnvelope<Record<string, string>> {
  const event: Record<string, string> = { type, channel: options.channel, event_ts: nextTs() };
  if (type === 'member_left_channel') {
    Object.assign(event, {
      user: options.user ?? DEFAULT_BOT_USER_ID,
      channel_type: options.channel.startsWith('G') ? 'G' : 'C',
      team: options.teamId ?? DEFAULT_TEAM_ID,
    });
  } else if (type === 'channel_left') {
    event.actor_id = options.user ?? 'U0ADMIN';
  }
  return eventEnvelope(event, { teamId: options.teamId });
}

/**
 * Someone opened a tab of the app; `messages` is the app's DM, where the agent experience's conversations live.
 * Slack sends it to every app subscribed to it, classic ones (no features.agent_view) included.
 */
export function appHomeOpenedEvent(options: {
  channel: string;
  user: string;
  tab?: 'home' | 'messages';
  teamId?: string;
}): SlackEventEnvelope<Record<string, unknown>> {
  return eventEnvelope(
    {
      type: 'app_home_opened',
      user: options.user,
      channel: options.channel,
      tab: options.tab ?? 'messages',
      event_ts: nextTs(),
    },
    { teamId: options.teamId },
  );
}

/**
 * Stop pressed in Slack's UI on an agent session, as documented at
 * https://docs.slack.dev/reference/events/agent_session_stopped: `team_id` is only on the envelope.
 */
export function agentSessionStoppedEvent(options: {
  channel: string;
  user: string;
  threadTs: string;
  /** The app's streams Slack stopped on the click; empty (the default) when none was open. */
  streamingMessageTs?: string[];
  teamId?: string;
  eventId?: string;
}): SlackEventEnvelope<Record<string, unknown>> {
  return eventEnvelope(
    {
      type: 'agent_session_stopped',
      channel: options.channel,
      user: options.user,
      thread_ts: options.threadTs,
      streaming_message_ts: options.streamingMessageTs ?? [],
      event_ts: nextTs(),
    },
    { teamId: options.teamId, eventId: options.eventId },
  );
}

/**
 * A person renamed an agent session in Slack's UI
 * (https://docs.slack.dev/reference/events/agent_session_title_changed); `previous_title` is absent when
 * the session had no title.
 */
export function agentSessionTitleChangedEvent(options: {
  channel: string;
  user: string;
  threadTs: string;
  title: string;
  previousTitle?: string;
  teamId?: string;
  eventId?: string;
}): SlackEventEnvelope<Record<string, unknown>> {
  const teamId = options.teamId ?? DEFAULT_TEAM_ID;
  const event: Record<string, unknown> = {
    type: 'agent_session_title_changed',
    channel: options.channel,
    user: options.user,
    team_id: teamId,
    thread_ts: options.threadTs,
    title: options.title,
    event_ts: nextTs(),
  };
  if (options.previousTitle !== undefined) event.previous_title = options.previousTitle;
  return eventEnvelope(event, { teamId, eventId: options.eventId });
}

/** One thing the user is looking at, as `app_context_changed` lists them (most relevant first). */
export type AppContextEntity =
  | { type: 'slack#/types/channel_id'; value: string; team_id?: string }
  | { type: 'slack#/types/canvas_id'; value: string; team_id?: string }
  | { type: 'slack#/types/list_id'; value: string; team_id?: string }
  | {
      type: 'slack#/types/message_context';
      value: { channel_id: string; message_ts: string };
      team_id?: string;
    };

export interface AppContextChangedOptions {
  /**
   * The person whose view changed: Slack names them only in the envelope's `authorizations` (is_bot false).
   * Without one, the event is delivered for the bot alone.
   */
  viewer?: string;
  /** Shorthand for one channel entity: the conversation the user is viewing. */
  viewing?: string;
  /** Full control; used as given after `viewing`'s entity. None at all gives `context: {}`. */
  entities?: AppContextEntity[];
  /**
   * Not in Slack's documented payload (@slack/types declares them): only for showing the bot tolerates them.
   */
  undocumented?: { user?: string; channel?: string; eventTs?: string };
  teamId?: string;
  eventId?: string;
}

/**
 * What the user views changed while the agent was visible, as Slack documents it: the event is only `type` and
 * `context` (`{}` when nothing is in view); the viewer is the envelope's authorization with `is_bot: false`
 * (https://docs.slack.dev/reference/events/app_context_changed; needs features.agent_view).
 */
export function appContextChangedEvent(
  options: AppContextChangedOptions,
): SlackEventEnvelope<Record<string, unknown>> {
  const teamId = options.teamId ?? DEFAULT_TEAM_ID;
  const entities: AppContextEntity[] = [
    ...(options.viewing !== undefined
      ? [{ type: 'slack#/types/channel_id' as const, value: options.viewing, team_id: teamId }]
      : []),
    ...(options.entities ?? []),
  ];
  const event: Record<string, unknown> = { type: 'app_context_changed' };
  const { user, channel, eventTs } = options.undocumented ?? {};
  if (user !== undefined) event.user = user;
  if (channel !== undefined) event.channel = channel;
  event.context = entities.length > 0 ? { entities } : {};
  if (eventTs !== undefined) event.event_ts = eventTs;
  return eventEnvelope(event, {
    teamId,
    eventId: options.eventId,
    ...(options.viewer !== undefined ? { authorization: { userId: options.viewer, isBot: false } } : {}),
  });
}

/** `app_uninstalled` / `tokens_revoked`: the workspace is gone for this app. */
export function workspaceGoneEvent(
  type: 'app_uninstalled' | 'tokens_revoked',
  options: { teamId?: string } = {},
): SlackEventEnvelope<Record<string, unknown>> {
  const event: Record<string, unknown> =
    type === 'app_uninstalled'
      ? { type, event_ts: nextTs() }
      : { type, tokens: { oauth: [], bot: [DEFAULT_BOT_USER_ID] }, event_ts: nextTs() };
  return eventEnvelope(event, { teamId: options.teamId });
}

export interface SlashCommandOptions {
  command?: string;
  text: string;
  channel: string;
  channelName?: string;
  user: string;
  teamId?: string;
  responseUrl: string;
}

/** The form fields Slack POSTs for a slash command. */
export function slashCommandFields(options: SlashCommandOptions): Record<string, string> {
  const teamId = options.teamId ?? DEFAULT_TEAM_ID;
  return {
    token: VERIFICATION_TOKEN,
    team_id: teamId,
    team_domain: 'fake-team',
    channel_id: options.channel,
    channel_name: options.channelName ?? (options.channel.startsWith('D') ? 'directmessage' : 'general'),
    user_id: options.user,
    user_name: options.user.toLowerCase(),
    command: options.command ?? '/agent',
    text: options.text,
    api_app_id: DEFAULT_APP_ID,
    is_enterprise_install: 'false',
    response_url: options.responseUrl,
    trigger_id: `${Date.now()}.trigger`,
  };
}

export interface MessageShortcutOptions {
  callbackId: string;
  channel: string;
  user: string;
  teamId?: string;
  messageTs: string;
  threadTs?: string;
  responseUrl: string;
}

/** The `message_action` payload Slack sends when someone runs a message shortcut. */
export function messageShortcutPayload(options: MessageShortcutOptions): Record<string, unknown> {
  const teamId = options.teamId ?? DEFAULT_TEAM_ID;
  const message: Record<string, unknown> = {
    type: 'message',
    user: options.user,
    ts: options.messageTs,
    text: '…',
  };
  if (options.threadTs !== undefined) message.thread_ts = options.threadTs;
  return {
    type: 'message_action',
    token: VERIFICATION_TOKEN,
    action_ts: nextTs(),
    team: { id: teamId, domain: 'fake-team' },
    user: {
      id: options.user,
      username: options.user.toLowerCase(),
      team_id: teamId,
      name: options.user.toLowerCase(),
    },
    channel: { id: options.channel, name: 'general' },
    is_enterprise_install: false,
    callback_id: options.callbackId,
    trigger_id: `${Date.now()}.trigger`,
    response_url: options.responseUrl,
    message_ts: options.messageTs,
    message,
  };
}

/** The message a person clicked in, as the bot posted it (e.g. one of `FakeSlack.threadMessages(...)`). */
export interface InteractiveMessage {
  ts: string;
  thread_ts?: string;
  text?: string;
  blocks?: unknown[];
}

export interface BlockActionsOptions {
  /** Who clicked. */
  user: string;
  channel: string;
  channelName?: string;
  message: InteractiveMessage;
  /** The clicked element's action_id; the element (button, feedback_buttons, icon_button) is looked up in `message.blocks`. */
  actionId: string;
  /** For feedback_buttons: which of the two was clicked. */
  feedback?: 'positive' | 'negative';
  /** Where the bot's answer goes: `FakeSlack.responseUrl(id, context)`. */
  responseUrl: string;
  isEphemeral?: boolean;
  teamId?: string;
}

type Json = Record<string, unknown>;

function isJson(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every interactive element of a block with the block_id Slack reports for it. */
function interactiveElements(block: Json, index: number): { blockId: string; element: Json }[] {
  // Slack gives every block an id; posted blocks without one get a stable stand-in here.
  const blockId = typeof block.block_id === 'string' ? block.block_id : `block-${index}`;
  const candidates = [
    ...(Array.isArray(block.elements) ? block.elements : []),
    block.accessory,
    block.element,
  ];
  return candidates.filter(isJson).map((element) => ({ blockId, element }));
}

function plainTextOf(value: unknown): { type: 'plain_text'; text: string; emoji?: boolean } {
  if (isJson(value) && value.type === 'plain_text' && typeof value.text === 'string') {
    return { type: 'plain_text', text: value.text, ...(value.emoji === true ? { emoji: true } : {}) };
  }
  throw new Error(`slack-events: expected a plain_text object, got ${JSON.stringify(value)}`);
}

/** The `actions[0]` Slack reports for a click on `element`. */
function clickedAction(element: Json, blockId: string, options: BlockActionsOptions): BlockElementAction {
  const base = { block_id: blockId, action_id: options.actionId, action_ts: nextTs() };
  switch (element.type) {
    case 'button':
      return {
        ...base,
        type: 'button',
        text: plainTextOf(element.text),
        ...(typeof element.value === 'string' ? { value: element.value } : {}),
        ...(typeof element.url === 'string' ? { url: element.url } : {}),
      };
    case 'feedback_buttons': {
      if (!options.feedback)
        throw new Error('slack-events: say which feedback button was clicked (feedback option)');
      const button = element[`${options.feedback}_button`];
      if (!isJson(button) || typeof button.value !== 'string') {
        throw new Error(
          `slack-events: feedback_buttons ${options.actionId} has no ${options.feedback}_button`,
        );
      }
      return { ...base, type: 'feedback_buttons', text: plainTextOf(button.text), value: button.value };
    }
    case 'icon_button':
      return {
        ...base,
        type: 'icon_button',
        icon: String(element.icon),
        text: plainTextOf(element.text),
        value: typeof element.value === 'string' ? element.value : '',
      };
    default:
      throw new Error(`slack-events: clicking a ${String(element.type)} element is not modelled`);
  }
}

/**
 * The `block_actions` payload Slack sends when `user` clicks the element `actionId` of a posted message
 * (https://docs.slack.dev/reference/interaction-payloads/block_actions-payload). Deliver it with
 * `postSignedInteraction`, or `sendSocketEvent(payload, { type: 'interactive' })`. Throws if the message has
 * no such element, since Slack could not have sent the click.
 */
export function blockActionsPayload(options: BlockActionsOptions): BlockAction {
  const teamId = options.teamId ?? DEFAULT_TEAM_ID;
  const found = (options.message.blocks ?? [])
    .flatMap((block, i) => (isJson(block) ? interactiveElements(block, i) : []))
    .find(({ element }) => element.action_id === options.actionId);
  if (!found) {
    throw new Error(
      `slack-events: message ${options.message.ts} has no element with action_id ${options.actionId}`,
    );
  }
  const threadTs = options.message.thread_ts;
  return {
    type: 'block_actions',
    user: {
      id: options.user,
      username: options.user.toLowerCase(),
      name: options.user.toLowerCase(),
      team_id: teamId,
    },
    api_app_id: DEFAULT_APP_ID,
    token: VERIFICATION_TOKEN,
    container: {
      type: 'message',
      message_ts: options.message.ts,
      channel_id: options.channel,
      is_ephemeral: options.isEphemeral ?? false,
      ...(threadTs !== undefined ? { thread_ts: threadTs } : {}),
    },
    trigger_id: `${Date.now()}.trigger`,
    team: { id: teamId, domain: 'fake-team' },
    is_enterprise_install: false,
    channel: {
      id: options.channel,
      name: options.channelName ?? (options.channel.startsWith('D') ? 'directmessage' : 'general'),
    },
    message: { ...structuredClone(options.message), type: 'message' },
    state: { values: {} },
    response_url: options.responseUrl,
    actions: [clickedAction(found.element, found.blockId, options)],
  };
}
