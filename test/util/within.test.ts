import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { within } from '../../src/util/within.js';

describe('within', () => {
  it("gives the work's value when it comes in time, and nothing once the bound has passed", async () => {
    expect(await within(Promise.resolve(7), 50)).toEqual({ value: 7 });
    const started = Date.now();
    expect(await within(sleep(1_000, 'late'), 50)).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('passes on a failure that comes in time, and swallows one that comes after the bound', async () => {
    await expect(within(Promise.reject(new Error('refused')), 50)).rejects.toThrow('refused');
    const failsLate = sleep(100).then(() => {
      throw new Error('too late to matter');
    });
    expect(await within(failsLate, 20)).toBeUndefined();
    // Were it unhandled, vitest would fail the run.
    await sleep(150);
  });
});
