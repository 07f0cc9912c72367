import { describe, expect, it } from 'vitest';
import { promptFromSlackText, titleFromPrompt } from '../../src/conversation/prompt.js';

const names: Record<string, string> = { U0ALICE: 'alice', U0BOB: 'bob' };
const resolve = async (id: string) => names[id];

describe('promptFromSlackText', () => {
  it('removes the bot mention and keeps the question', async () => {
    expect(await promptFromSlackText('<@U0BOT> what is 2+2?', 'U0BOT', resolve)).toBe('what is 2+2?');
    expect(await promptFromSlackText('hey <@U0BOT|agent>   help me', 'U0BOT', resolve)).toBe('hey help me');
  });

  it('shows other people as @name, falling back to the label or id', async () => {
    expect(
      await promptFromSlackText('<@U0BOT> ask <@U0ALICE> and <@U0ZED|zed> and <@U0NOPE>', 'U0BOT', resolve),
    ).toBe('ask @alice and @zed and @U0NOPE');
  });

  it('turns links, channels and specials into plain text and decodes entities', async () => {
    const text =
      '<@U0BOT> see <https://example.com|the docs> and <https://x.io> in <#C123|general>, <!here> &amp; a&lt;b&gt;c <mailto:a@b.c|a@b.c>';
    expect(await promptFromSlackText(text, 'U0BOT', resolve)).toBe(
      'see the docs (https://example.com) and https://x.io in #general, @here & a<b>c a@b.c',
    );
  });

  it('falls back to ids when Slack sends empty labels', async () => {
    expect(await promptFromSlackText('<@U0BOT> see <#C123|> and <@U0NOPE|>', 'U0BOT', resolve)).toBe(
      'see #C123 and @U0NOPE',
    );
  });

  it('is empty for a bare mention', async () => {
    expect(await promptFromSlackText('  <@U0BOT>  ', 'U0BOT', resolve)).toBe('');
  });

  it('keeps going when a name lookup fails', async () => {
    const failing = async () => {
      throw new Error('users.info failed');
    };
    expect(await promptFromSlackText('<@U0BOT> ping <@U0ALICE>', 'U0BOT', failing)).toBe('ping @U0ALICE');
  });
});

describe('titleFromPrompt', () => {
  it('names a conversation after the first line of its first prompt, cut at a word', () => {
    expect(titleFromPrompt('Plan my week please')).toBe('Plan my week please');
    expect(titleFromPrompt('\n  Compare the regions:\n| Region | Users |\n|---|---|\n| EU | 1 |')).toBe(
      'Compare the regions:',
    );
    const long = titleFromPrompt('word '.repeat(30));
    expect(long.endsWith('word…')).toBe(true);
    expect(Array.from(long).length).toBeLessThanOrEqual(60);
    // Never half an emoji.
    expect(titleFromPrompt('🙂'.repeat(70))).toBe(`${'🙂'.repeat(59)}…`);
  });
});
