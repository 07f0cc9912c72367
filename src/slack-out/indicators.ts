import { within } from '../util/within.js';
import { AgentFeatures, openedSessionsInMemory } from './agent-features.js';
import type { AgentViewStatus, SlackWrites } from './writes.js';

export const QUEUED_REACTION = 'hourglass_flowing_sand';
export const WORKING_REACTION = 'eyes';

/**
 * Slack ends `processing` on its own after an hour ("Sessions in the `processing` status time out after one hour
 * and automatically transition to `active`": docs.slack.dev, ai/agent-sessions): a slower answer sets it again
 * before then.
 */
export const SESSION_PROCESSING_REFRESH_MS = 50 * 60_000;

export const SLOW_NOTICE =
  ':hourglass: The agent is taking a while on this one. I will post the answer here when it is ready.';

/**
 * How long ending a job's indicators waits for Slack to take them down. Enough for any call Slack answers at
 * once; a throttled one goes on in the background (in order), so the job, and the thread's next message, never
 * wait out a Retry-After for an indicator.
 */
const INDICATOR_WAIT_MS = 1_000;

/** The user message an indicator is attached to, and where replies to it go. */
export interface IndicatorTarget {
  channelId: string;
  ts: string;
  /** Thread of the reply, or undefined for a top-level DM conversation. */
  replyThreadTs?: string;
  /**
   * The thread is an agent view session (a DM of the Messages tab, or a channel thread): its status shows the
   * work (`processing`, with Slack's stop button, then `active`) instead of reactions.
   */
  agentView?: {
    /** The workspace: Slack may say it has no agent features (then reactions show nothing more). */
    teamId: string;
    /** Who started it, for a session Slack creates now. */
    initiator: string;
  };
}

/** The indicators of one message being worked on. */
export interface Working {
  /**
   * Names a new conversation (an agent view session's title): the status call that opens its session carries
   * it, or a rename if a status call went out already; nothing for reactions.
   */
  setTitle(title: string): void;
  /**
   * Ends this attempt's indicators; call on every ending. `clear` (the work is over): take them down. `leave`
   * (the job goes on later, or with another owner): stop this attempt's timers and leave what shows for
   * whoever finishes the job.
   */
  end(how?: 'clear' | 'leave'): Promise<void>;
}

export interface WorkingOptions {
  /** A slow notice an earlier owner of this job already posted (after a crash), to clear at the end. */
  slowNoticeTs?: string;
  /** Persists the slow notice's ts, so whoever finishes the job can delete it. */
  onSlowNotice?: (ts: string) => Promise<void>;
  /**
   * An earlier owner worked on this message and may have left its indicator (a reaction, `processing`): the
   * reaction is always cleared, and `processing` set at once, so that this attempt's ending sets `active`.
   */
  resumed?: boolean;
  /** Whether the job is still this process's and wanted, asked before the slow notice is posted. */
  stillWanted?: () => Promise<boolean>;
}

/**
 * Shows people that their message is queued or being worked on (reactions on their message and a notice when
 * the agent is slow, or the status of an agent view session), and clears them again. Every call is best
 * effort: an indicator that cannot be shown or cleared never fails the answer.
 */
export class WorkIndicators {
  /** The last indicator call per message and reaction name (or per agent view session), while one is under way. */
  private readonly reactionCalls = new Map<string, Promise<void>>();

  constructor(
    private readonly replies: SlackWrites,
    private readonly slowNoticeMs: number,
    /**
     * The working reaction, and an agent view session's `processing` in a conversation under way, wait this long:
     * an answer that comes sooner needs no indicator (0: at once).
     */
    private readonly workingDelayMs = 0,
    /** Agent view sessions (shared with whoever closes them); by default this process's own. */
    private readonly agentFeatures = new AgentFeatures(replies, 'auto', openedSessionsInMemory()),
  ) {}

  showQueued(target: IndicatorTarget): Promise<void> {
    return this.inOrder(target, QUEUED_REACTION, () =>
      this.replies.addReaction(target.channelId, target.ts, QUEUED_REACTION),
    );
  }

