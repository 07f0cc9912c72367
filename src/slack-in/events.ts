import type { types } from '@slack/bolt';

/**
 * Slack envelopes and events → the bot's own shapes (pure: no I/O). Where a message belongs (DM or not, its
 * thread, where replies go) is not decided here: sessions/conversation-of.ts says.
 */

type AllMessageEvents = types.AllMessageEvents;
type AppMentionEvent = types.AppMentionEvent;

/** Whom an event is delivered for, as far as the bot reads it (any field may be missing or malformed). */
interface Authorization {
  user_id?: unknown;
  is_bot?: unknown;
  team_id?: unknown;
  enterprise_id?: unknown;
  is_enterprise_install?: unknown;
}

/** The Events API envelope, as far as the bot reads it. */
export interface EventEnvelope {
  type: 'event_callback';
  /** The workspace; `''` for an org-level event, which names no workspace (see `envelopeOf`). */
  team_id: string;
  /** The workspace's org (Enterprise Grid), when it has one (@slack/bolt's EnvelopedEvent). */
  enterprise_id?: unknown;
  /** The org of the workspace the event happened in (shared channels), when Slack names it. */
  context_enterprise_id?: unknown;
  /** An org-wide install's event (Bolt reads it here or on the authorization). */
  is_enterprise_install?: unknown;
  event_id?: string;
  /** When Slack sent the event (seconds since the epoch); the same on every retry of it. */
  event_time?: unknown;
  event: { type: string; [field: string]: unknown };
  /**
   * Whom the event is delivered for (Slack sends one entry): the installation (its team, or its enterprise for
   * an org-wide install) and its user; a person's has `is_bot: false`. Read through `authorizationsOf`.
   */
  authorizations?: unknown;
}

/**
 * The body as a usable envelope: an event with a type, from a workspace or from an org alone. An org-wide
 * install's org-level events carry `team_id: null` and name the org (Slack's reference for
 * `team_access_granted`; it is silent on `app_uninstalled`): such an envelope is read with `team_id: ''`.
 * Anything else is undefined; a malformed body never throws (a thrown error would make Slack retry it).
 */
export function envelopeOf(body: unknown): EventEnvelope | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const candidate = body as Partial<Omit<EventEnvelope, 'team_id'>> & { team_id?: unknown };
  if (candidate.type !== 'event_callback') return undefined;
  const event = candidate.event;
  if (typeof event !== 'object' || event === null || typeof event.type !== 'string') return undefined;
  if (typeof candidate.team_id === 'string') return candidate as EventEnvelope;
  const orgLevel = candidate.team_id === null || candidate.team_id === undefined;
  return orgLevel && enterpriseOf(candidate) !== undefined
    ? { ...(candidate as EventEnvelope), team_id: '' }
    : undefined;
}

const idOf = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/** The envelope's authorizations that are objects (a malformed list is read as none). */
export function authorizationsOf(envelope: Pick<EventEnvelope, 'authorizations'>): Authorization[] {
  const list = envelope.authorizations;
  if (!Array.isArray(list)) return [];
  return list.filter((entry): entry is Authorization => typeof entry === 'object' && entry !== null);
}

/**
 * The org (Enterprise Grid) an event belongs to, wherever Slack names it: on the envelope, on the
 * authorization only (the sample payload of Slack's reference for org-wide apps), or as the context's org.
 */
export function enterpriseOf(
  envelope: Pick<EventEnvelope, 'enterprise_id' | 'context_enterprise_id' | 'authorizations'>,
): string | undefined {
  return (
    idOf(envelope.enterprise_id) ??
    idOf(authorizationsOf(envelope)[0]?.enterprise_id) ??
    idOf(envelope.context_enterprise_id)
  );
}

/**
 * The installation an event is delivered for: its workspace (none on an org-level event), and its org with
 * whether the install is org-wide (docs.slack.dev, "Organization-ready apps": `is_enterprise_install`, on the
 * envelope or its authorization).
 */
export function installationOf(envelope: EventEnvelope): {
  teamId?: string;
  enterpriseId?: string;
  isEnterpriseInstall: boolean;
} {
  const teamId = idOf(envelope.team_id);
  const enterpriseId = enterpriseOf(envelope);
  const isEnterpriseInstall =
    enterpriseId !== undefined &&
    (envelope.is_enterprise_install === true ||
      authorizationsOf(envelope).some((entry) => entry.is_enterprise_install === true));
  return { ...(teamId ? { teamId } : {}), ...(enterpriseId ? { enterpriseId } : {}), isEnterpriseInstall };
}

/**
 * The person an event is about when the event does not name them: `app_context_changed` carries only its
 * `context`, and Slack names the viewer as the envelope's authorization with `is_bot: false`.
 */
export function authorizedPerson(envelope: EventEnvelope): string | undefined {
  return idOf(authorizationsOf(envelope).find((candidate) => candidate.is_bot === false)?.user_id);
}

