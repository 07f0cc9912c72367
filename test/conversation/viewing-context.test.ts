import { describe, expect, it } from 'vitest';
import { ViewingContext } from '../../src/conversation/viewing-context.js';
import { embeddedStorePerSuite } from '../helpers/embedded-store.js';

describe('the channel a person views in the Messages tab', () => {
  const store = embeddedStorePerSuite();

  it('is told once per change, and forgotten a day after it was last reported', async () => {
    const viewing = new ViewingContext(store.db);
    const key = { teamId: 'T1', dmChannel: 'D1', userId: 'U1' };
    await viewing.record(key, 'C1');
    expect(await viewing.takeChange(key)).toBe('C1');
    expect(await viewing.takeChange(key)).toBeUndefined();
    await viewing.record(key, 'C1');
    expect(await viewing.takeChange(key)).toBeUndefined();
    await viewing.record(key, 'C2');
    expect(await viewing.takeChange(key)).toBe('C2');

    expect(await viewing.prune()).toBe(0);
    await store.db.query(`UPDATE viewing_context SET updated_at = now() - interval '25 hours'`);
    expect(await viewing.prune()).toBe(1);
    expect(await store.db.query('SELECT 1 FROM viewing_context')).toEqual([]);
  });
});