  clearQueued(target: IndicatorTarget): Promise<void> {
    return this.inOrder(target, QUEUED_REACTION, () =>
      this.replies.removeReaction(target.channelId, target.ts, QUEUED_REACTION),
    );
  }

  /** Marks the message as being worked on; `end()` the result on every ending. */
  showWorking(target: IndicatorTarget, options: WorkingOptions = {}): Working {
    if (target.agentView && target.replyThreadTs) {
      return this.showAgentView(target.channelId, target.replyThreadTs, target.agentView, options);
    }
    // Not awaited: the reaction shows up while the prompt is already on its way (its removal is queued after it).
    let adding: Promise<void> | undefined;
    const addWorking = (delayed: boolean) => {
      adding = this.inOrder(target, WORKING_REACTION, async () => {
        // After the delay the job may be another process's, which may have answered and cleared it already.
        if (delayed && options.stillWanted && !(await options.stillWanted())) return;
        await this.replies.addReaction(target.channelId, target.ts, WORKING_REACTION);
      });
    };
    const workingTimer =
      this.workingDelayMs > 0 ? setTimeout(() => addWorking(true), this.workingDelayMs) : undefined;
    if (workingTimer) workingTimer.unref();
    else addWorking(false);
    let slowNoticeTs = options.slowNoticeTs;
    /** Recorded in the job, so whoever finishes it deletes the notice. */
    let slowNoticeKept = slowNoticeTs !== undefined;
    let slowNoticePosting: Promise<void> | undefined;
    const postSlowNotice = async () => {
      if (options.stillWanted && !(await options.stillWanted())) return;
      slowNoticeTs = await this.replies.notice(
        { channel: target.channelId, threadTs: target.replyThreadTs },
        SLOW_NOTICE,
      );
      if (!slowNoticeTs || !options.onSlowNotice) return;
      await options.onSlowNotice(slowNoticeTs);
      slowNoticeKept = true;
    };
    const slowTimer =
      this.slowNoticeMs > 0 && !slowNoticeTs
        ? setTimeout(() => {
            slowNoticePosting = postSlowNotice().catch(() => {});
          }, this.slowNoticeMs)
        : undefined;
    slowTimer?.unref();
    const end = async (how: 'clear' | 'leave' = 'clear') => {
      clearTimeout(slowTimer);
      clearTimeout(workingTimer);
      await slowNoticePosting;
      if (how === 'leave') {
        // A notice nobody else knows of would stay for good.
        if (slowNoticeTs && !slowNoticeKept) await this.replies.deleteMessage(target.channelId, slowNoticeTs);
        await awhile(adding);
        return;
      }
      const removing =
        adding || options.resumed
          ? this.inOrder(target, WORKING_REACTION, () =>
              this.replies.removeReaction(target.channelId, target.ts, WORKING_REACTION),
            )
          : undefined;
      if (slowNoticeTs) await this.replies.deleteMessage(target.channelId, slowNoticeTs);
      await awhile(removing);
    };
    return { setTitle: () => {}, end };
  }

