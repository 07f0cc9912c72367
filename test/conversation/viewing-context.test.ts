import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ViewingContext } from '../../src/conversation/viewing-context.js';
import { type Database, openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/schema.js';
import { freshDataDir, type TempDataDir } from '../helpers/embedded-store.js';

describe('the channel a person views in the Messages tab', () => {
  let dir: TempDataDir;
  let db: Database;
  beforeAll(async () => {
    dir = await freshDataDir();
    db = await openDatabase({ kind: 'embedded', dataDir: dir.path });
    await migrate(db);
  });
  afterAll(async () => {
    await db.close();
    await dir.remove();
  });

  it('is told once per change, and forgotten a day after it was last reported', async () => {
    const viewing = new ViewingContext(db);
    const key = { teamId: 'T1', dmChannel: 'D1', userId: 'U1' };
    await viewing.record(key, 'C1');
    expect(await viewing.takeChange(key)).toBe('C1');
    expect(await viewing.takeChange(key)).toBeUndefined();
    await viewing.record(key, 'C1');
    expect(await viewing.takeChange(key)).toBeUndefined();
    await viewing.record(key, 'C2');
    expect(await viewing.takeChange(key)).toBe('C2');

    expect(await viewing.prune()).toBe(0);
    await db.query(`UPDATE viewing_context SET updated_at = now() - interval '25 hours'`);
    expect(await viewing.prune()).toBe(1);
    expect(await db.query('SELECT 1 FROM viewing_context')).toEqual([]);
  });
});