/** The fields of a human-authored message the bot acts on, whatever event carried it. */
export interface HumanMessage {
  teamId: string;
  channel: string;
  user: string;
  text: string;
  ts: string;
  threadTs?: string;
  hasFiles: boolean;
  mentionsBot: boolean;
  eventId?: string;
  /** The sender's own workspace, when Slack says (Slack Connect: it may differ from the envelope's). */
  userTeam?: string;
}

/**
 * The one list of message subtypes that are a person talking: plain messages have none; a file shared with
 * words (`file_share`), a thread reply also sent to the channel ("Also send to #channel": `thread_broadcast`,
 * on both its `app_mention` and its `message` delivery) and a `/me` message (`me_message`) are still the
 * person's words. Every other subtype is Slack's own record (joins, topics, edits, deletions, replies) or a
 * bot's post, and never a prompt.
 */
const PERSON_SUBTYPES: ReadonlySet<string> = new Set(['file_share', 'thread_broadcast', 'me_message']);

export function isPersonSubtype(subtype: string | undefined): boolean {
  return subtype === undefined || PERSON_SUBTYPES.has(subtype);
}

export function fromMention(
  event: AppMentionEvent,
  teamId: string,
  botUserId: string,
): HumanMessage | undefined {
  // Other bots mentioning us would make bots talk to each other forever.
  if (event.bot_id || !event.user || !isPersonSubtype(event.subtype)) return undefined;
  return {
    teamId,
    channel: event.channel,
    user: event.user,
    text: event.text ?? '',
    ts: event.ts,
    threadTs: event.thread_ts,
    hasFiles: (event.files?.length ?? 0) > 0,
    mentionsBot: event.text?.includes(`<@${botUserId}`) ?? true,
    userTeam: senderTeam(event),
  };
}

export function fromMessage(
  event: AllMessageEvents,
  teamId: string,
  botUserId: string,
): HumanMessage | undefined {
  if (!isPersonSubtype(event.subtype)) return undefined;
  // Any bot, whatever the subtype (bots can broadcast and share files too): bots never talk to the agent.
  if (('bot_id' in event && event.bot_id) || ('bot_profile' in event && event.bot_profile)) return undefined;
  if (!('user' in event) || !event.user || event.user === botUserId) return undefined;
  const text = event.text ?? '';
  const files = 'files' in event ? event.files : undefined;
  return {
    teamId,
    channel: event.channel,
    user: event.user,
    text,
    ts: event.ts,
    threadTs: 'thread_ts' in event ? event.thread_ts : undefined,
    hasFiles: (files?.length ?? 0) > 0,
    mentionsBot: text.includes(`<@${botUserId}`),
    userTeam: senderTeam(event),
  };
}

/** `stop` or `reset` when that is all the message says (besides the bot's mention). */
export function controlWordOf(text: string, botUserId: string): 'stop' | 'reset' | undefined {
  const words = text
    .replace(new RegExp(`<@${botUserId}(\\|[^>]*)?>`, 'g'), ' ')
    .trim()
    .toLowerCase()
    .replace(/[.!]+$/, '');
  return words === 'stop' || words === 'reset' ? words : undefined;
}

export interface MessageEdit {
  teamId: string;
  channel: string;
  user: string;
  ts: string;
  threadTs?: string;
  text: string;
}

/** A human's change of a message's words (not a link unfurl, which also arrives as message_changed). */
export function editOf(event: AllMessageEvents, teamId: string, botUserId: string): MessageEdit | undefined {
  if (event.subtype !== 'message_changed') return undefined;
  const edited = event.message as AllMessageEvents | undefined;
  const previous = event.previous_message as AllMessageEvents | undefined;
  if (!edited || !('user' in edited) || !edited.user || edited.user === botUserId) return undefined;
  if (('bot_id' in edited && edited.bot_id) || !edited.ts) return undefined;
  const textOf = (message: AllMessageEvents | undefined) =>
    message && 'text' in message ? (message.text ?? '') : '';
  if (textOf(edited) === textOf(previous)) return undefined;
  return {
    teamId,
    channel: event.channel,
    user: edited.user,
    ts: edited.ts,
    threadTs: 'thread_ts' in edited ? edited.thread_ts : undefined,
    text: textOf(edited),
  };
}

export interface MessageDeletion {
  teamId: string;
  channel: string;
  /** The deleted message's ts. */
  ts: string;
}

/** A message removed from a conversation (`message_deleted`: Slack names it by `deleted_ts`, nothing more is sure). */
export function deletionOf(event: AllMessageEvents, teamId: string): MessageDeletion | undefined {
  if (event.subtype !== 'message_deleted') return undefined;
  const deletedTs: unknown = event.deleted_ts;
  if (typeof deletedTs !== 'string' || deletedTs === '') return undefined;
  return { teamId, channel: event.channel, ts: deletedTs };
}

/** The sender's workspace: `user_team` in Slack Connect channels, else the message's `team`. */
export function senderTeam(event: object): string | undefined {
  const fields = event as { user_team?: unknown; team?: unknown };
  if (typeof fields.user_team === 'string' && fields.user_team !== '') return fields.user_team;
  return typeof fields.team === 'string' && fields.team !== '' ? fields.team : undefined;
}
