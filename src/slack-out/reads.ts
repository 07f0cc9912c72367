import type { ConversationsRepliesResponse, WebClient } from '@slack/web-api';
import { botUserIdHere } from '../installations/workspace-scope.js';
import type { Logger } from '../observability/logger.js';
import { slackErrorCode } from './client.js';
import { slackFailureKind, slackPostError } from './failures.js';
import { jobPartOf, type ReplyTarget } from './reply-target.js';

/** A message of a thread, as read back for context. */
export interface ThreadMessage {
  ts: string;
  /** A person's id; undefined for a bot. */
  userId?: string;
  botName?: string;
  text: string;
}

/** The earlier messages of a thread worth giving as context: its first (what it is about) and the latest. */
export interface EarlierMessages {
  first?: ThreadMessage;
  /** Oldest first, without the first. */
  latest: ThreadMessage[];
}

const NO_THREAD_ERRORS = new Set(['thread_not_found', 'message_not_found']);
/** Pages of a thread read when looking for what a job already posted (200 messages each). */
const MAX_HISTORY_PAGES = 25;
/** Thread context reads at most this many pages of this size (1,000 messages), from the thread's start. */
const CONTEXT_PAGES = 5;
const CONTEXT_PAGE_SIZE = 200;

type ThreadReply = NonNullable<ConversationsRepliesResponse['messages']>[number];
/** The last `n` items (none for n <= 0, where slice(-0) would keep them all). */
const lastOf = <T>(items: readonly T[], n: number): T[] => (n > 0 ? items.slice(-n) : []);

/**
 * Every read the bot makes of Slack: thread history for context, what a job already posted, a message's words,
 * whether the bot is in a thread or can see a channel. All through `client`, which retries on its own, but the
 * reads not worth waiting for (`optionalClient`): a thread's context, and whether a thread has replies yet.
 */
export class SlackReads {
  constructor(
    private readonly client: WebClient,
    private readonly logger: Logger,
    /** The bot's own user id: its messages are not context. */
    private readonly botUserId = '',
    /** For what the bot can do without (a thread's context, where a note shows): never waits out a rate limit. */
    private readonly optionalClient: WebClient = client,
  ) {}

  /**
   * Which messages of `job` are already in the thread: read from the job's own message `fromTs` on, page by
   * page, by their metadata. Throws SlackPostError when Slack cannot be read.
   */
  async postedJobParts(target: ReplyTarget, fromTs: string, job: string): Promise<Set<string>> {
    const found = new Set<string>();
    let cursor: string | undefined;
    try {
      for (let page = 0; page < MAX_HISTORY_PAGES; page++) {
        const args = {
          channel: target.channel,
          oldest: fromTs,
          inclusive: true,
          include_all_metadata: true,
          limit: 200,
          cursor,
        };
        const history = target.threadTs
          ? await this.client.conversations.replies({ ...args, ts: target.threadTs })
          : await this.client.conversations.history(args);
        for (const message of history.messages ?? []) {
          const part = jobPartOf(message.metadata, job);
          if (part !== undefined) found.add(part);
        }
        cursor = history.response_metadata?.next_cursor || undefined;
        if (!cursor) break;
      }
    } catch (error) {
      // No such thread (its first message was deleted, or never existed): nothing of the job's is in it.
      if (!NO_THREAD_ERRORS.has(slackErrorCode(error) ?? '')) throw slackPostError(error);
    }
    return found;
  }

