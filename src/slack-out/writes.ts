import { setTimeout as sleep } from 'node:timers/promises';
import type { KnownBlock, WebClient } from '@slack/web-api';
import axios from 'axios';
import type { Logger } from '../observability/logger.js';
import { retryDelayMs } from '../util/backoff.js';
import { slackErrorCode } from './client.js';
import { slackFailureKind, slackPostError } from './failures.js';
import { plainText, type SlackReplyPart } from './format.js';
import { SlackReads } from './reads.js';
import { type JobMark, jobMetadata, type ReplyTarget } from './reply-target.js';

/** An agent view session's lifecycle status (agents.sessions.setStatus). */
export type AgentViewStatus = 'processing' | 'active' | 'closed';

/** How an agent-only call went: `not-agent-app` when Slack says the app has no agent features there. */
export type AgentCallResult = 'ok' | 'not-agent-app' | 'failed';

/** What agents.sessions.setStatus uses only when it creates the session (@slack/web-api's typings say so). */
export interface SessionOpening {
  /** Who started the conversation. */
  initiator?: string;
  /** The session's title (at most 200 characters). */
  title?: string;
}

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

/** Slack refuses the blocks, not the message: the same words go again as plain text. */
// chat.update and chat.postEphemeral document `msg_too_long` where chat.postMessage says `msg_blocks_too_long`.
const BLOCK_ERRORS = new Set([
  'invalid_blocks',
  'invalid_blocks_format',
  'msg_blocks_too_long',
  'msg_too_long',
]);
const RESPONSE_URL_TIMEOUT_MS = 10_000;
/** Tries of a notice Slack refused for now (429, 503, rate_limited). */
const NOTICE_ATTEMPTS = 4;

/**
 * Every write the bot makes to Slack: job output (exactly once), notices, ephemerals, response_url answers,
 * reactions, statuses, titles and prompts. `client` retries on its own (for calls that are harmless to
 * repeat); `postClient` never retries, so a post whose outcome is unknown is looked up before it is sent again.
 */
export class SlackWrites {
  private readonly warned = new Set<string>();

  constructor(
    private readonly client: WebClient,
    private readonly postClient: WebClient,
    private readonly logger: Logger,
    /** Where a private note is visible depends on whether its thread has replies yet. */
    private readonly reads: Pick<SlackReads, 'hasReplies'> = new SlackReads(client, logger),
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
      const failure = slackPostError(error);
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
        throw slackPostError(retryError);
      }
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
        await sleep(retryDelayMs({ attempt, baseMs: 500, retryAfterMs: failure.retryAfterMs }));
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
      const inThread = target.threadTs && (await this.reads.hasReplies(target.channel, target.threadTs));
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

  /**
   * Answers a slash command, shortcut or button privately through its response_url (five answers within 30
   * minutes). Best effort: a failure is logged, never thrown; says whether Slack took the answer.
   */
  async respond(responseUrl: string, text: string): Promise<boolean> {
    try {
      await this.responseUrls.post(responseUrl, {
        response_type: 'ephemeral',
        replace_original: false,
        text,
      });
      return true;
    } catch (error) {
      this.logger.warn({ err: error }, 'could not answer through response_url');
      return false;
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

  /**
   * Moves a thread's agent view session to `status`, creating it where it has none (`closed` included), with
   * `opening`'s initiator and title: Slack uses both only when the call creates the session. Slack shows its
   * stop button while a session is `processing`. `title` is the session's title as Slack answered it, if it did.
   * Best effort.
   */
  async setSessionStatus(
    channel: string,
    threadTs: string,
    status: AgentViewStatus,
    opening: SessionOpening = {},
  ): Promise<{ result: AgentCallResult; title?: string }> {
    const set = (initiator: string | undefined) =>
      this.client.agents.sessions.setStatus({
        channel_id: channel,
        thread_ts: threadTs,
        status,
        ...(initiator ? { initiator_user_id: initiator } : {}),
        ...(opening.title ? { title: opening.title } : {}),
      });
    try {
      let answer: Awaited<ReturnType<typeof set>>;
      try {
        answer = await set(opening.initiator);
      } catch (error) {
        // The initiator "Must be a member of the channel": a guest from another organisation of a shared channel
        // may not count. The session matters more than who it names.
        if (!opening.initiator || slackErrorCode(error) !== 'user_not_found') throw error;
        answer = await set(undefined);
      }
      this.noteWarnings(answer.response_metadata?.warnings);
      return { result: 'ok', title: answer.title };
    } catch (error) {
      return {
        result: this.agentCallFailed(error, 'could not set the agent view session status', { status }),
      };
    }
  }

  /** Names a thread's agent view session (it must exist: set its status first). Best effort. */
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

  /** Agent view's suggested prompts (no thread: they belong to the Messages tab). */
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
