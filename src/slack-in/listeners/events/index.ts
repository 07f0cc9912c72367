import type { Logger } from '../../../observability/logger.js';
import type { BotMetrics } from '../../../observability/metrics.js';
import type { AccessPolicy } from '../../access.js';
import type { EventEnvelope } from '../../events.js';
import { type AgentViewDeps, register as registerAgentView } from './agent-view.js';
import { type AppHomeDeps, register as registerAppHome } from './app-home.js';
import { type EditDeps, register as registerEdits } from './edits.js';
import { type LifecycleDeps, register as registerLifecycle } from './lifecycle.js';
import { type MessageDeps, register as registerMessages } from './messages.js';
import {
  type AfterAck,
  type EventHandler,
  type EventRouter,
  HANDLED_EVENTS,
  type HandledEvent,
  INSTALLATION_EVENTS,
  ignoring,
  type MessageChange,
} from './router.js';

export {
  HANDLED_EVENTS,
  type HandledEvent,
  INSTALLATION_EVENTS,
  ORG_APP_EVENTS,
} from './router.js';

export type EventListenerDeps = MessageDeps &
  EditDeps &
  LifecycleDeps &
  AppHomeDeps &
  AgentViewDeps & {
    access: Pick<AccessPolicy, 'check' | 'servesTeam'>;
    metrics: Pick<BotMetrics, 'eventsReceived' | 'eventsIgnored' | 'eventsDeduplicated'>;
    logger: Pick<Logger, 'debug' | 'info' | 'warn'>;
  };

/**
 * What each Slack event does, before Slack is told it arrived: everything the bot must not lose is written to
 * the store (a job in the inbox, a session to retire). If that fails the event is not acknowledged, so Slack
 * delivers it again; retries and double deliveries find their job already recorded. Each event family
 * registers its own listeners (one file each in this folder).
 */
export class EventIntake {
  private readonly handlers = new Map<string, EventHandler>();
  private readonly changes = new Map<string, EventHandler>();
  private readonly ignore: EventRouter['ignore'];

  constructor(private readonly deps: EventListenerDeps) {
    this.ignore = ignoring(deps.metrics);
    const router: EventRouter = {
      on: (type: HandledEvent, handler: EventHandler) => void this.handlers.set(type, handler),
      onChange: (subtype: MessageChange, handler: EventHandler) => void this.changes.set(subtype, handler),
      ignore: this.ignore,
    };
    registerMessages(router, deps);
    registerEdits(router, deps);
    registerLifecycle(router, deps);
    registerAppHome(router, deps);
    registerAgentView(router, deps);
    // The manifest subscribes to HANDLED_EVENTS (a test checks): each must have its listener.
    const unhandled = HANDLED_EVENTS.filter((type) => !this.handlers.has(type));
    if (unhandled.length > 0) throw new Error(`no listener for the events ${unhandled.join(', ')}`);
  }

  async accept(envelope: EventEnvelope): Promise<void> {
    const { metrics, access, logger } = this.deps;
    metrics.eventsReceived.inc({ type: envelope.event.type });
    // An org-level event (no workspace) can only be about the installation itself.
    if (envelope.team_id === '' && !INSTALLATION_EVENTS.has(envelope.event.type)) {
      this.ignore(envelope.event.type, 'no-workspace');
      return;
    }
    if (envelope.team_id !== '' && !access.servesTeam(envelope.team_id)) {
      this.ignore(envelope.event.type, 'team-not-allowed');
      return;
    }
    const after: AfterAck[] = [];
    const handler = this.handlerOf(envelope);
    if (handler) await handler(envelope, after);
    else this.ignore(envelope.event.type, 'not-handled');
    for (const effect of after) {
      effect().catch((error: unknown) => logger.warn({ err: error }, 'could not show a notice or indicator'));
    }
  }

  private handlerOf({ event }: EventEnvelope): EventHandler | undefined {
    const change = event.type === 'message' && typeof event.subtype === 'string' ? event.subtype : undefined;
    return (change && this.changes.get(change)) || this.handlers.get(event.type);
  }
}
