/** Where the bot writes: a channel, and the thread (none: the top level of a classic DM). */
export interface ReplyTarget {
  channel: string;
  threadTs?: string;
}

/** Marks a message a job posted, so a job resumed after a crash or an unknown outcome never posts it twice. */
export interface JobMark {
  /** The job's identity (its Slack message). */
  job: string;
  /** Which of the job's messages: a reply part's index, or a notice's name. */
  part: string;
}

/** Slack message metadata type of every message a job posts. */
const JOB_METADATA_EVENT = 'agent_reply';

/** The metadata that marks a message as `mark`'s, found again by `jobPartOf`. */
export function jobMetadata(mark: JobMark) {
  return { event_type: JOB_METADATA_EVENT, event_payload: { job: mark.job, part: mark.part } };
}

/** Which part of `job` a message's metadata marks it as; undefined when it is not one of the job's. */
export function jobPartOf(metadata: unknown, job: string): string | undefined {
  const mark = metadata as
    | { event_type?: string; event_payload?: { job?: unknown; part?: unknown } }
    | undefined;
  if (mark?.event_type !== JOB_METADATA_EVENT || mark.event_payload?.job !== job) return undefined;
  return String(mark.event_payload.part);
}
