import type { ClaimedJob, JobKind } from '../conversation/job-progress.js';
import { JobInterruptedError } from '../conversation/job-progress.js';
import type { SqlQuery } from '../store/database.js';

export interface JobRow {
  id: string | number;
  thread_key: string;
  dedupe_key: string;
  kind: JobKind;
  payload: string;
  user_id: string | null;
  attempts: number;
  session_id: string | null;
  sent_at: Date | string | null;
  agent_reply: string | null;
  reply_is_notice: boolean | null;
  parts_posted: number;
  slow_notice_ts: string | null;
  queued: boolean | null;
  slack_failing_since: Date | string | null;
  answer_lost: boolean | null;
}

export const JOB_COLUMNS =
  'id, thread_key, dedupe_key, kind, payload, user_id, attempts, session_id, sent_at, agent_reply, reply_is_notice, parts_posted, slow_notice_ts, queued, slack_failing_since, answer_lost';
/** A job not yet over: waiting, or being worked on. */
export const OPEN = `state IN ('pending', 'running')`;

/**
 * A job whose prompt has not left and that no live owner holds: waiting, or held by an owner whose lease
 * lapsed (whoever takes it over starts it afresh). What a deletion or a stop may still cancel.
 */
export const NOT_STARTED = `sent_at IS NULL AND (state = 'pending' OR (state = 'running' AND lease_until < now()))`;

/**
 * The id of the oldest open job of the thread of the row named `row`: the thread's turn. Asked as the first
 * entry of the thread's own index, which only that index can answer: asked as "no older open job", a planner
 * whose statistics had not seen a flood of new threads walked every older open job by id for each one (half a
 * million index entries for a claim among a thousand open jobs).
 */
export function oldestOpenJobOf(row: string): string {
  return `(SELECT o.id FROM inbox o WHERE o.thread_key = ${row}.thread_key AND o.${OPEN} ORDER BY o.thread_key, o.id LIMIT 1)`;
}

export function toClaimedJob(row: JobRow): ClaimedJob {
  return {
    id: Number(row.id),
    threadKey: row.thread_key,
    dedupeKey: row.dedupe_key,
    kind: row.kind,
    payload: JSON.parse(row.payload) as unknown,
    userId: row.user_id ?? undefined,
    attempts: row.attempts,
    sessionId: row.session_id ?? undefined,
    sentAt: row.sent_at === null ? undefined : new Date(row.sent_at),
    agentReply: row.agent_reply ?? undefined,
    replyIsNotice: row.reply_is_notice === true,
    partsPosted: row.parts_posted,
    slowNoticeTs: row.slow_notice_ts ?? undefined,
    queued: row.queued === true,
    slackFailingSince: row.slack_failing_since === null ? undefined : new Date(row.slack_failing_since),
    answerLost: row.answer_lost === true,
  };
}

/** Who holds a job and whether its author stopped it: what decides if the job may still act. */
export interface WantedRow {
  owner: string | null;
  state: string;
  stop_requested: boolean;
}

/** Throws JobInterruptedError unless the row is `owner`'s running job and its author has not stopped it. */
export function throwUnlessWanted(row: WantedRow | undefined, owner: string): void {
  if (row?.state === 'cancelled') throw new JobInterruptedError('cancelled');
  if (!row || row.owner !== owner || row.state !== 'running') throw new JobInterruptedError('lost');
  if (row.stop_requested) throw new JobInterruptedError('stopped');
}

/** Serialises the recording of a thread's jobs until the transaction ends, as the queue's admit does. */
export async function lockThread(query: SqlQuery, threadKey: string): Promise<void> {
  await query(`SELECT pg_advisory_xact_lock(hashtext('inbox:' || $1))`, [threadKey]);
}
