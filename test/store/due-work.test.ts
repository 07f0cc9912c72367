import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { DueWork, type DueWorkOptions, rowRetryDelayMs } from '../../src/store/due-work.js';
import { embeddedStorePerSuite } from '../helpers/embedded-store.js';
import { LogCapture } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

interface Row {
  id: number;
}

describe('DueWork', () => {
  const store = embeddedStorePerSuite();
  let logs: LogCapture;
  const running: DueWork<Row>[] = [];

  beforeEach(async () => {
    logs = new LogCapture();
    await store.db.query(`CREATE TABLE IF NOT EXISTS due_test (
      id int PRIMARY KEY, next_attempt_at timestamptz NOT NULL DEFAULT now(), done_at timestamptz)`);
    await store.db.query('TRUNCATE due_test');
  });
  afterEach(async () => {
    vi.useRealTimers();
    await Promise.all(running.splice(0).map((work) => work.stop()));
  });

  const add = (ids: number[], dueIn = '0 seconds') =>
    store.db.query(
      `INSERT INTO due_test (id, next_attempt_at) SELECT id, now() + $2::interval FROM unnest($1::int[]) AS id`,
      [ids, dueIn],
    );
  const markDone = (rows: Row[]) =>
    store.db.query('UPDATE due_test SET done_at = now() WHERE id = ANY($1::int[])', [
      rows.map((row) => row.id),
    ]);

  function dueWork(work: (rows: Row[]) => Promise<void>, options: Partial<DueWorkOptions<Row>> = {}) {
    const due = new DueWork<Row>(store.db, createLogger({ level: 'warn', secrets: [], destination: logs }), {
      claimSql: `UPDATE due_test SET next_attempt_at = now() + make_interval(secs => $1)
        WHERE id IN (SELECT id FROM due_test WHERE done_at IS NULL AND next_attempt_at <= now()
                     ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      batch: 2,
      pendingSql: 'SELECT count(*) AS count FROM due_test WHERE done_at IS NULL',
      work,
      pollMs: 60_000,
      passFailed: 'test pass failed; will retry',
      ...options,
    });
    running.push(due);
    return due;
  }

  it('works the rows already due at start, a batch at a time, and leaves the rest for later', async () => {
    await add([1, 2, 3, 4, 5]);
    await add([6], '1 hour');
    const batches: number[][] = [];
    const due = dueWork(async (rows) => {
      batches.push(rows.map((row) => row.id).sort());
      await markDone(rows);
    });
    expect(await due.pendingCount()).toBe(6);
    due.start();
    await waitFor(async () => (await due.pendingCount()) === 1, 'the due rows worked');
    expect(batches).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('looks again every pollMs, for rows added without a kick', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const worked: number[] = [];
    const due = dueWork(async (rows) => {
      worked.push(...rows.map((row) => row.id));
      await markDone(rows);
    });
    due.start();
    await add([1]);
    due.kick();
    await waitFor(() => worked.includes(1), 'the row of the kick');
    await add([2]);
    vi.advanceTimersByTime(59_999);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(worked).toEqual([1]);
    vi.advanceTimersByTime(1);
    await waitFor(() => worked.includes(2), 'the row found by the poll');
  });

  it('ends a pass at the batch in progress when stopped, and starts none after', async () => {
    await add([1, 2, 3, 4]);
    let release = () => {};
    const worked: number[] = [];
    const due = dueWork(async (rows) => {
      worked.push(...rows.map((row) => row.id));
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      await markDone(rows);
    });
    due.start();
    await waitFor(() => worked.length > 0, 'the first batch under way');
    const stopped = due.stop();
    release();
    await stopped;
    due.kick();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(worked).toEqual([1, 2]);
    expect(await due.pendingCount()).toBe(2);
  });

  it('logs a failed pass and tries again at the next kick', async () => {
    await add([1]);
    let fail = true;
    const due = dueWork(async (rows) => {
      if (fail) throw new Error('agent service down');
      await markDone(rows);
    });
    due.start();
    await waitFor(
      () => logs.lines.some((line) => line.includes('test pass failed; will retry')),
      'the warning',
    );
    expect(logs.text).toContain('agent service down');
    fail = false;
    // The failed row was claimed for a while: due again, as its next attempt would set it.
    await store.db.query('UPDATE due_test SET next_attempt_at = now()');
    due.kick();
    await waitFor(async () => (await due.pendingCount()) === 0, 'the row worked on the next kick');
  });
});

describe('rowRetryDelayMs', () => {
  it('doubles from the base for each failed attempt, never waiting more than 15 minutes', () => {
    expect([1, 2, 3].map((attempts) => rowRetryDelayMs(attempts, 5_000))).toEqual([5_000, 10_000, 20_000]);
    // 5 s doubled 7 times is 640 s; 8 times would be 1,280 s.
    expect(rowRetryDelayMs(8, 5_000)).toBe(640_000);
    expect(rowRetryDelayMs(9, 5_000)).toBe(15 * 60_000);
    expect(rowRetryDelayMs(10_000, 5_000)).toBe(15 * 60_000);
  });
});
