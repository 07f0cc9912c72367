import { feedbackBlock } from '../slack-out/blocks.js';
import { formatAgentReply, type SlackReplyPart } from '../slack-out/format.js';
import type { ReplyTarget } from '../slack-out/reply-target.js';
import type { JobContext } from './job-context.js';
import type { ClaimedJob } from './job-progress.js';
import type { InboundMessage, ResetRequest } from './jobs.js';

/** The job's part name of the notice saying Slack refused its output for too long. */
export const GAVE_UP_PART = 'gave-up';
/** The job's part name of what it posted unrecorded: its notice, or the notice that its answer was dropped. */
export const UNRECORDED_PART = 'unrecorded';

/** What a job posts as its output: the agent's answer, or a notice in its place. */
export interface JobOutput {
  text: string;
  isNotice: boolean;
  /** The session that answered, named by the feedback buttons. */
  sessionId?: string;
  /** storeReply has just asked whether the job is still wanted. */
  wantedAsked?: boolean;
}

/**
 * A job's posts in its thread, each marked with the job and a part name, so a job run again finds what an
 * earlier run posted (even one that could not record it) and posts the rest only.
 */
export class JobPosts {
  constructor(private readonly context: JobContext) {}

  /**
   * Posts the job's output (the answer's parts, or a notice) once each, resuming after what was posted.
   * `parts`: the output already split (see partsOf).
   */
  async postOutput(
    job: ClaimedJob,
    message: InboundMessage,
    target: ReplyTarget,
    output: JobOutput,
    parts = this.partsOf(message, output, job.sessionId),
  ): Promise<void> {
    const { progress, replies, reads } = this.context.options;
    let next = job.partsPosted;
    let wantedAsked = output.wantedAsked === true;
    if (job.attempts > 1) {
      // A resumed job may have posted more than it recorded (a crash, or a post whose outcome was unknown).
      const found = await reads.postedJobParts(target, message.ts, job.dedupeKey);
      // An earlier run said Slack refused this output for too long (and then failed to record the job done).
      if (found.has(GAVE_UP_PART)) return;
      while (found.has(String(next))) next++;
      wantedAsked = false;
    }
    for (let index = next; index < parts.length; index++) {
      const part = parts[index];
      if (!part) continue;
      await this.context.assertWanted(job, wantedAsked);
      wantedAsked = false;
      await replies.postJobMessage(target, part, { job: job.dedupeKey, part: String(index) });
      if (index + 1 < parts.length) await progress.markPartsPosted(job, index + 1);
    }
  }

  /** The messages an output is posted as, in order. */
  partsOf(message: InboundMessage, output: JobOutput, jobSessionId?: string): SlackReplyPart[] {
    const { text, isNotice, sessionId = jobSessionId } = output;
    const parts: SlackReplyPart[] = isNotice ? [noticePart(text)] : formatAgentReply(text);
    const last = parts.at(-1);
    if (!isNotice && last && sessionId && this.context.options.feedbackButtons) {
      // Feedback under the whole answer, naming its agent and session so an operator can compare agents.
      last.blocks = [
        ...last.blocks,
        feedbackBlock({ agentId: this.context.options.agentFor(message.thread), sessionId }),
      ];
    }
    return parts;
  }

  /** A notice that is the job's whole output, posted once. */
  async postNotice(
    job: ClaimedJob,
    target: ReplyTarget,
    name: string,
    text: string,
    blocks: SlackReplyPart['blocks'] = [],
  ): Promise<void> {
    const { replies, reads } = this.context.options;
    if (job.attempts > 1 && (await reads.postedJobParts(target, postsFrom(job), job.dedupeKey)).has(name)) {
      return;
    }
    await this.context.assertWanted(job);
    await replies.postJobMessage(target, { ...noticePart(text), blocks }, { job: job.dedupeKey, part: name });
  }
}

/**
 * Where a job's own posts are looked for: from its Slack message on. A reset recorded before it kept its
 * message's ts is looked for from its thread's start (or, at the top level of a DM, among the latest).
 */
export function postsFrom(job: ClaimedJob): string {
  const payload = job.payload as Partial<InboundMessage & ResetRequest>;
  return payload.ts ?? payload.replyThreadTs ?? '0';
}

export function noticePart(text: string): SlackReplyPart {
  return { text, blocks: [], markdown: text };
}
