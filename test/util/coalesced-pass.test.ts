import { describe, expect, it } from 'vitest';
import { CoalescedPass } from '../../src/util/coalesced-pass.js';

/** A pass that waits until the test lets it finish, counting how often it ran. */
function controlledPass() {
  const finishers: (() => void)[] = [];
  let runs = 0;
  return {
    pass: () => {
      runs += 1;
      return new Promise<void>((resolve) => finishers.push(resolve));
    },
    finishCurrent: () => finishers.shift()?.(),
    runs: () => runs,
  };
}

describe('CoalescedPass', () => {
  it('runs one pass at a time and turns any number of kicks during it into exactly one more', async () => {
    const work = controlledPass();
    const coalesced = new CoalescedPass(work.pass, () => {});
    coalesced.kick();
    coalesced.kick();
    coalesced.kick();
    expect(work.runs()).toBe(1);

    work.finishCurrent();
    await new Promise((resolve) => setImmediate(resolve));
    expect(work.runs()).toBe(2);

    work.finishCurrent();
    await coalesced.settled();
    await new Promise((resolve) => setImmediate(resolve));
    expect(work.runs()).toBe(2);
  });

  it('hands a failed pass to onError and runs again on the next kick', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const coalesced = new CoalescedPass(
      async () => {
        runs += 1;
        if (runs === 1) throw new Error('store unreachable');
      },
      (error) => errors.push(error),
    );
    coalesced.kick();
    await coalesced.settled();
    expect(errors).toEqual([new Error('store unreachable')]);

    coalesced.kick();
    await coalesced.settled();
    expect(runs).toBe(2);
    expect(errors).toHaveLength(1);
  });
});
