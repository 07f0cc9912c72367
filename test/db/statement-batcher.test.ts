import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type SqlDatabase, StoreError } from '../../src/db/database.js';
import { createTestDatabase, shouldRunPostgresTests, type TestDatabase } from '../helpers/postgres.js';

const runPostgres = await shouldRunPostgresTests();

// Hundreds of statements at once: more than the lanes, so most of them travel in batches.
const BURST = 300;

describe.runIf(runPostgres)('statements issued together (group commit)', () => {
  let database: TestDatabase;
  let db: SqlDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = await openDatabase({ kind: 'postgres', databaseUrl: database.url });
    await db.query(
      'CREATE TABLE batch_probe (id int PRIMARY KEY, label text, tags text[], at timestamptz, flag boolean, doc jsonb)',
    );
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
  });

  const awkward = [
    "it's",
    'back\\slash \\x00 and $1 $$ dollars',
    'ünïcödé 🎉',
    "'; DROP TABLE batch_probe; --",
    '',
    'line\nbreak\ttab',
  ];

  it('gives every caller its own values back, exactly as sent, and writes them all', async () => {
    const at = new Date('2026-11-21T10:20:30.456Z');
    const results = await Promise.all(
      Array.from({ length: BURST }, (_, i) =>
        db.query<{ id: number; label: string | null; tags: string[]; at: Date; flag: boolean; doc: unknown }>(
          `INSERT INTO batch_probe (id, label, tags, at, flag, doc) VALUES ($1, $2, $3, $4, $5, $6)
           RETURNING id, label, tags, at, flag, doc`,
          [
            i,
            i % 7 === 0 ? null : `${awkward[i % awkward.length]} #${i}`,
            [`a,${i}`, 'quote"d', 'NULL'],
            at,
            i % 2 === 0,
            JSON.stringify({ n: i, s: awkward[i % awkward.length] }),
          ],
        ),
      ),
    );
    results.forEach(([row], i) => {
      expect(row).toEqual({
        id: i,
        label: i % 7 === 0 ? null : `${awkward[i % awkward.length]} #${i}`,
        tags: [`a,${i}`, 'quote"d', 'NULL'],
        at,
        flag: i % 2 === 0,
        doc: { n: i, s: awkward[i % awkward.length] },
      });
    });
    const [count] = await db.query<{ n: string }>(
      'SELECT count(*) AS n FROM batch_probe WHERE id >= $1',
      [0],
    );
    expect(Number(count?.n)).toBe(BURST);
  });

  it('commits a burst in fewer transactions than statements', async () => {
    const transactions = await Promise.all(
      Array.from({ length: BURST }, (_, i) =>
        db.query<{ xid: string }>(
          'UPDATE batch_probe SET flag = NOT flag WHERE id = $1 RETURNING pg_current_xact_id()::text AS xid',
          [i],
        ),
      ),
    );
    const distinct = new Set(transactions.map(([row]) => row?.xid));
    expect(distinct.size).toBeLessThan(BURST / 2);
  });

  it('fails only the statement that fails; the others in its batch still happen', async () => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: BURST }, (_, i) =>
        // Statement 150 collides with an existing key; the rest insert fresh rows.
        db.query('INSERT INTO batch_probe (id, label) VALUES ($1, $2) RETURNING id', [
          i === 150 ? 0 : 10_000 + i,
          `second wave ${i}`,
        ]),
      ),
    );
    const failed = outcomes.flatMap((outcome, i) => (outcome.status === 'rejected' ? [i] : []));
    expect(failed).toEqual([150]);
    const rejection = outcomes[150];
    expect(rejection?.status === 'rejected' && rejection.reason).toBeInstanceOf(StoreError);
    const [count] = await db.query<{ n: string }>(
      'SELECT count(*) AS n FROM batch_probe WHERE id >= $1',
      [10_000],
    );
    expect(Number(count?.n)).toBe(BURST - 1);
  });

  it('batches checkpoints too, still without waiting for the disk', async () => {
    const settings = await Promise.all(
      Array.from({ length: 50 }, () =>
        db.checkpoint<{ value: string }>('SELECT current_setting($1) AS value', ['synchronous_commit']),
      ),
    );
    expect(new Set(settings.map(([row]) => row?.value))).toEqual(new Set(['off']));
  });
});
