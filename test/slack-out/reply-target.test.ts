import { describe, expect, it } from 'vitest';
import { jobMetadata, jobPartOf } from '../../src/slack-out/reply-target.js';

describe('job marks in message metadata', () => {
  it('finds the part a message was posted as, for its own job only', () => {
    const metadata = jobMetadata({ job: 'C0TEST:1700000000.000100', part: '2' });
    expect(jobPartOf(metadata, 'C0TEST:1700000000.000100')).toBe('2');
    expect(jobPartOf(metadata, 'C0TEST:1700000000.000200')).toBeUndefined();
  });

  it('reads a notice name as its part', () => {
    expect(jobPartOf(jobMetadata({ job: 'j', part: 'slow' }), 'j')).toBe('slow');
  });

  it('ignores messages without metadata or with another app event', () => {
    expect(jobPartOf(undefined, 'j')).toBeUndefined();
    expect(
      jobPartOf({ event_type: 'other_event', event_payload: { job: 'j', part: '0' } }, 'j'),
    ).toBeUndefined();
  });
});