  /**
   * Up to `limit` messages of a thread before `beforeTs`, without the bot's own: the thread's first message
   * and the last ones read, oldest first (what "this" most likely means). Slack pages a thread oldest first
   * and has no newest-first order, so it is read from its start, up to CONTEXT_PAGES pages (1,000 messages):
   * when more than that came before `beforeTs`, the last ones read are from the middle of the thread, not
   * those just before the mention. Empty when the thread cannot be read (the bot is not in the channel, a
   * scope is missing, Slack throttles reads), and what was read when a later page cannot be: context is a
   * nicety.
   */
  async threadMessagesBefore(
    channel: string,
    threadTs: string,
    beforeTs: string,
    limit: number,
  ): Promise<EarlierMessages> {
    const relevant = (message: ThreadReply) =>
      Number(message.ts) < Number(beforeTs) && message.user !== botUserIdHere(this.botUserId);
    let first: ThreadReply | undefined;
    let latest: ThreadReply[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < CONTEXT_PAGES; page++) {
      let found: ConversationsRepliesResponse;
      try {
        found = await this.optionalClient.conversations.replies({
          channel,
          ts: threadTs,
          latest: beforeTs,
          inclusive: false,
          limit: CONTEXT_PAGE_SIZE,
          ...(cursor ? { cursor } : {}),
        });
      } catch (error) {
        // What the pages before gave is still context; Slack throttling reads is routine, not a warning.
        const level = slackFailureKind(error).code === 'ratelimited' ? 'info' : 'warn';
        this.logger[level](
          { err: error, pagesRead: page },
          page === 0
            ? 'could not read the thread for context; sending the message alone'
            : 'could not read the rest of the thread for context; sending what was read',
        );
        break;
      }
      const messages = (found.messages ?? []).filter(relevant);
      // The thread's first message leads the first page (and may lead every page: kept once).
      if (page === 0 && messages[0]?.ts === threadTs) first = messages[0];
      latest = lastOf([...latest, ...messages.filter((message) => message.ts !== threadTs)], limit);
      cursor = found.response_metadata?.next_cursor || undefined;
      if (!found.has_more || !cursor) break;
    }
    const read = (message: ThreadReply): ThreadMessage => ({
      ts: message.ts ?? '',
      userId: message.bot_id ? undefined : message.user,
      botName: message.bot_profile?.name,
      text: message.text ?? '',
    });
    return first
      ? { first: read(first), latest: lastOf(latest, limit - 1).map(read) }
      : { latest: latest.map(read) };
  }

  /** A channel's name, when the bot can see the channel (conversations.info answers); else undefined. */
  async visibleChannelName(channel: string): Promise<string | undefined> {
    try {
      return (await this.client.conversations.info({ channel })).channel?.name;
    } catch {
      return undefined;
    }
  }

  /**
   * The words of one message, read back from Slack (the bot keeps no prompt text after a job ends); undefined
   * when it is gone. Throws SlackPostError when Slack cannot be read.
   */
  async messageText(channel: string, ts: string, threadTs?: string): Promise<string | undefined> {
    // Two: in a thread Slack answers with its first message ahead of the one asked for.
    const args = { channel, oldest: ts, latest: ts, inclusive: true, limit: 2 };
    try {
      const found = threadTs
        ? await this.client.conversations.replies({ ...args, ts: threadTs })
        : await this.client.conversations.history(args);
      return found.messages?.find((message) => message.ts === ts)?.text;
    } catch (error) {
      if (NO_THREAD_ERRORS.has(slackErrorCode(error) ?? '')) return undefined;
      throw slackPostError(error);
    }
  }

  /**
   * Whether the bot has posted in a thread, from its first page of replies (Slack alone, for when the store
   * cannot say). False when the thread cannot be read.
   */
  async botPostedIn(channel: string, threadTs: string): Promise<boolean> {
    try {
      const found = await this.client.conversations.replies({ channel, ts: threadTs, limit: 200 });
      return (found.messages ?? []).some((message) => message.user === botUserIdHere(this.botUserId));
    } catch (error) {
      this.logger.warn({ err: error }, 'could not read a thread to see whether the bot is in it');
      return false;
    }
  }

  /**
   * Whether a thread has a reply now, which decides where a private note is visible; false when it cannot be
   * read (the channel always shows a note).
   */
  async hasReplies(channel: string, threadTs: string): Promise<boolean> {
    try {
      // The thread's first message comes first, then its first reply, if any.
      const found = await this.optionalClient.conversations.replies({ channel, ts: threadTs, limit: 2 });
      return (found.messages ?? []).some((message) => message.ts !== threadTs);
    } catch {
      return false;
    }
  }
}
