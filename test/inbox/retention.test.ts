import { describe, expect, it } from 'vitest';
import { MESSAGE_MEMORY_DAYS, mayBeForgotten } from '../../src/inbox/retention.js';

describe('mayBeForgotten', () => {
  const now = Date.UTC(2026, 10, 28);
  const tsDaysAgo = (days: number) => `${(now - days * 86_400_000) / 1000}.000100`;

  it('says a message younger than the inbox memory is remembered, an older one may not be', () => {
    expect(mayBeForgotten(tsDaysAgo(MESSAGE_MEMORY_DAYS - 1), now)).toBe(false);
    expect(mayBeForgotten(tsDaysAgo(MESSAGE_MEMORY_DAYS + 1), now)).toBe(true);
  });

  it('does not judge a timestamp it cannot read', () => {
    expect(mayBeForgotten('not a ts', now)).toBe(false);
  });
});
