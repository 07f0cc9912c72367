import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Housekeeping } from '../../src/app/housekeeping.js';

describe('Housekeeping', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('prunes at start and then every interval, every pruner each time, until stopped', async () => {
    const runs: string[] = [];
    const housekeeping = new Housekeeping(
      [async () => runs.push('claims'), async () => runs.push('inbox')],
      { warn: () => {} },
      1_000,
    );
    housekeeping.start();
    expect(runs).toEqual(['claims', 'inbox']);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(runs).toHaveLength(6);
    housekeeping.stop();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runs).toHaveLength(6);
  });

  it('logs a failed pass, never rejects, and tries again at the next interval', async () => {
    const warnings: string[] = [];
    let calls = 0;
    const housekeeping = new Housekeeping(
      [
        async () => {
          calls += 1;
          throw new Error('store down');
        },
      ],
      { warn: (...args: unknown[]) => void warnings.push(String(args[1])) },
      1_000,
    );
    housekeeping.start();
    await housekeeping.settled();
    expect(warnings).toEqual(['could not prune expired store rows']);
    await vi.advanceTimersByTimeAsync(1_000);
    await housekeeping.settled();
    expect(calls).toBe(2);
    housekeeping.stop();
  });

  it('lets a stop wait for the pass under way', async () => {
    let finish = () => {};
    const housekeeping = new Housekeeping(
      [() => new Promise<void>((resolve) => (finish = resolve))],
      { warn: () => {} },
      1_000,
    );
    housekeeping.start();
    housekeeping.stop();
    let settled = false;
    const waiting = housekeeping.settled().then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    finish();
    await waiting;
    expect(settled).toBe(true);
  });
});
