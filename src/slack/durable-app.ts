import { App, type AppOptions, type ReceiverEvent } from '@slack/bolt';
import { type EventEnvelope, isEventEnvelope } from './inbound-events.js';

/**
 * Bolt acknowledges Events API requests before any listener runs. This App first hands each event to
 * `intake`, which records it durably; only then does Bolt acknowledge. If recording fails the error
 * propagates, so Bolt answers HTTP 500 (or leaves the Socket Mode envelope unacknowledged) and Slack
 * delivers the event again, instead of the bot losing it.
 */
export class DurableApp extends App {
  constructor(
    options: AppOptions,
    private readonly intake: (envelope: EventEnvelope) => Promise<void>,
  ) {
    super(options);
  }

  override async processEvent(event: ReceiverEvent): Promise<void> {
    if (isEventEnvelope(event.body)) await this.intake(event.body);
    return super.processEvent(event);
  }
}
