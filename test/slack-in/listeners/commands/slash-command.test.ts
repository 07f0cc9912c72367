import { describe, expect, it } from 'vitest';
import { resetSummary, usageText } from '../../../../src/slack-in/listeners/commands/slash-command.js';

describe('usageText', () => {
  it('names the command as it is configured, with each subcommand', () => {
    const text = usageText('/ask-ops');
    expect(text.split('\n')[0]).toBe('*/ask-ops*: your conversations with the agent');
    for (const sub of ['reset', 'sessions', 'help']) expect(text).toContain(`\`/ask-ops ${sub}\``);
    expect(text).not.toContain('/agent');
  });
});

describe('resetSummary', () => {
  it.each([
    [0, true, 'There was no conversation to reset here. Your next message starts a fresh one.'],
    [0, false, 'You have no conversations with the agent in this channel to reset.'],
    [1, true, ':broom: Done. Your next message here starts a fresh conversation with the agent.'],
    [3, true, ':broom: Done. Your next message here starts a fresh conversation with the agent.'],
    [
      1,
      false,
      ':broom: Reset 1 thread you started in this channel. The next message in each starts a fresh conversation.',
    ],
    [
      2,
      false,
      ':broom: Reset 2 threads you started in this channel. The next message in each starts a fresh conversation.',
    ],
  ])('after resetting %i conversations (in a DM: %s) says %j', (count, dm, text) => {
    expect(resetSummary(count, dm)).toBe(text);
  });
});
