import { describe, expect, it } from 'vitest';
import { queueFullNotice, rateLimitedText, refusalText } from '../../src/conversation/notices.js';
import { accessRefusalText, admissionRefusalText, MAX_OPEN_PER_THREAD } from '../../src/slack-in/refusals.js';

describe('refusals', () => {
  it.each([
    ['channel-not-allowed', refusalText('channel-not-allowed')],
    ['user-not-allowed', refusalText('user-not-allowed')],
    // A command from a workspace that is not served is refused as its person is.
    ['team-not-allowed', refusalText('user-not-allowed')],
  ] as const)('refuses %s with its sentence', (decision, text) => {
    expect(accessRefusalText(decision)).toBe(text);
  });

  it('refuses what the inbox did not admit: the per-minute limit, or a full thread', () => {
    expect(admissionRefusalText('rate-limited', 7)).toBe(rateLimitedText(7));
    expect(admissionRefusalText('thread-full', 7)).toBe(queueFullNotice(MAX_OPEN_PER_THREAD));
  });
});
