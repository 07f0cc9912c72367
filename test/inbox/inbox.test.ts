import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { type ClaimedJob, JobInterruptedError } from '../../src/conversation/job-progress.js';
import { Inbox } from '../../src/inbox/inbox.js';
import { activityRowKey } from '../../src/sessions/store.js';
import { type Database, openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/schema.js';
import { embeddedStorePerSuite } from '../helpers/embedded-store.js';
import {
  createTestDatabase,
  postgresStorePerSuite,
  shouldRunPostgresTests,
  type TestDatabase,
} from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';

const runPostgres = await shouldRunPostgresTests();

const LEASE_MS = 60_000;
const NO_LIMITS = { maxOpenPerThread: 20, userPerMinute: 0 };

/** A message job of thread `thread`, identified by `ts`. */
function message(thread: string, ts: string, userId = 'U1') {
  return {
    threadKey: thread,
    dedupeKey: `${thread}:${ts}`,
    kind: 'message' as const,
    payload: { text: `prompt ${ts}` },
    userId,
  };
}

/** The contract on one store per suite, emptied before each test (`storePerSuite`). */
function inboxContract(name: string, storePerSuite: () => { readonly db: Database }) {
  describe(name, () => {
    const store = storePerSuite();
    async function fresh(): Promise<{ db: Database; a: Inbox; b: Inbox }> {
      const { db } = store;
      return { db, a: new Inbox(db, 'replica-a', LEASE_MS), b: new Inbox(db, 'replica-b', LEASE_MS) };
    }

    /** Whether the store records this message's prompt as sent. */
    async function wasSent(dedupeKey: string): Promise<boolean> {
      const rows = await store.db.query('SELECT 1 FROM inbox WHERE dedupe_key = $1 AND sent_at IS NOT NULL', [
        dedupeKey,
      ]);
      return rows.length > 0;
    }

    it('records a message once, says when it waits behind its thread, and enforces the limits', async () => {
      const { a } = await fresh();
      expect(await a.admit(message('t1', '1'), NO_LIMITS)).toEqual({ outcome: 'inserted', queued: false });
      expect(await a.admit(message('t1', '1'), NO_LIMITS)).toEqual({ outcome: 'duplicate', queued: true });
      expect(await a.admit(message('t1', '2'), NO_LIMITS)).toEqual({ outcome: 'inserted', queued: true });
      const full = { maxOpenPerThread: 2, userPerMinute: 0 };
      expect((await a.admit(message('t1', '3'), full)).outcome).toBe('thread-full');
      const perUser = { maxOpenPerThread: 20, userPerMinute: 2 };
      expect((await a.admit(message('t2', '1', 'U9'), perUser)).outcome).toBe('inserted');
      expect((await a.admit(message('t3', '1', 'U9'), perUser)).outcome).toBe('inserted');
      expect((await a.admit(message('t4', '1', 'U9'), perUser)).outcome).toBe('rate-limited');
      // A repeated delivery is not a new request: it is not counted against the sender.
      expect((await a.admit(message('t2', '1', 'U9'), perUser)).outcome).toBe('duplicate');
      // Commands share the sender's budget.
      expect(await a.chargeUser('U9', 2)).toBe(false);
      expect(await a.chargeUser('U8', 2)).toBe(true);
    });

    it("hands out a thread's messages one at a time, in order, to one replica at a time", async () => {
      const { a, b } = await fresh();
      for (const ts of ['1', '2', '3']) await a.admit(message('t1', ts), NO_LIMITS);
      await a.admit(message('t2', '1'), NO_LIMITS);
      const first = await a.claim(10);
      expect(first.map((job) => job.dedupeKey)).toEqual(['t1:1', 't2:1']);
      expect(await b.claim(10)).toEqual([]); // the heads are taken; later messages wait their turn
      // Finishing says whether the thread has a next message to run (the worker then claims at once).
      expect(await a.finish(first[0] as ClaimedJob)).toEqual({ threadHasMore: true });
      expect(await a.finish(first[1] as ClaimedJob)).toEqual({ threadHasMore: false });
      const next = await b.claim(10);
      expect(next.map((job) => job.dedupeKey)).toEqual(['t1:2']);
      expect(next[0]?.attempts).toBe(1);
      // Not this owner's: nothing finished, nothing to run.
      expect(await a.finish(next[0] as ClaimedJob)).toEqual({ threadHasMore: false });
    });

    it("claims a message as it records it, when asked and when it is its thread's turn", async () => {
      const { a, b } = await fresh();
      const first = await a.admit(message('t1', '1'), NO_LIMITS, true);
      expect(first).toMatchObject({ outcome: 'inserted', queued: false });
      expect(first.claimed).toMatchObject({
        dedupeKey: 't1:1',
        attempts: 1,
        payload: { text: 'prompt 1' },
      });
      // Taken: no claim pass hands it out again.
      expect(await b.claim(10)).toEqual([]);
      // Behind it in its thread: recorded unclaimed, to wait its turn.
      const second = await a.admit(message('t1', '2'), NO_LIMITS, true);
      expect(second).toMatchObject({ outcome: 'inserted', queued: true });
      expect(second.claimed).toBeUndefined();
      // Not asked (no room): recorded for a claim pass.
      expect((await a.admit(message('t2', '1'), NO_LIMITS, false)).claimed).toBeUndefined();
      expect(await a.finish(first.claimed as ClaimedJob)).toEqual({ threadHasMore: true });
      expect((await b.claim(10)).map((job) => job.dedupeKey)).toEqual(['t1:2', 't2:1']);
    });

    it("takes back work whose lease lapsed, its own process's too, but never a job it is running", async () => {
      const { db, a, b } = await fresh();
      await a.admit(message('t1', '1'), NO_LIMITS);
      await a.admit(message('t2', '1'), NO_LIMITS);
      const [j1, j2] = await a.claim(10);
      await db.query(`UPDATE inbox SET lease_until = now() - interval '1 second'`);
      // This process still runs j1 (say, its finish failed and is being retried), but lost track of j2.
      const retaken = await a.claim(10, [j1?.id ?? 0]);
      expect(retaken.map((job) => job.id)).toEqual([j2?.id]);
      expect(retaken[0]?.attempts).toBe(2);
      // Another replica takes the one nobody holds a live lease on.
      const taken = await b.claim(10);
      expect(taken.map((job) => job.id)).toEqual([j1?.id]);
      // The former owner's progress no longer lands, and says why.
      await expect(a.markPartsPosted(j1 as ClaimedJob, 1)).rejects.toEqual(new JobInterruptedError('lost'));
    });

    it('keeps progress across a deferral, and runs the job again only when it is due', async () => {
      const { db, a } = await fresh();
      await a.admit(message('t1', '1'), NO_LIMITS);
      const [job] = (await a.claim(1)) as [ClaimedJob];
      await a.markSent(job, 's-1');
      await a.storeReply(job, 'the answer', false);
      await a.defer(job, 60_000, true);
      expect(await a.claim(1)).toEqual([]);
      await db.query(`UPDATE inbox SET run_after = now()`);
      const [again] = (await a.claim(1)) as [ClaimedJob];
      expect(again).toMatchObject({ id: job.id, sessionId: 's-1', agentReply: 'the answer', attempts: 2 });
      expect(again.sentAt).toBeInstanceOf(Date);
      expect(again.slackFailingSince).toBeInstanceOf(Date);
    });

    it('gives up the answer of a sender that does not answer the next owner, and then refuses it', async () => {
      const { db, a, b } = await fresh();
      // A short lease: the sender has two heartbeats (half of it) to answer.
      const quickA = new Inbox(db, 'replica-a', 600);
      const quickB = new Inbox(db, 'replica-b', 600);
      await a.admit(message('t1', '1'), NO_LIMITS);
      const [mine] = (await quickA.claim(1)) as [ClaimedJob];
      await quickA.markSent(mine, 's-1');
      await db.query(`UPDATE inbox SET lease_until = now() - interval '1 second'`);
      const [theirs] = (await quickB.claim(1)) as [ClaimedJob];
      // The first question is only asked; a sender heard from afterwards is alive.
      expect(await quickB.judgeSender(theirs, false)).toMatchObject({ lost: false });
      await quickA.heartbeat([mine.id]);
      // Time passing, as the store sees it: the question and the answer to it moved 450 ms into the past.
      const later = () =>
        db.query(`UPDATE inbox SET sender_pinged_at = sender_pinged_at - interval '450 milliseconds',
                    sender_seen_at = sender_seen_at - interval '450 milliseconds'`);
      await later();
      expect(await quickB.judgeSender(theirs, false)).toMatchObject({ lost: false });
      // Silent, but not yet for the window (two heartbeats, 300 ms): asked again later.
      expect(await quickB.judgeSender(theirs, false)).toMatchObject({ lost: false });
      // Silent for the window: given up, and its answer refused from then on.
      await later();
      expect(await quickB.judgeSender(theirs, false)).toEqual({ lost: true });
      await expect(quickA.storeReply(mine, 'late answer', false)).rejects.toEqual(
        new JobInterruptedError('lost'),
      );
      const [row] = await db.query<{ agent_reply: string | null }>('SELECT agent_reply FROM inbox');
      expect(row?.agent_reply).toBeNull();
      // Whoever takes the job next knows at once: it only tells the thread.
      await db.query(`UPDATE inbox SET lease_until = now() - interval '1 second'`);
      expect(((await b.claim(1)) as [ClaimedJob])[0]).toMatchObject({ answerLost: true });
    });

    it('keeps an answer recorded by a slow former owner for the new one, and clears all text when done', async () => {
      const { db, a, b } = await fresh();
      await a.admit(message('t1', '1'), NO_LIMITS);
      const [mine] = (await a.claim(1)) as [ClaimedJob];
      await a.markSent(mine, 's-1');
      await db.query(`UPDATE inbox SET lease_until = now() - interval '1 second'`);
      const [theirs] = (await b.claim(1)) as [ClaimedJob];
      // Kept for the new owner; the slow former owner is told it may not post it.
      await expect(a.storeReply(mine, 'late answer', false)).rejects.toEqual(new JobInterruptedError('lost'));
      const [row] = await db.query<{ agent_reply: string }>('SELECT agent_reply FROM inbox WHERE id = $1', [
        theirs.id,
      ]);
      expect(row?.agent_reply).toBe('late answer');
      await b.finish(theirs);
      const [done] = await db.query<{ agent_reply: string | null; payload: string; state: string }>(
        'SELECT agent_reply, payload, state FROM inbox WHERE id = $1',
        [theirs.id],
      );
      expect(done).toEqual({ agent_reply: null, payload: '{}', state: 'done' });
      expect(await wasSent('t1:1')).toBe(true);
    });

    it('lets no other replica take a job whose owner, back from a store outage past its lease, may still post', async () => {
      const { db, a, b } = await fresh();
      await a.admit(message('t1', '1'), NO_LIMITS);
      const [mine] = (await a.claim(1)) as [ClaimedJob];
      await a.markSent(mine, 's-1');
      const lapse = () => db.query(`UPDATE inbox SET lease_until = now() - interval '1 second'`);
      // The store was away longer than the lease: none of a's heartbeats landed.
      await lapse();
      // Back, a records its answer before b's claim pass comes, so it goes on to post it: b must not take the
      // job and post it too.
      await a.storeReply(mine, 'the answer', false);
      expect(await b.claim(1)).toEqual([]);
      // So with the check before each post.
      await lapse();
      await a.assertWanted(mine);
      expect(await b.claim(1)).toEqual([]);
      // Taken over before a asked: a may no longer post.
      await lapse();
      expect(await b.claim(1)).toHaveLength(1);
      await expect(a.assertWanted(mine)).rejects.toEqual(new JobInterruptedError('lost'));
    });

    it("records the thread's activity with the prompt's \"sent\", only while the job is this owner's", async () => {
      const { db, a, b } = await fresh();
      const thread = { teamId: 'T1', channelId: 'C1', threadTs: '1.0', agentId: 'agent' };
      const key = activityRowKey(thread);
      const activeAt = async () => {
        const [row] = await db.query<{ at: Date | string }>(
          'SELECT last_active_at AS at FROM session_activity WHERE key = $1',
          [key],
        );
        return new Date(row?.at ?? 0).getTime();
      };
      await db.query(
        `INSERT INTO session_activity (key, team_id, channel_id, thread_ts, agent_id, started_by, last_active_at)
         VALUES ($1, 'T1', 'C1', '1.0', 'agent', 'U1', now() - interval '1 day')`,
        [key],
      );
      const dayAgo = await activeAt();
      await a.admit(message('t1', '1'), NO_LIMITS);
      const [first] = (await a.claim(1)) as [ClaimedJob];
      expect(await a.markSent(first, 's-1', key)).toBe(true);
      const sentAt = await activeAt();
      expect(sentAt).toBeGreaterThan(dayAgo + 60_000);
      expect(await wasSent('t1:1')).toBe(true);

      // A job taken over meanwhile: neither "sent" nor the activity lands.
      await a.finish(first);
      await a.admit(message('t1', '2'), NO_LIMITS);
      const [second] = (await a.claim(1)) as [ClaimedJob];
      await db.query(`UPDATE inbox SET lease_until = now() - interval '1 second'`);
      await b.claim(1);
      await db.query(`UPDATE session_activity SET last_active_at = now() - interval '1 day'`);
      await expect(a.markSent(second, 's-1', key)).rejects.toBeInstanceOf(JobInterruptedError);
      expect(await activeAt()).toBeLessThan(sentAt - 60_000);
      expect(await wasSent('t1:2')).toBe(false);

      // A row the previous release left incomplete is not counted as recorded: the caller rebuilds it.
      await db.query('UPDATE session_activity SET team_id = NULL');
      await a.admit(message('t2', '1'), NO_LIMITS);
      const [third] = (await a.claim(1)) as [ClaimedJob];
      expect(await a.markSent(third, 's-2', key)).toBe(false);
      expect(await wasSent('t2:1')).toBe(true);
    });

    it("stops only the stopper's own work, once per request, in one transaction", async () => {
      const { db, a } = await fresh();
      await a.admit(message('t1', '1', 'U-ALICE'), NO_LIMITS);
      await a.admit(message('t1', '2', 'U-ALICE'), NO_LIMITS);
      await a.admit(message('t1', '3', 'U-BOB'), NO_LIMITS);
      const [running] = (await a.claim(1)) as [ClaimedJob];
      const request = { teamId: 'T', channelId: 'C', ts: 'stop-1' };
      const bob = await a.stop('t1', 'U-BOB', { ...request, ts: 'stop-bob' });
      // Alice's message is still being answered: Bob's stop leaves work going on in the thread.
      expect(bob).toMatchObject({ first: true, stoppedWork: 'none', othersGoOn: true });
      expect(bob.cancelled).toEqual([{ text: 'prompt 3' }]);
      const alice = await a.stop('t1', 'U-ALICE', request);
      expect(alice).toMatchObject({
        first: true,
        stoppedWork: 'unsent',
        cancelled: [{ text: 'prompt 2' }],
        othersGoOn: false,
      });
      expect(await a.stop('t1', 'U-ALICE', request)).toEqual({
        first: false,
        cancelled: [],
        stoppedWork: 'none',
        othersGoOn: false,
      });
      // An answer that comes after the stop is neither kept nor posted.
      await expect(a.storeReply(running, 'not wanted any more', false)).rejects.toEqual(
        new JobInterruptedError('stopped'),
      );
      const [row] = await db.query<{ agent_reply: string | null }>(
        'SELECT agent_reply FROM inbox WHERE id = $1',
        [running.id],
      );
      expect(row?.agent_reply).toBeNull();
    });

    it('says whether the stopped prompt had left; one that had not is never sent', async () => {
      const { a } = await fresh();
      await a.admit(message('t1', '1', 'U-ALICE'), NO_LIMITS);
      await a.admit(message('t2', '1', 'U-ALICE'), NO_LIMITS);
      const [first, second] = (await a.claim(2)) as [ClaimedJob, ClaimedJob];
      await a.markSent(first, 's-1');
      const request = { teamId: 'T', channelId: 'C', ts: 'stop-1' };
      expect(await a.stop('t1', 'U-ALICE', request)).toMatchObject({ stoppedWork: 'sent' });
      expect(await a.stop('t2', 'U-ALICE', { ...request, ts: 'stop-2' })).toMatchObject({
        stoppedWork: 'unsent',
      });
      // A prompt the service refused unrun (its session was gone) is not sent after all.
      await a.admit(message('t4', '1', 'U-ALICE'), NO_LIMITS);
      const [fourth] = (await a.claim(1)) as [ClaimedJob];
      await a.markSent(fourth, 's-lost');
      await a.markUnsent(fourth);
      expect(await wasSent('t4:1')).toBe(false);
      expect(await a.stop('t4', 'U-ALICE', { ...request, ts: 'stop-4' })).toMatchObject({
        stoppedWork: 'unsent',
      });
      // An answer partly posted: the rest of it is what the stop drops.
      await a.admit(message('t3', '1', 'U-ALICE'), NO_LIMITS);
      const [third] = (await a.claim(1)) as [ClaimedJob];
      await a.markSent(third, 's-3');
      await a.storeReply(third, 'a long answer', false);
      await a.markPartsPosted(third, 1);
      expect(await a.stop('t3', 'U-ALICE', { ...request, ts: 'stop-3' })).toMatchObject({
        stoppedWork: 'partly-posted',
      });
      await expect(a.markSent(second, 's-2')).rejects.toEqual(new JobInterruptedError('stopped'));
      expect(await wasSent('t2:1')).toBe(false);
    });

    it('stops a sent job put back to wait (Slack refusing its post): its answer is not kept, it runs at once', async () => {
      const { db, a } = await fresh();
      await a.admit(message('t1', '1', 'U-ALICE'), NO_LIMITS);
      const [job] = (await a.claim(1)) as [ClaimedJob];
      await a.markSent(job, 's-1');
      await a.defer(job, 60_000, true);
      const request = { teamId: 'T', channelId: 'C', ts: 'stop-1' };
      expect(await a.stop('t1', 'U-ALICE', request)).toMatchObject({
        stoppedWork: 'sent',
        othersGoOn: false,
      });
      const [row] = await db.query<{ due: boolean }>(
        'SELECT run_after <= now() AS due FROM inbox WHERE id = $1',
        [job.id],
      );
      expect(row?.due).toBe(true);
      // The process that sent the prompt gets the answer late: it is not kept for the job's next run.
      await expect(a.storeReply(job, 'not wanted any more', false)).rejects.toBeInstanceOf(
        JobInterruptedError,
      );
      const [after] = await db.query<{ agent_reply: string | null }>(
        'SELECT agent_reply FROM inbox WHERE id = $1',
        [job.id],
      );
      expect(after?.agent_reply).toBeNull();
    });

    it('records a reset once, behind the answer in progress, cancelling what waits', async () => {
      const { db, a } = await fresh();
      await a.admit(message('t1', '1'), NO_LIMITS);
      await a.admit(message('t1', '2'), NO_LIMITS);
      await a.claim(1);
      const reset = {
        threadKey: 't1',
        dedupeKey: 't1:r:reset',
        kind: 'reset' as const,
        payload: {},
        userId: 'U1',
      };
      expect(await a.enqueueReset(reset, { noSession: false })).toEqual({
        outcome: 'queued',
        cancelled: [{ text: 'prompt 2' }],
      });
      await a.admit(message('t1', '3'), NO_LIMITS);
      // A retry cancels nothing more.
      expect(await a.enqueueReset(reset, { noSession: false })).toEqual({
        outcome: 'duplicate',
        cancelled: [],
      });
      const states = await db.query<{ dedupe_key: string; state: string }>(
        'SELECT dedupe_key, state FROM inbox ORDER BY id',
      );
      expect(states).toEqual([
        { dedupe_key: 't1:1', state: 'running' },
        { dedupe_key: 't1:2', state: 'cancelled' },
        { dedupe_key: 't1:r:reset', state: 'pending' },
        { dedupe_key: 't1:3', state: 'pending' },
      ]);
    });

    it('gives a waiting message its edited words, and cancels the open work of a closed channel', async () => {
      const { a } = await fresh();
      await a.admit(message('T:C1:1', '1'), NO_LIMITS);
      await a.admit(message('T:C1:1', '2'), NO_LIMITS);
      await a.admit(message('T:C2:1', '1'), NO_LIMITS);
      const [running] = (await a.claim(1)) as [ClaimedJob];
      expect(await a.editMessage('T:C1:1:1', () => ({ text: 'too late' }))).toBe('sending');
      await a.markSent(running, 's-1');
      expect(await a.editMessage('T:C1:1:1', () => ({ text: 'too late' }))).toBe('sent');
      expect(await a.editMessage('T:C1:1:2', () => ({ text: 'edited' }))).toBe('replaced');
      expect(await a.editMessage('T:C1:1:9', () => ({ text: 'never relayed' }))).toBe('none');
      expect(await a.counts()).toEqual({ pending: 2, running: 1 });
      expect(await a.cancelOpenWithPrefix('T:C1:')).toBe(2);
      expect(await a.counts()).toEqual({ pending: 1, running: 0 });
    });

    it('cancels one waiting message whose Slack message was deleted, never one already started', async () => {
      const { a } = await fresh();
      await a.admit(message('T:C1:1', '1'), NO_LIMITS);
      await a.admit(message('T:C1:1', '2'), NO_LIMITS);
      await a.claim(1);
      expect(await a.cancelWaitingMessage('T:C1:1:1')).toBeUndefined();
      expect(await a.cancelWaitingMessage('T:C1:1:2')).toEqual({ text: 'prompt 2' });
      expect(await a.cancelWaitingMessage('T:C1:1:2')).toBeUndefined();
      expect(await a.counts()).toEqual({ pending: 0, running: 1 });
    });

    it('forgets finished jobs past the horizon, a backlog batch by batch, and keeps the rest', async () => {
      const { db, a } = await fresh();
      await db.query(
        `INSERT INTO inbox (thread_key, dedupe_key, kind, payload, state, finished_at)
         SELECT 'old', 'old:' || i, 'message', '{}', 'done', now() - interval '8 days'
         FROM generate_series(1, 23) AS i`,
      );
      await a.admit(message('t1', '1'), NO_LIMITS);
      const [job] = await a.claim(1);
      await a.finish(job as ClaimedJob);
      await a.admit(message('t1', '2'), NO_LIMITS);
      // Batches of 5: all 23 go, whatever the batch size, and nothing younger does.
      expect(await a.prune(7, 5)).toBe(23);
      expect(await db.query('SELECT dedupe_key, state FROM inbox ORDER BY id')).toEqual([
        { dedupe_key: 't1:1', state: 'done' },
        { dedupe_key: 't1:2', state: 'pending' },
      ]);
      expect(await a.prune(7, 5)).toBe(0);
    });
  });
}

inboxContract('inbox on the embedded store', embeddedStorePerSuite);

/** Statements of the observer's database waiting on a lock (pg_stat_activity, read once per transaction). */
async function lockWaitersSeenBy(observer: pg.Client): Promise<number> {
  const { rows } = await observer.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
  );
  return Number(rows[0]?.n);
}

