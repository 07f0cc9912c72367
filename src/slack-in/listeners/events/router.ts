import type { BotMetrics } from '../../../observability/metrics.js';
import type { EventEnvelope } from '../../events.js';

/**
 * The Events API event types the bot acts on; each manifest must subscribe to each (a test checks), except
 * ORG_APP_EVENTS in a manifest that cannot be installed org-wide.
 */
export const HANDLED_EVENTS = [
  'app_mention',
  'message',
  'channel_archive',
  'group_archive',
  'channel_deleted',
  'group_deleted',
  'member_left_channel',
  'channel_left',
  'group_left',
  'app_uninstalled',
  'tokens_revoked',
  'team_access_granted',
  'team_access_revoked',
  'app_home_opened',
  'agent_session_stopped',
  'app_context_changed',
] as const;

export type HandledEvent = (typeof HANDLED_EVENTS)[number];

/**
 * Events about the installation itself: taken even when no installation is left to serve them, and the only
 * ones an org-level envelope (no workspace) is taken for.
 */
export const INSTALLATION_EVENTS: ReadonlySet<string> = new Set<HandledEvent>([
  'app_uninstalled',
  'tokens_revoked',
  'team_access_granted',
  'team_access_revoked',
]);

/** Sent only to an org-wide install, when an org admin adds it to or removes it from a workspace of the org. */
export const ORG_APP_EVENTS: ReadonlySet<string> = new Set<HandledEvent>([
  'team_access_granted',
  'team_access_revoked',
]);

/** The `message` subtypes that are changes to a message already sent, each taken by its own listener. */
export type MessageChange = 'message_changed' | 'message_deleted';

/** A side effect for after the acknowledgement (notices, reactions): best effort, never delaying the ack. */
export type AfterAck = () => Promise<void>;
export type EventHandler = (envelope: EventEnvelope, after: AfterAck[]) => Promise<void>;

/**
 * Where each event family registers its listeners. Not Bolt's `app.event`: Bolt acknowledges an event before
 * its listeners run, and the bot records what it must not lose first (see bolt-app.ts), so events are routed
 * here, before the acknowledgement.
 */
export interface EventRouter {
  on(type: HandledEvent, handler: EventHandler): void;
  /** A `message` event of this subtype goes here instead of to the `message` listener. */
  onChange(subtype: MessageChange, handler: EventHandler): void;
  /** Counts an event the bot does not act on, with the reason. */
  ignore(type: string, reason: string): void;
}

/** Counts ignored events; every listener reports through it. */
export function ignoring(metrics: Pick<BotMetrics, 'eventsIgnored'>): EventRouter['ignore'] {
  return (type, reason) => metrics.eventsIgnored.inc({ type, reason });
}