  /**
   * An agent view session's indicator: `processing` (Slack shows "Working…" and its stop button), set again
   * every 50 minutes, and `active` at the end of the attempt that set it. Like the working reaction,
   * `processing` waits `workingDelayMs` in a conversation under way: an answer that comes sooner leaves the
   * session as it was (active), with no call; a new conversation's session (`setTitle`) then opens at the end,
   * named and `active` (one call where Slack's answer shows the title taken). `processing` is set at once for
   * a message tried again (another owner may have left it `processing`), and in a thread whose last status
   * here did not land (AgentFeatures.statusUnsettled). The Messages tab gets no "is thinking…" line of its own:
   * Slack turns `assistant.threads.setStatus` into the session's status there (its "compatibility bridge"),
   * which would show the stop button at once and open a new conversation's session untitled. Each call waits
   * for the one before, so an ending never reaches Slack before the start. What a timer sets is set only while
   * `stillWanted`: after a takeover the other owner may have ended the work.
   */
  private showAgentView(
    channel: string,
    threadTs: string,
    session: NonNullable<IndicatorTarget['agentView']>,
    options: WorkingOptions,
  ): Working {
    const stillWanted = options.stillWanted ?? (async () => true);
    // In order with the session's calls of earlier jobs too, which may still be under way (throttled).
    const sessionKey = `${channel}/${threadTs}/session`;
    const features = this.agentFeatures;
    const thread = { teamId: session.teamId, channelId: channel, threadTs };
    let calls: Promise<unknown> = Promise.resolve();
    const then = (call: () => Promise<unknown>) => {
      calls = this.queued(sessionKey, call);
    };
    const whileWanted = (call: () => Promise<unknown>) =>
      then(async () => {
        if (await stillWanted()) await call();
      });
    let processingTimer: NodeJS.Timeout | undefined;
    /** Whether this attempt asked for `processing` (so that its ending asks for `active`). */
    let processingAsked = false;
    /**
     * A new conversation's title until a status call takes it: Slack names a session in the status call that
     * creates it. Once a status call has gone out (`statusSent`), a title is set by rename.
     */
    let title: string | undefined;
    let statusSent = false;
    const sendStatus = (status: AgentViewStatus) => {
      statusSent = true;
      const opening = { initiator: session.initiator, title };
      title = undefined;
      return features.setStatus(thread, status, opening);
    };
    const askProcessing = (ifStillWanted: boolean) => {
      if (processingAsked) return;
      processingAsked = true;
      clearTimeout(processingTimer);
      const call = () => sendStatus('processing');
      if (ifStillWanted) whileWanted(call);
      else then(call);
    };
    if (this.workingDelayMs > 0 && !options.resumed && !features.statusUnsettled(thread)) {
      processingTimer = setTimeout(() => askProcessing(true), this.workingDelayMs);
    } else {
      askProcessing(false);
    }
    const timers: (NodeJS.Timeout | undefined)[] = [
      processingTimer,
      setInterval(() => {
        if (processingAsked) whileWanted(() => sendStatus('processing'));
      }, SESSION_PROCESSING_REFRESH_MS),
    ];
    for (const timer of timers) timer?.unref();
    return {
      // The title is known only once the prompt is built and its conversation found new, which may be after a
      // status call went out.
      setTitle: (named) => {
        if (statusSent) then(() => features.rename(thread, named));
        else title = named;
      },
      end: async (how = 'clear') => {
        for (const timer of timers) clearTimeout(timer);
        if (how === 'leave') {
          // A new conversation's session opens now, named, for whoever finishes the job (who will not name it),
          // unless the job is no longer this process's to show (a reset, a takeover).
          if (title !== undefined) {
            whileWanted(async () => {
              if (title !== undefined) await sendStatus('processing');
            });
          }
          return void (await awhile(calls));
        }
        then(async () => {
          // A new conversation whose session no status call has opened (answered within the delay, or the job
          // no longer wanted when `processing` was due): it opens now, named, with no stop button shown.
          if (title !== undefined) await sendStatus('active');
          // Only a session still open: a reset, archive or idle close may have ended it while this call waited.
          else if (processingAsked) await features.update(thread, 'active');
        });
        await awhile(calls);
      },
    };
  }

  /**
   * Reaction calls on one message and name run in the order they were made: a removal sent while its
   * addition is still on the way could reach Slack first and leave the reaction behind for good.
   */
  private inOrder(target: IndicatorTarget, name: string, call: () => Promise<void>): Promise<void> {
    return this.queued(`${target.channelId}/${target.ts}/${name}`, call);
  }

  /** Runs `call` after the last call queued under `key` (whether that one failed or not). */
  private queued(key: string, call: () => Promise<unknown>): Promise<void> {
    const run = (this.reactionCalls.get(key) ?? Promise.resolve()).then(call, call).then(() => {});
    this.reactionCalls.set(key, run);
    void run.finally(() => {
      if (this.reactionCalls.get(key) === run) this.reactionCalls.delete(key);
    });
    return run;
  }
}

/** Waits for a best-effort call, but not beyond INDICATOR_WAIT_MS: it goes on by itself after that. */
async function awhile(call: Promise<unknown> | undefined): Promise<void> {
  if (call) await within(call, INDICATOR_WAIT_MS);
}
