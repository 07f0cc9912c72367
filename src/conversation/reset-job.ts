import { isSlackThread } from '../sessions/conversation-of.js';
import { SlackPostError } from '../slack-out/failures.js';
import type { JobContext } from './job-context.js';
import { JobPosts } from './job-posts.js';
import type { ClaimedJob, JobOutcome } from './job-progress.js';
import type { ResetRequest } from './jobs.js';
import { threadResetText } from './notices.js';
import type { SlackRefusals } from './slack-retry.js';

/** A thread reset, run in turn with the thread's messages: its sessions retired, the thread told once. */
export class ResetJob {
  private readonly posts: JobPosts;

  constructor(
    private readonly context: JobContext,
    private readonly refusals: SlackRefusals,
  ) {
    this.posts = new JobPosts(context);
  }

  /**
   * Ends the thread's conversation. Like an answer, its words are recorded before anything is done, so a reset
   * run again (its end not recorded, or taken over) says what the first run found, and says it once.
   */
  async run(job: ClaimedJob, request: ResetRequest): Promise<JobOutcome> {
    const { progress, sessions, replies } = this.context.options;
    const thread = {
      teamId: request.thread.teamId,
      channelId: request.thread.channelId,
      threadTs: request.thread.threadTs,
    };
    // Listed again on a rerun: a crash may have come between recording the words and retiring the session.
    const ending = await sessions.list(thread);
    const recordedNow = job.agentReply === undefined && !request.silent;
    let text = job.agentReply;
    if (recordedNow) {
      text = threadResetText(ending.length);
      await progress.storeReply(job, text, true);
    } else {
      await this.context.assertWanted(job);
    }
    await sessions.retire(ending, 'reset');
    // The conversation is over; the next message in the thread starts a new one (and a new session).
    if (isSlackThread(request.thread)) await this.context.options.agentFeatures.close([request.thread]);
    if (text === undefined) return { kind: 'done' };
    if (request.responseUrl) {
      // A private answer cannot be looked up afterwards: only the run that recorded the words sends it (so
      // it may be missing after a crash right here, never doubled).
      if (recordedNow) {
        await this.context.assertWanted(job);
        // A reset that waited behind a long answer may outlive its response_url: then a private note here.
        const answered = await replies.respond(request.responseUrl, text);
        if (!answered && job.userId !== undefined) {
          await replies.ephemeral(
            { channel: request.thread.channelId, threadTs: request.replyThreadTs },
            job.userId,
            text,
          );
        }
      }
      return { kind: 'done' };
    }
    const target = { channel: request.thread.channelId, threadTs: request.replyThreadTs };
    try {
      await this.posts.postNotice(job, target, 'reset', text);
    } catch (error) {
      if (!(error instanceof SlackPostError)) throw error;
      const logger = this.context.jobLogger(job, request.thread);
      // Refused for now: its words are recorded, so a later run posts them (once).
      if (this.refusals.mayRetry(job, error)) return this.refusals.retryLater(job, error, logger);
      // The reset itself is done; its notice is best effort.
      logger.warn({ err: error }, 'could not post the reset notice');
    }
    return { kind: 'done' };
  }
}