describe.runIf(runPostgres)('PostgreSQL', () => {
  const databases: TestDatabase[] = [];
  afterAll(async () => {
    await Promise.all(databases.map((database) => database.drop()));
  });

  /**
   * A fresh migrated database for `work`, with two connections of its own besides the store's pool: one to hold
   * locks, one to watch who waits for them (pg_stat_activity is read once per transaction, so the holder's own
   * would not see the waiters change).
   */
  /** `isolation`: the database's default transaction isolation for the bot's connections (reset after). */
  async function withLockingClients<T>(
    work: (clients: { db: Database; holder: pg.Client; observer: pg.Client }) => Promise<T>,
    isolation?: 'repeatable read',
  ): Promise<T> {
    const database = await createTestDatabase();
    databases.push(database);
    const name = new URL(database.url).pathname.slice(1);
    const holder = new pg.Client({ connectionString: database.url });
    const observer = new pg.Client({ connectionString: database.url });
    await Promise.all([holder.connect(), observer.connect()]);
    if (isolation)
      await observer.query(`ALTER DATABASE ${name} SET default_transaction_isolation = '${isolation}'`);
    const db = await openDatabase({ kind: 'postgres', databaseUrl: database.url, poolSize: 4 });
    try {
      await migrate(db);
      return await work({ db, holder, observer });
    } finally {
      // The database may be reused by another test.
      if (isolation) await observer.query(`ALTER DATABASE ${name} RESET default_transaction_isolation`);
      await Promise.all([holder.end().catch(() => {}), observer.end().catch(() => {})]);
      await db.close();
    }
  }

  inboxContract('inbox on PostgreSQL', postgresStorePerSuite);

  it("finds each thread's turn with one look at the thread, in a flood the planner's statistics have not seen", async () => {
    const database = await createTestDatabase();
    databases.push(database);
    // One connection: the statistics read below are the ones its statements leave.
    const db = await openDatabase({ kind: 'postgres', databaseUrl: database.url, poolSize: 1 });
    try {
      await migrate(db);
      // A new database flooded with new threads before autovacuum analysed the table: the planner believes
      // there are next to no open jobs (at about a thousand it chose to walk the open jobs by id).
      await db.query('ALTER TABLE inbox SET (autovacuum_enabled = false)');
      const open = 1_000;
      await db.query(
        `INSERT INTO inbox (thread_key, dedupe_key, kind, payload)
         SELECT 'T1:C1:' || g, 'T1:C1:' || g || ':message', 'message', '{}' FROM generate_series(1, $1::int) g`,
        [open],
      );
      /** Index entries the inbox's statements have read so far. */
      const entriesRead = async () => {
        await db.query('SELECT pg_stat_force_next_flush()');
        const [row] = await db.query<{ n: string }>(
          `SELECT sum(idx_tup_read) AS n FROM pg_stat_user_indexes WHERE relname = 'inbox'`,
        );
        return Number(row?.n ?? 0);
      };
      const a = new Inbox(db, 'replica-a', LEASE_MS);
      const before = await entriesRead();
      const claimed = await a.claim(50);
      expect(claimed.map((job) => job.dedupeKey)).toEqual(
        Array.from({ length: 50 }, (_, i) => `T1:C1:${i + 1}:message`),
      );
      // A later message of a thread under way: the thread's open jobs, counted afresh, say it waits.
      const later = await a.admit(message('T1:C1:1', 'later'), NO_LIMITS, true);
      expect(later).toEqual({ outcome: 'inserted', queued: true });
      // A look at each open job's thread: a few entries per job. Walking every older open job for each one
      // read about half a million here.
      expect((await entriesRead()) - before).toBeLessThan(open * 5);
    } finally {
      await db.close();
    }
  });

  /**
   * Another transaction holds an uncommitted row with the key of t1's first message, as a concurrent delivery
   * of it would: recording that message then waits for it, holding the thread's lock, until ROLLBACK.
   */
  async function holdFirstMessagesKey(holder: pg.Client): Promise<void> {
    await holder.query('BEGIN');
    await holder.query(
      `INSERT INTO inbox (thread_key, dedupe_key, kind, payload) VALUES ('elsewhere', 't1:1', 'message', '{}')`,
    );
  }

  it("never hands out a thread's later message while an earlier one is still being recorded", async () => {
    // Sequence numbers are taken when a row is inserted, but rows become visible when they commit: a
    // message numbered first may become visible last. Here the first message's recording is held after it
    // took its number: another transaction holds an uncommitted row with its key (as a concurrent delivery
    // of the same message would), while a second message of the same thread is recorded by another replica.
    await withLockingClients(async ({ db, holder, observer }) => {
      const a = new Inbox(db, 'replica-a', LEASE_MS);
      const b = new Inbox(db, 'replica-b', LEASE_MS);
      const lockWaiters = () => lockWaitersSeenBy(observer);
      await holdFirstMessagesKey(holder);
      const first = a.admit(message('t1', '1'), NO_LIMITS);
      await waitFor(async () => (await lockWaiters()) === 1, 'the first message held mid-recording');
      let secondRecorded = false;
      const second = b.admit(message('t1', '2'), NO_LIMITS).then((result) => {
        secondRecorded = true;
        return result;
      });
      await waitFor(async () => secondRecorded || (await lockWaiters()) === 2, 'the second message sent');

      // Whatever is visible now, no message of t1 may start: the first one is not visible yet.
      const meanwhile = await b.claim(10);
      await holder.query('ROLLBACK');
      expect((await first).outcome).toBe('inserted');
      expect((await second).outcome).toBe('inserted');
      expect(meanwhile.map((job) => job.dedupeKey)).toEqual([]);
      const [turn] = await a.claim(10);
      expect(turn?.dedupeKey).toBe('t1:1');
      expect(await b.claim(10)).toEqual([]);
    });
  });

  type Admitted = Awaited<ReturnType<Inbox['admit']>>;

  /**
   * Both messages of a thread recorded by processes that have room, the first held mid-recording (another
   * transaction holds a row with its key) while the second waits for the thread's lock: the second statement's
   * snapshot is taken before the first message commits.
   */
  async function recordBothWhileTheFirstIsHeld(clients: {
    db: Database;
    holder: pg.Client;
    observer: pg.Client;
  }): Promise<{ a: Inbox; b: Inbox; earlier: Admitted; later: Admitted }> {
    const { db, holder, observer } = clients;
    const a = new Inbox(db, 'replica-a', LEASE_MS);
    const b = new Inbox(db, 'replica-b', LEASE_MS);
    const lockWaiters = () => lockWaitersSeenBy(observer);
    await holdFirstMessagesKey(holder);
    const first = a.admit(message('t1', '1'), NO_LIMITS, true);
    await waitFor(async () => (await lockWaiters()) === 1, 'the first message held mid-recording');
    const second = b.admit(message('t1', '2'), NO_LIMITS, true);
    await waitFor(async () => (await lockWaiters()) === 2, 'the second message waiting for its turn');
    await holder.query('ROLLBACK');
    return { a, b, earlier: await first, later: await second };
  }

  it('records a later message waiting, not claimed, while an earlier one of its thread is being recorded', async () => {
    // It must still see the first message once it has the thread's turn, or both would start at once.
    await withLockingClients(async (clients) => {
      const { a, b, earlier, later } = await recordBothWhileTheFirstIsHeld(clients);
      expect(earlier.claimed?.dedupeKey).toBe('t1:1');
      expect(later).toMatchObject({ outcome: 'inserted', queued: true });
      expect(later.claimed).toBeUndefined();
      expect(await b.claim(10)).toEqual([]);
      await a.finish(earlier.claimed as ClaimedJob);
      expect((await b.claim(10)).map((job) => job.dedupeKey)).toEqual(['t1:2']);
    });
  });

  it('claims nothing as it records it where the database reads everything as of a transaction start', async () => {
    // A database whose default isolation its administrator set to REPEATABLE READ: nothing in the statement
    // can be read afresh, so the thread's open jobs cannot be counted as they are. Claim passes take them.
    await withLockingClients(async (clients) => {
      const { b, earlier, later } = await recordBothWhileTheFirstIsHeld(clients);
      expect([earlier.outcome, later.outcome]).toEqual(['inserted', 'inserted']);
      expect([earlier.claimed, later.claimed]).toEqual([undefined, undefined]);
      const [turn] = await b.claim(10);
      expect(turn?.dedupeKey).toBe('t1:1');
      expect(await b.claim(10, [turn?.id ?? 0])).toEqual([]);
    }, 'repeatable read');
  });

  describe('an answer recorded while another transaction holds its job', () => {
    // The recording waits for the other transaction's row lock; what it then says about the job must be the
    // job as that transaction left it, or the answer is posted by a process that may no longer post it.
    function recordWhileHeld(change: string) {
      return withLockingClients(async ({ db, holder, observer }) => {
        const a = new Inbox(db, 'replica-a', LEASE_MS);
        await a.admit(message('t1', '1'), NO_LIMITS);
        const [job] = (await a.claim(1)) as [ClaimedJob];
        await a.markSent(job, 's-1');
        await holder.query('BEGIN');
        await holder.query(`UPDATE inbox SET ${change} WHERE id = $1`, [job.id]);
        const recorded = a.storeReply(job, 'the answer', false).then(
          () => 'may post',
          (error: unknown) => error,
        );
        await waitFor(
          async () => (await lockWaitersSeenBy(observer)) === 1,
          'the answer waiting on the lock',
        );
        await holder.query('COMMIT');
        const verdict = await recorded;
        const [row] = await db.query<{ agent_reply: string | null }>('SELECT agent_reply FROM inbox');
        return { verdict, kept: row?.agent_reply ?? null };
      });
    }

    it('is not posted once its author stopped the job meanwhile', async () => {
      expect(await recordWhileHeld('stop_requested = true')).toEqual({
        verdict: new JobInterruptedError('stopped'),
        kept: null,
      });
    });

    it('is kept for the replica that took the job over meanwhile, and not posted by this one', async () => {
      expect(
        await recordWhileHeld(
          `owner = 'replica-b', attempts = attempts + 1, lease_until = now() + interval '1 minute'`,
        ),
      ).toEqual({ verdict: new JobInterruptedError('lost'), kept: 'the answer' });
    });
  });
});
