import { App, type AppOptions, type ReceiverEvent } from '@slack/bolt';
import { type EventEnvelope, isEventEnvelope } from './inbound-events.js';

/**
 * Bolt acknowledges Events API requests before any listener runs. This App first hands each event to
 * `intake`, which records it durably; only then is the event acknowledged. If recording fails the error
 * propagates, so Slack gets HTTP 500 (or the Socket Mode envelope stays unacknowledged) and delivers the
 * event again, instead of the bot losing it. The intake is the bot's whole event handling (no Bolt event
 * listeners are registered), so an event is acknowledged directly rather than run through Bolt's
 * listener pipeline for nothing; commands, shortcuts and other requests go through Bolt as usual.
 */
export class DurableApp extends App {
  constructor(
    options: AppOptions,
    private readonly intake: (envelope: EventEnvelope) => Promise<void>,
  ) {
    super(options);
  }

  override async processEvent(event: ReceiverEvent): Promise<void> {
    if (!isEventEnvelope(event.body)) return super.processEvent(event);
    await this.intake(event.body);
    await event.ack();
  }
}
