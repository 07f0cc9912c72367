import { describe, expect, it } from 'vitest';
import { backoffMs, withJitter } from '../../src/util/backoff.js';

describe('backoffMs', () => {
  it.each([
    [1, 1_000, 60_000, 1_000],
    [2, 1_000, 60_000, 2_000],
    [3, 1_000, 60_000, 4_000],
    [6, 1_000, 60_000, 32_000],
    [7, 1_000, 60_000, 60_000],
    [1_000, 1_000, 60_000, 60_000],
    [1, 500, Number.POSITIVE_INFINITY, 500],
    [3, 500, Number.POSITIVE_INFINITY, 2_000],
    [0, 500, Number.POSITIVE_INFINITY, 500],
  ])('attempt %i from %i ms, at most %i ms: %i ms', (attempt, base, max, expected) => {
    expect(backoffMs(attempt, base, max)).toBe(expected);
  });

  it('stays finite however many attempts were made', () => {
    expect(backoffMs(10_000, 1_000)).toBe(1_000 * 2 ** 30);
  });
});

describe('withJitter', () => {
  it.each([
    [0, 5_000],
    [0.5, 7_500],
    [1, 10_000],
  ])('with random %d a ceiling of 10 s waits %i ms', (random, expected) => {
    expect(withJitter(10_000, () => random)).toBe(expected);
  });
});
