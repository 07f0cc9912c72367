import { describe, expect, it } from 'vitest';
import { neutraliseBroadcasts } from '../../src/slack-out/broadcasts.js';

const INERT = '\u200B';

describe('broadcasts in agent output', () => {
  it.each([
    ['<!here>', `@${INERT}here`],
    ['<!channel|@channel>', `@${INERT}channel`],
    ['<!EVERYONE>', `@${INERT}everyone`],
    ['<!group>', `@${INERT}group`],
    ['<!subteam^S123|@devs>', `@${INERT}devs`],
    ['<!subteam^S123>', `@${INERT}group`],
    ['@here', `@${INERT}here`],
    ['_@channel_', `_@${INERT}channel_`],
  ])('makes %s inert', (text, inert) => {
    expect(neutraliseBroadcasts(text)).toBe(inert);
  });

  it('leaves mentions of one person, email addresses and words that only contain a broadcast alone', () => {
    const text = 'Ask <@U123>, write to ops@here.example or team@channel, see @hereafter and @@here';
    expect(neutraliseBroadcasts(text)).toBe(text);
  });
});
