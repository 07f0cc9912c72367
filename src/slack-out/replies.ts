import { setTimeout as sleep } from 'node:timers/promises';
import type { ConversationsRepliesResponse, KnownBlock, WebClient } from '@slack/web-api';
import axios from 'axios';
import type { Logger } from '../observability/logger.js';
import { backoffMs } from '../util/backoff.js';
import { slackErrorCode } from './client.js';
import { slackFailureKind } from './failures.js';
import { plainText, type SlackReplyPart } from './format.js';

/** Where the bot writes: a channel, and the thread (none: the top level of a classic DM). */
export interface ReplyTarget {
  channel: string;
  threadTs?: string;
}

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

/** Marks a message a job posted, so a job resumed after a crash or an unknown outcome never posts it twice. */
export interface JobMark {
  /** The job's identity (its Slack message). */
  job: string;
  /** Which of the job's messages: a reply part's index, or a notice's name. */
  part: string;
}

/** An agent session's lifecycle status (agents.sessions.setStatus). */
export type AgentSessionStatus = 'processing' | 'active' | 'closed';

/** How an agent-only call went: `not-agent-app` when Slack says the app has no agent features there. */
export type AgentCallResult = 'ok' | 'not-agent-app' | 'failed';

/**
 * Slack's answers for an app without agent features: `not_agent_app` (assistant.threads.setSuggestedPrompts)
 * and `feature_disabled` (agents.sessions.*, a workspace without them); taken alike, as Slack names no other.
 */
const NOT_AGENT_APP_ERRORS = new Set(['not_agent_app', 'feature_disabled']);

/** Warnings Slack returns on success that an operator should act on, with the fix, each logged once. */
const WARNING_FIXES: Readonly<Record<string, string>> = {
  missing_agent_session_stopped_event_subscription:
    'subscribe the app to the agent_session_stopped bot event (manifest.yml lists it) and reinstall, so people get a stop button',
};

/** Slack message metadata type of every message a job posts. */
const JOB_METADATA_EVENT = 'agent_reply';
/** Slack refuses the blocks, not the message: the same words go again as plain text. */
// chat.update and chat.postEphemeral document `msg_too_long` where chat.postMessage says `msg_blocks_too_long`.
const BLOCK_ERRORS = new Set([
  'invalid_blocks',
  'invalid_blocks_format',
  'msg_blocks_too_long',
  'msg_too_long',
]);
const NO_THREAD_ERRORS = new Set(['thread_not_found', 'message_not_found']);
const RESPONSE_URL_TIMEOUT_MS = 10_000;
/** Tries of a notice Slack refused for now (429, 503, rate_limited). */
const NOTICE_ATTEMPTS = 4;
/** Pages of a thread read when looking for what a job already posted (200 messages each). */
const MAX_HISTORY_PAGES = 25;
/** Thread context reads at most this many pages of this size (1,000 messages), from the thread's start. */
const CONTEXT_PAGES = 5;
const CONTEXT_PAGE_SIZE = 200;

type ThreadReply = NonNullable<ConversationsRepliesResponse['messages']>[number];
/** The last `n` items (none for n <= 0, where slice(-0) would keep them all). */
const lastOf = <T>(items: readonly T[], n: number): T[] => (n > 0 ? items.slice(-n) : []);

/**
 * A post that failed. `transient`: Slack may take it later (`uncertain`: it may even have taken this one, so
 * look before posting again). Otherwise Slack will never take it (an archived channel, a revoked token).
 */
export class SlackPostError extends Error {
  constructor(
    readonly transient: boolean,
    readonly uncertain: boolean,
    readonly code: string,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(`Slack refused the post: ${code}`, options);
    this.name = 'SlackPostError';
  }
}

/**
 * Every write the bot makes to Slack: job output (exactly once), notices, ephemerals, response_url answers,
 * reactions, statuses, titles and prompts. `client` retries on its own (for calls that are harmless to
 * repeat); `postClient` never retries, so a post whose outcome is unknown is looked up before it is sent again.
 */
export class SlackReplies {
  private readonly warned = new Set<string>();

  constructor(
    private readonly client: WebClient,
    private readonly postClient: WebClient,
    private readonly logger: Logger,
    /** The bot's own user id: its messages are not context. */
    private readonly botUserId = '',
  ) {}

