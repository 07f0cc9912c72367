import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { holdDelay, persist, storeRetryDelays } from '../../src/inbox/store-retry.js';
import { StoreError } from '../../src/store/database.js';

/** A write that fails with a store error `failures` times, then lands. */
function flakyWrite(failures: number) {
  let calls = 0;
  const write = async () => {
    calls++;
    if (calls <= failures) throw new StoreError('connection lost');
    return 'landed';
  };
  return { write, calls: () => calls };
}

describe('persist', () => {
  it('rides out a short store outage', async () => {
    const short = flakyWrite(2);
    expect(await persist(short.write)).toBe('landed');
    expect(short.calls()).toBe(3);
  });

  it('rethrows at once what is not a store error', async () => {
    let calls = 0;
    const bug = async () => {
      calls++;
      throw new TypeError('bug');
    };
    await expect(persist(bug)).rejects.toThrow(TypeError);
    expect(calls).toBe(1);
  });

  it('holds a write for as long as asked, then gives it up', async () => {
    const held = flakyWrite(Number.POSITIVE_INFINITY);
    const started = Date.now();
    await expect(persist(held.write, { forMs: 300 })).rejects.toThrow(StoreError);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(held.calls()).toBeGreaterThanOrEqual(2);
  });

  it('lets a held write go once the process stops waiting', async () => {
    const held = flakyWrite(Number.POSITIVE_INFINITY);
    const abort = new AbortController();
    const given = persist(held.write, { forMs: 60_000, signal: abort.signal });
    await sleep(100);
    abort.abort();
    const started = Date.now();
    await expect(given).rejects.toThrow(StoreError);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe('holdDelay', () => {
  it('retries soon, then every second, never past the deadline', () => {
    const now = Date.now();
    expect(holdDelay(0, now + 60_000)).toBe(250);
    expect(holdDelay(2, now + 60_000)).toBe(1_000);
    expect(holdDelay(9, now + 60_000)).toBe(1_000);
    expect(holdDelay(0, now + 100)).toBeLessThanOrEqual(100);
    expect(holdDelay(9, now - 1)).toBeUndefined();
  });
});

describe('storeRetryDelays', () => {
  it('doubles from 250 ms to 4 s while the waits fit the budget: 20 s gives the default waits', () => {
    expect(storeRetryDelays(20_000)).toEqual([250, 500, 1_000, 2_000, 4_000, 4_000, 4_000, 4_000]);
    expect(storeRetryDelays(2_000)).toEqual([250, 500, 1_000]);
    expect(storeRetryDelays(0)).toEqual([]);
  });
});
