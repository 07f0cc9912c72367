import type { WebClient } from '@slack/web-api';
import type { Logger } from '../observability/logger.js';

export const QUEUED_REACTION = 'hourglass_flowing_sand';
export const WORKING_REACTION = 'eyes';

/** The agent thread's status ("<app> is thinking…"), and what Slack rotates through meanwhile. */
export const AGENT_STATUS = 'is thinking…';
export const AGENT_SLOW_STATUS = 'is still working on it…';
export const AGENT_LOADING_MESSAGES = [
  'Reading your message…',
  'Asking the agent…',
  'Waiting for the answer…',
];
/** Slack drops a status after about two minutes without a message; it is set again well before. */
export const AGENT_STATUS_REFRESH_MS = 90_000;

export const SLOW_NOTICE =
  ':hourglass: The agent is taking a while on this one. I will post the answer here when it is ready.';

/** The user message an indicator is attached to, and where replies to it go. */
export interface IndicatorTarget {
  channelId: string;
  ts: string;
  /** Thread of the reply, or undefined for a top-level DM conversation. */
  replyThreadTs?: string;
  /** A conversation in the Messages tab (agent experience): the thread's status shows the work. */
  agentThread?: boolean;
}

export interface WorkingOptions {
  /** A slow notice an earlier owner of this job already posted (after a crash), to clear at the end. */
  slowNoticeTs?: string;
  /** Persists the slow notice's ts, so whoever finishes the job can delete it. */
  onSlowNotice?: (ts: string) => Promise<void>;
  /** An earlier owner worked on this message (and may have left its reaction), so always clear it. */
  resumed?: boolean;
}

/**
 * Shows users that their message is queued or being worked on (reactions on their message, and a
 * notice when the agent is slow), and clears them again. Every Slack call here is best effort: an
 * indicator that cannot be shown or cleared must never fail the answer.
 */
export class WorkIndicators {
  /** The last reaction call per message and reaction name, while one is under way. */
  private readonly reactionCalls = new Map<string, Promise<void>>();

  constructor(
    private readonly slack: WebClient,
    private readonly logger: Logger,
    private readonly slowNoticeMs: number,
    /** The working reaction waits this long: an answer that comes sooner needs no indicator (0: at once). */
    private readonly workingDelayMs = 0,
    /** How often an agent thread's status is set again while the answer is still coming. */
    private readonly statusRefreshMs = AGENT_STATUS_REFRESH_MS,
  ) {}

  async showQueued(target: IndicatorTarget): Promise<void> {
    await this.addReaction(target, QUEUED_REACTION);
  }

  async clearQueued(target: IndicatorTarget): Promise<void> {
    await this.removeReaction(target, QUEUED_REACTION);
  }

  /** Marks the message as being worked on; call the returned function on every ending. */
  showWorking(target: IndicatorTarget, options: WorkingOptions = {}): () => Promise<void> {
    if (target.agentThread && target.replyThreadTs) return this.showAgentStatus(target, target.replyThreadTs);
    // Not awaited: the reaction shows up while the prompt is already on its way (it is awaited before removal).
    let adding: Promise<void> | undefined;
    const addWorking = () => {
      adding = this.addReaction(target, WORKING_REACTION);
    };
    const workingTimer = this.workingDelayMs > 0 ? setTimeout(addWorking, this.workingDelayMs) : undefined;
    if (workingTimer) workingTimer.unref();
    else addWorking();
    let slowNoticeTs = options.slowNoticeTs;
    let slowNoticePosting: Promise<void> | undefined;
    const timer =
      this.slowNoticeMs > 0 && !slowNoticeTs
        ? setTimeout(() => {
            slowNoticePosting = this.postSlowNotice(target).then(async (ts) => {
              slowNoticeTs = ts;
              if (ts) await options.onSlowNotice?.(ts).catch(() => {});
            });
          }, this.slowNoticeMs)
        : undefined;
    timer?.unref();
    return async () => {
      clearTimeout(timer);
      clearTimeout(workingTimer);
      await slowNoticePosting;
      if (adding || options.resumed) {
        await adding;
        await this.removeReaction(target, WORKING_REACTION);
      }
      if (slowNoticeTs) await this.deleteNotice(target, slowNoticeTs);
    };
  }