  /** response_url is a plain HTTPS endpoint of Slack's, not a Web API method: posted to with axios, as Bolt does. */
  private readonly responseUrls = axios.create({
    maxRedirects: 0,
    timeout: RESPONSE_URL_TIMEOUT_MS,
    headers: { 'content-type': 'application/json' },
  });

  /** Posts one message of a job, marked with metadata; throws SlackPostError. Returns its ts. */
  async postJobMessage(
    target: ReplyTarget,
    part: Pick<SlackReplyPart, 'text' | 'blocks'> & { markdown?: string },
    mark: JobMark,
  ): Promise<string | undefined> {
    const base = {
      channel: target.channel,
      thread_ts: target.threadTs,
      metadata: jobMetadata(mark),
      unfurl_links: false,
    };
    try {
      return (await this.postClient.chat.postMessage({ ...base, text: part.text, ...blocksArg(part.blocks) }))
        .ts;
    } catch (error) {
      const failure = classify(error);
      if (!BLOCK_ERRORS.has(failure.code) || part.blocks.length === 0) throw failure;
      this.logger.warn(
        { code: failure.code },
        'Slack refused the reply blocks; posting the words as plain text',
      );
      try {
        return (
          await this.postClient.chat.postMessage({ ...base, text: plainText(part.markdown ?? part.text) })
        ).ts;
      } catch (retryError) {
        throw classify(retryError);
      }
    }
  }

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
          const metadata = message.metadata as
            | { event_type?: string; event_payload?: { job?: unknown; part?: unknown } }
            | undefined;
          if (metadata?.event_type === JOB_METADATA_EVENT && metadata.event_payload?.job === job) {
            found.add(String(metadata.event_payload.part));
          }
        }
        cursor = history.response_metadata?.next_cursor || undefined;
        if (!cursor) break;
      }
    } catch (error) {
      // No such thread (its first message was deleted, or never existed): nothing of the job's is in it.
      if (!NO_THREAD_ERRORS.has(slackErrorCode(error) ?? '')) throw classify(error);
    }
    return found;
  }

  /**
   * Up to `limit` messages of a thread before `beforeTs`, without the bot's own: the thread's first message
   * and the last ones read, oldest first (what "this" most likely means). Slack pages a thread oldest first
   * and has no newest-first order, so it is read from its start, up to CONTEXT_PAGES pages (1,000 messages):
   * when more than that came before `beforeTs`, the last ones read are from the middle of the thread, not
   * those just before the mention. Empty when the thread cannot be read (the bot is not in the channel, a
   * scope is missing): context is a nicety.
   */
  async threadMessagesBefore(
    channel: string,
    threadTs: string,
    beforeTs: string,
    limit: number,
  ): Promise<EarlierMessages> {
    const relevant = (message: ThreadReply) =>
      Number(message.ts) < Number(beforeTs) && message.user !== this.botUserId;
    let first: ThreadReply | undefined;
    let latest: ThreadReply[] = [];
    try {
      let cursor: string | undefined;
      for (let page = 0; page < CONTEXT_PAGES; page++) {
        const found = await this.client.conversations.replies({
          channel,
          ts: threadTs,
          latest: beforeTs,
          inclusive: false,
          limit: CONTEXT_PAGE_SIZE,
          ...(cursor ? { cursor } : {}),
        });
        const messages = (found.messages ?? []).filter(relevant);
        // The thread's first message leads the first page (and may lead every page: kept once).
        if (page === 0 && messages[0]?.ts === threadTs) first = messages[0];
        latest = lastOf([...latest, ...messages.filter((message) => message.ts !== threadTs)], limit);
        cursor = found.response_metadata?.next_cursor || undefined;
        if (!found.has_more || !cursor) break;
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'could not read the thread for context; sending the message alone');
      return { latest: [] };
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
      throw classify(error);
    }
  }

  /**
   * Whether the bot has posted in a thread, from its first page of replies (Slack alone, for when the store
   * cannot say). False when the thread cannot be read.
   */
  async botPostedIn(channel: string, threadTs: string): Promise<boolean> {
    try {
      const found = await this.client.conversations.replies({ channel, ts: threadTs, limit: 200 });
      return (found.messages ?? []).some((message) => message.user === this.botUserId);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not read a thread to see whether the bot is in it');
      return false;
    }
  }

  /**
   * A message in a thread (best effort, for after-ack notices); returns its ts, or undefined if it failed.
   * Posted again only when Slack refused it for now and certainly did not take it (a 429, a 503, `rate_limited`),
   * never after a failure that may come after Slack took it (a gateway's 502 or 504, a timeout or a reset): that
   * post may be in the thread already, and nothing marks a notice to look it up.
   */
  async notice(target: ReplyTarget, text: string, mark?: JobMark): Promise<string | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        return (
          await this.postClient.chat.postMessage({
            channel: target.channel,
            thread_ts: target.threadTs,
            text,
            ...(mark ? { metadata: jobMetadata(mark) } : {}),
          })
        ).ts;
      } catch (error) {
        const failure = slackFailureKind(error);
        if (!failure.temporary || failure.uncertain || attempt >= NOTICE_ATTEMPTS) {
          this.logger.warn({ err: error, code: failure.code }, 'could not post a notice');
          return undefined;
        }
        await sleep(failure.retryAfterMs ?? backoffMs(attempt, 500));
      }
    }
  }

  /**
   * A note only one person sees, so the thread stays about the conversation. Best effort. Slack accepts a note
   * for a thread without replies yet never shows it (chat.postEphemeral, `thread_ts`), so such a note goes
   * to the channel instead, where its person sees it.
   */
  async ephemeral(target: ReplyTarget, user: string, text: string, blocks?: KnownBlock[]): Promise<void> {
    try {
      const inThread = target.threadTs && (await this.hasReplies(target.channel, target.threadTs));
      await this.client.chat.postEphemeral({
        channel: target.channel,
        user,
        ...(inThread ? { thread_ts: target.threadTs } : {}),
        text,
        ...(blocks ? { blocks } : {}),
      });
    } catch (error) {
      this.logger.warn({ err: error }, 'could not post a private note');
    }
  }

  /** Whether a thread has a reply now; false when it cannot be read (the channel always shows a note). */
  private async hasReplies(channel: string, threadTs: string): Promise<boolean> {
    try {
      // The thread's first message comes first, then its first reply, if any.
      const found = await this.client.conversations.replies({ channel, ts: threadTs, limit: 2 });
      return (found.messages ?? []).some((message) => message.ts !== threadTs);
    } catch {
      return false;
    }
  }

  /**
   * Answers a slash command, shortcut or button privately through its response_url (valid for 30 minutes).
   * Best effort: a failure is logged, never thrown.
   */
  async respond(responseUrl: string, text: string): Promise<void> {
    try {
      await this.responseUrls.post(responseUrl, {
        response_type: 'ephemeral',
        replace_original: false,
        text,
      });
    } catch (error) {
      this.logger.warn({ err: error }, 'could not answer through response_url');
    }
  }

  async deleteMessage(channel: string, ts: string): Promise<void> {
    try {
      await this.client.chat.delete({ channel, ts });
    } catch (error) {
      if (slackErrorCode(error) !== 'message_not_found')
        this.logger.warn({ err: error }, 'could not delete a message');
    }
  }

  /** Replaces a message's content (e.g. a notice whose button was used). Best effort. */
  async updateMessage(channel: string, ts: string, text: string, blocks: KnownBlock[] = []): Promise<void> {
    try {
      await this.client.chat.update({ channel, ts, text, ...blocksArg(blocks) });
    } catch (error) {
      this.logger.warn({ err: error }, 'could not update a message');
    }
  }

  async addReaction(channel: string, ts: string, name: string): Promise<void> {
    try {
      await this.client.reactions.add({ channel, timestamp: ts, name });
    } catch (error) {
      if (slackErrorCode(error) !== 'already_reacted')
        this.logger.warn({ err: error, name }, 'could not show indicator');
    }
  }

  async removeReaction(channel: string, ts: string, name: string): Promise<void> {
    try {
      await this.client.reactions.remove({ channel, timestamp: ts, name });
    } catch (error) {
      const code = slackErrorCode(error);
      if (code !== 'no_reaction' && code !== 'message_not_found')
        this.logger.warn({ err: error, name }, 'could not clear indicator');
    }
  }

  /** The "<app> is thinking…" line of a Messages-tab thread ('' clears it). Best effort. */
  async setThreadStatus(
    channel: string,
    threadTs: string,
    status: string,
    loadingMessages?: string[],
  ): Promise<void> {
    try {
      await this.client.assistant.threads.setStatus({
        channel_id: channel,
        thread_ts: threadTs,
        status,
        ...(status && loadingMessages ? { loading_messages: loadingMessages } : {}),
      });
    } catch (error) {
      this.logger.warn(
        { err: error },
        status ? 'could not set the thread status' : 'could not clear the thread status',
      );
    }
  }

  /**
   * Moves a thread's agent session to `status`, creating it (with its initiator) where it has none, `closed`
   * included. Slack shows its stop button while a session is `processing`. Best effort.
   */
  async setSessionStatus(
    channel: string,
    threadTs: string,
    status: AgentSessionStatus,
    initiator?: string,
  ): Promise<AgentCallResult> {
    try {
      const result = await this.client.agents.sessions.setStatus({
        channel_id: channel,
        thread_ts: threadTs,
        status,
        ...(initiator ? { initiator_user_id: initiator } : {}),
      });
      this.noteWarnings(result.response_metadata?.warnings);
      return 'ok';
    } catch (error) {
      return this.agentCallFailed(error, 'could not set the agent session status', { status });
    }
  }

  /** Names a thread's agent session (it must exist: set its status first). Best effort. */
  async renameSession(channel: string, threadTs: string, title: string): Promise<AgentCallResult> {
    try {
      await this.client.agents.sessions.rename({ channel_id: channel, thread_ts: threadTs, title });
      return 'ok';
    } catch (error) {
      return this.agentCallFailed(error, 'could not set the conversation title');
    }
  }

  /** A refused agent-only call: Slack's "no agent features here" is the caller's to remember, not a warning. */
  private agentCallFailed(error: unknown, message: string, fields: object = {}): AgentCallResult {
    if (NOT_AGENT_APP_ERRORS.has(slackErrorCode(error) ?? '')) return 'not-agent-app';
    this.logger.warn({ err: error, ...fields }, message);
    return 'failed';
  }

  /** Logs each actionable warning once per process, with its fix. */
  private noteWarnings(warnings: readonly string[] | undefined): void {
    for (const warning of warnings ?? []) {
      const fix = WARNING_FIXES[warning];
      if (!fix || this.warned.has(warning)) continue;
      this.warned.add(warning);
      this.logger.warn({ warning }, `Slack warns "${warning}": ${fix}`);
    }
  }

  /** The Messages tab's suggested prompts (no thread: for an agent app they belong to the tab). */
  async setSuggestedPrompts(
    channel: string,
    title: string,
    prompts: readonly { title: string; message: string }[],
  ): Promise<AgentCallResult> {
    try {
      await this.client.assistant.threads.setSuggestedPrompts({
        channel_id: channel,
        title,
        prompts: [...prompts],
      });
      return 'ok';
    } catch (error) {
      return this.agentCallFailed(error, 'could not set the suggested prompts');
    }
  }
}

/**
 * The `blocks` argument of a message: none for a text-only one. Slack's pages do not say what an empty array
 * means (chat.update does not say it clears the blocks), and Slack may refuse it: it is never sent.
 */
function blocksArg(blocks: readonly KnownBlock[]): { blocks?: KnownBlock[] } {
  return blocks.length > 0 ? { blocks: [...blocks] } : {};
}

/** The metadata that marks a message as `mark`'s, found again by postedJobParts. */
function jobMetadata(mark: JobMark) {
  return { event_type: JOB_METADATA_EVENT, event_payload: { job: mark.job, part: mark.part } };
}

/** Turns a WebClient failure into a SlackPostError. */
function classify(error: unknown): SlackPostError {
  if (error instanceof SlackPostError) return error;
  const { temporary, uncertain, code, retryAfterMs } = slackFailureKind(error);
  return new SlackPostError(temporary, uncertain, code, retryAfterMs, { cause: error });
}
