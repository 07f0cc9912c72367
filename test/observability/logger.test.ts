import { describe, expect, it } from 'vitest';
import { secretScrubber } from '../../src/observability/logger.js';

describe('the log scrubber', () => {
  it('removes Slack tokens by their shape, rotating ones included', () => {
    const scrub = secretScrubber([]);
    const line = JSON.stringify({
      msg: 'refreshed xoxe.xoxb-1-MTIzNDU2Nzg5 with xoxe-1-My0xLTEyMzQ1Njc4OQ and xoxb-123-456-abc, xapp-1-A1-2-z',
    });
    const scrubbed = scrub(line);
    for (const token of [
      'xoxe.xoxb-1-MTIzNDU2Nzg5',
      'xoxe-1-My0xLTEyMzQ1Njc4OQ',
      'xoxb-123-456-abc',
      'xapp-1-A1-2-z',
    ])
      expect(scrubbed).not.toContain(token);
    expect(scrubbed).toContain('refreshed [redacted] with [redacted] and [redacted], [redacted]');
  });
});
