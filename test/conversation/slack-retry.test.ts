import { describe, expect, it } from 'vitest';
import { slackFailingForMs, slackRetryDelayMs } from '../../src/conversation/slack-retry.js';

describe('slackFailingForMs', () => {
  it('is 0 on the first refusal, then the time since the first', () => {
    expect(slackFailingForMs({}, 5_000)).toBe(0);
    expect(slackFailingForMs({ slackFailingSince: new Date(1_000) }, 5_000)).toBe(4_000);
  });
});

describe('slackRetryDelayMs', () => {
  it('doubles per attempt, jittered into the upper half, up to a minute', () => {
    const low = () => 0;
    const high = () => 1;
    expect(slackRetryDelayMs(1, undefined, low)).toBe(500);
    expect(slackRetryDelayMs(1, undefined, high)).toBe(1_000);
    expect(slackRetryDelayMs(3, undefined, high)).toBe(4_000);
    expect(slackRetryDelayMs(30, undefined, low)).toBe(30_000);
    expect(slackRetryDelayMs(30, undefined, high)).toBe(60_000);
  });

  it("waits at least as long as Slack's Retry-After", () => {
    expect(slackRetryDelayMs(1, 90_000, () => 1)).toBe(90_000);
    expect(slackRetryDelayMs(6, 10, () => 0)).toBe(16_000);
  });
});
