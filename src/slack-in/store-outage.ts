import { setTimeout as sleep } from 'node:timers/promises';
import type { types } from '@slack/bolt';
import { notTakenNotice } from '../conversation/notices.js';
import { botUserIdHere } from '../installations/workspace-scope.js';
import type { Logger } from '../observability/logger.js';
import { agentViewIn, conversationOf } from '../sessions/conversation-of.js';
import type { AgentFeatures } from '../slack-out/agent-features.js';
import type { SlackReads } from '../slack-out/reads.js';
import type { ReplyTarget } from '../slack-out/reply-target.js';
import type { SlackWrites } from '../slack-out/writes.js';
import { type EventEnvelope, enterpriseOf, fromMention, fromMessage } from './events.js';

export interface StoreOutagePolicyOptions {
  /** How long a run of failures to record events is answered with refusals (Slack retries them). */
  ackAfterMs: number;
  replies: Pick<SlackWrites, 'notice'>;
  reads: Pick<SlackReads, 'botPostedIn'>;
  botUserId: string;
  /** Where a note goes depends on the agent view (a classic DM is answered at its top level). */
  agentFeatures: Pick<AgentFeatures, 'mode' | 'offersAgentView'>;
  /** Thread replies without a mention are not for the bot: nobody is told about them. */
  mentionOnly: boolean;
  logger: Logger;
}

/** Past the bound, how long an event's recording is waited for before Slack gets its 200 anyway. */
const ACK_WAIT_MS = 1_500;
/** Messages whose authors were told (Slack should not deliver one again after its 200; this is a backstop). */
const TOLD_MEMORY = 10_000;

/**
 * What happens to Slack events while the store cannot record them. Slack disables an app's event
 * subscriptions when fewer than 5% of its deliveries get a 200 within 60 minutes, and a person must turn
 * them on again (docs.slack.dev/apis/events-api, "Rate limiting" and "Failure conditions";
 * docs.slack.dev/reference/events/app_rate_limited). So refusing until the store is back is only safe for a
 * while: for `ackAfterMs` from the first failure events are refused and Slack's retries (about 1 and 5
 * minutes later) bring them in once the store is back. After that every event is acknowledged; a person's
 * message to the bot that could not be recorded gets a note where its answer would go, asking to send it again, and
 * anything else a warn line. The clock restarts at the first success (an event recorded, the store
 * answering the readiness check).
 */
export class StoreOutagePolicy {
  private failingSince: number | undefined;
  private readonly told = new Set<string>();

  constructor(private readonly options: StoreOutagePolicyOptions) {}

  /** The store failed (an event not recorded, or the readiness check). */
  failed(): void {
    this.failingSince ??= Date.now();
  }

  recovered(): void {
    this.failingSince = undefined;
  }

  /** Events are acknowledged whether or not they are recorded (so the store need not gate readiness). */
  get acknowledging(): boolean {
    return this.failingSince !== undefined && Date.now() - this.failingSince >= this.options.ackAfterMs;
  }

  /**
   * Records an event under the policy: resolves when Slack may be told it arrived, rejects when it must be
   * refused. Past the bound a slow recording is not waited for past ACK_WAIT_MS; if it then fails, the
   * note is posted all the same.
   */
  async record(envelope: EventEnvelope, record: () => Promise<void>): Promise<void> {
    const acknowledging = this.acknowledging;
    const attempt = record().then(
      () => this.recovered(),
      (error: unknown) => {
        this.failed();
        throw error;
      },
    );
    if (!acknowledging) return attempt;
    const outcome = attempt.then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    const early = await Promise.race([outcome, sleep(ACK_WAIT_MS, 'waiting' as const)]);
    if (early === undefined) return;
    const settle = (failure: { error: unknown } | undefined) => {
      if (failure) void this.giveUp(envelope, failure.error);
    };
    if (early === 'waiting') void outcome.then(settle);
    else settle(early);
  }

  /** An event acknowledged without being recorded: its author, if it is a person's message, is told. */
  private async giveUp(envelope: EventEnvelope, error: unknown): Promise<void> {
    const { logger } = this.options;
    const about = { eventId: envelope.event_id, type: envelope.event.type, team: envelope.team_id };
    const author = await this.authorToTell(envelope);
    if (!author) {
      logger.warn(
        { err: error, ...about },
        'acknowledged a Slack event the store could not record; it is lost',
      );
      return;
    }
    const key = `${author.target.channel}:${author.ts}`;
    if (this.told.has(key)) return;
    this.told.add(key);
    if (this.told.size > TOLD_MEMORY) this.told.delete(this.told.values().next().value as string);
    logger.warn(
      { err: error, ...about, channel: author.target.channel, ts: author.ts },
      'acknowledged a message the store could not record; its author is asked to send it again',
    );
    const posted = await this.options.replies.notice(author.target, notTakenNotice(author.user));
    if (posted === undefined)
      logger.error(
        { ...about, channel: author.target.channel, ts: author.ts },
        'could not tell the author either',
      );
  }

  /**
   * Who sent a message meant for the bot, and where to tell them (where the bot would have answered it). Read from the event and, for a reply without a mention, from Slack:
   * the store that would say whether the bot is in that thread is what failed.
   */
  private async authorToTell(
    envelope: EventEnvelope,
  ): Promise<{ target: ReplyTarget; user: string; ts: string } | undefined> {
    const botUserId = botUserIdHere(this.options.botUserId);
    const { event, team_id: teamId } = envelope;
    const message =
      event.type === 'app_mention'
        ? fromMention(event as unknown as types.AppMentionEvent, teamId, botUserId)
        : event.type === 'message'
          ? fromMessage(event as unknown as types.AllMessageEvents, teamId, botUserId)
          : undefined;
    if (!message) return undefined;
    const conversation = conversationOf(
      {
        teamId: message.teamId,
        enterpriseId: enterpriseOf(envelope),
        channelId: message.channel,
        ts: message.ts,
        threadTs: message.threadTs,
      },
      agentViewIn(this.options.agentFeatures, message.teamId),
    );
    const target: ReplyTarget = { channel: message.channel, threadTs: conversation.replyThreadTs };
    const author = { target, user: message.user, ts: message.ts };
    if (event.type === 'app_mention' || conversation.isDm) return author;
    // A channel message: its mention comes as app_mention too, and only a thread reply can be a follow-up.
    const followUp = conversation.isReply && !message.mentionsBot;
    if (!followUp || this.options.mentionOnly || target.threadTs === undefined) return undefined;
    return (await this.options.reads.botPostedIn(message.channel, target.threadTs)) ? author : undefined;
  }
}
