import { describe, expect, it } from 'vitest';
import { CONTEXT_END, CONTEXT_HEADING, withThreadContext } from '../../src/conversation/thread-context.js';

const names: Record<string, string> = { U0ALICE: 'alice', U0BOB: 'bob' };
const options = { botUserId: 'U0BOT', resolveUserName: async (id: string) => names[id], maxChars: 4_000 };

describe('withThreadContext', () => {
  it('sends the prompt alone when the thread has nothing earlier worth saying', async () => {
    expect(await withThreadContext('what now?', { latest: [] }, options)).toBe('what now?');
    const onlyEmpty = { latest: [{ ts: '1', userId: 'U0ALICE', text: '<@U0BOT>' }] };
    expect(await withThreadContext('what now?', onlyEmpty, options)).toBe('what now?');
  });

  it('puts the thread before the prompt, oldest first, each line naming its author', async () => {
    const earlier = {
      first: { ts: '1', userId: 'U0ALICE', text: 'The build is red' },
      latest: [
        { ts: '2', userId: 'U0BOB', text: 'since\nthis morning' },
        { ts: '3', botName: 'ci', text: 'job 42 failed' },
      ],
    };
    expect(await withThreadContext('what do you think of this?', earlier, options)).toBe(
      [
        CONTEXT_HEADING,
        '@alice: The build is red',
        '@bob: since this morning',
        'ci: job 42 failed',
        CONTEXT_END,
        '',
        'what do you think of this?',
      ].join('\n'),
    );
  });

  it('keeps the first message, cut to fit, and as many of the latest as the budget leaves', async () => {
    const earlier = {
      first: { ts: '1', userId: 'U0ALICE', text: 'x'.repeat(500) },
      latest: [
        { ts: '2', userId: 'U0BOB', text: 'an older reply that no longer fits' },
        { ts: '3', userId: 'U0BOB', text: 'the latest' },
      ],
    };
    const prompt = await withThreadContext('why?', earlier, { ...options, maxChars: 200 });
    expect(prompt.length).toBeLessThanOrEqual(200);
    const lines = prompt.split('\n');
    expect(lines[1]).toMatch(/^@alice: x+…$/);
    expect(lines).toContain('@bob: the latest');
    expect(lines).not.toContain('@bob: an older reply that no longer fits');
    expect(lines.at(-1)).toBe('why?');
  });
});