  /**
   * The agent experience's native indicator: the thread's status, set at once, refreshed before Slack's
   * expiry, worded differently once the agent is slow (a notice message would clear it), and cleared on
   * every ending.
   */
  private showAgentStatus(target: IndicatorTarget, threadTs: string): () => Promise<void> {
    let status = AGENT_STATUS;
    let setting = this.setAgentStatus(target.channelId, threadTs, status);
    const refresh = setInterval(() => {
      setting = this.setAgentStatus(target.channelId, threadTs, status);
    }, this.statusRefreshMs);
    refresh.unref();
    const slow =
      this.slowNoticeMs > 0
        ? setTimeout(() => {
            status = AGENT_SLOW_STATUS;
            setting = this.setAgentStatus(target.channelId, threadTs, status);
          }, this.slowNoticeMs)
        : undefined;
    slow?.unref();
    return async () => {
      clearInterval(refresh);
      clearTimeout(slow);
      await setting;
      await this.setAgentStatus(target.channelId, threadTs, '');
    };
  }

  private async setAgentStatus(channelId: string, threadTs: string, status: string): Promise<void> {
    try {
      await this.slack.assistant.threads.setStatus({
        channel_id: channelId,
        thread_ts: threadTs,
        status,
        ...(status ? { loading_messages: AGENT_LOADING_MESSAGES } : {}),
      });
    } catch (error) {
      this.logger.warn(
        { err: error },
        status ? 'could not set the thread status' : 'could not clear the thread status',
      );
    }
  }

  /**
   * Reaction calls on one message and name run in the order they were made: a removal sent while its
   * addition is still on the way could reach Slack first and leave the reaction behind for good.
   */
  private inOrder(target: IndicatorTarget, name: string, call: () => Promise<void>): Promise<void> {
    const key = `${target.channelId}/${target.ts}/${name}`;
    const run = (this.reactionCalls.get(key) ?? Promise.resolve()).then(call);
    this.reactionCalls.set(key, run);
    void run.finally(() => {
      if (this.reactionCalls.get(key) === run) this.reactionCalls.delete(key);
    });
    return run;
  }

  private addReaction(target: IndicatorTarget, name: string): Promise<void> {
    return this.inOrder(target, name, () => this.sendAddReaction(target, name));
  }

  private removeReaction(target: IndicatorTarget, name: string): Promise<void> {
    return this.inOrder(target, name, () => this.sendRemoveReaction(target, name));
  }

  private async sendAddReaction(target: IndicatorTarget, name: string): Promise<void> {
    try {
      await this.slack.reactions.add({ channel: target.channelId, timestamp: target.ts, name });
    } catch (error) {
      if (slackError(error) !== 'already_reacted')
        this.logger.warn({ err: error, name }, 'could not show indicator');
    }
  }

  private async sendRemoveReaction(target: IndicatorTarget, name: string): Promise<void> {
    try {
      await this.slack.reactions.remove({ channel: target.channelId, timestamp: target.ts, name });
    } catch (error) {
      const code = slackError(error);
      if (code !== 'no_reaction' && code !== 'message_not_found') {
        this.logger.warn({ err: error, name }, 'could not clear indicator');
      }
    }
  }

  private async postSlowNotice(target: IndicatorTarget): Promise<string | undefined> {
    try {
      const posted = await this.slack.chat.postMessage({
        channel: target.channelId,
        thread_ts: target.replyThreadTs,
        text: SLOW_NOTICE,
      });
      return posted.ts;
    } catch (error) {
      this.logger.warn({ err: error }, 'could not post the slow-agent notice');
      return undefined;
    }
  }

  private async deleteNotice(target: IndicatorTarget, noticeTs: string): Promise<void> {
    try {
      await this.slack.chat.delete({ channel: target.channelId, ts: noticeTs });
    } catch (error) {
      if (slackError(error) !== 'message_not_found') {
        this.logger.warn({ err: error }, 'could not delete the slow-agent notice');
      }
    }
  }
}

export function slackError(error: unknown): string | undefined {
  return (error as { data?: { error?: string } } | undefined)?.data?.error;
}
