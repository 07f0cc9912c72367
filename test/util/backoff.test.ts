import { describe, expect, it } from 'vitest';
import { backoffMs, retryDelayMs, withJitter } from '../../src/util/backoff.js';

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

describe('retryDelayMs', () => {
  const low = () => 0;
  const high = () => 1;

  it('is the jittered back-off when the server gave no Retry-After', () => {
    expect(retryDelayMs({ attempt: 3, baseMs: 1_000, random: low })).toBe(2_000);
    expect(retryDelayMs({ attempt: 3, baseMs: 1_000, random: high })).toBe(4_000);
    expect(retryDelayMs({ attempt: 9, baseMs: 1_000, maxMs: 60_000, random: high })).toBe(60_000);
  });

  it("never retries sooner than the server's Retry-After, even past the back-off's maximum", () => {
    expect(
      retryDelayMs({ attempt: 1, baseMs: 1_000, maxMs: 60_000, retryAfterMs: 90_000, random: high }),
    ).toBe(90_000);
    expect(retryDelayMs({ attempt: 1, baseMs: 500, retryAfterMs: 0, random: low })).toBe(250);
  });

  it('waits the back-off when the Retry-After is shorter', () => {
    expect(retryDelayMs({ attempt: 4, baseMs: 1_000, retryAfterMs: 1_000, random: low })).toBe(4_000);
  });

  it('waits no longer than the cap, Retry-After included', () => {
    expect(retryDelayMs({ attempt: 1, baseMs: 1, maxMs: 60, retryAfterMs: 30_000, capMs: 60 })).toBe(60);
    expect(retryDelayMs({ attempt: 20, baseMs: 200, maxMs: 5_000, capMs: 5_000, random: high })).toBe(5_000);
  });
});
