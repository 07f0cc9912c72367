import { describe, expect, it } from 'vitest';
import {
  FEEDBACK_ACTION_ID,
  feedbackBlock,
  parseFeedback,
  SEND_AGAIN_ACTION_ID,
  sendAgainBlocks,
  sentAgainBlocks,
} from '../../src/slack-out/blocks.js';
import { validateMessageBlocks } from '../fakes/slack-blocks.js';

describe('the blocks of the bot’s messages', () => {
  it('puts feedback buttons under an answer whose values name its agent and session', () => {
    const block = feedbackBlock({ agentId: 'agent-main', sessionId: 's-1' });
    expect(validateMessageBlocks([block], undefined)).toBeUndefined();
    const [buttons] = block.elements;
    expect(buttons?.type).toBe('feedback_buttons');
    if (buttons?.type !== 'feedback_buttons') return;
    expect(buttons.action_id).toBe(FEEDBACK_ACTION_ID);
    expect(parseFeedback(buttons.positive_button.value)).toEqual({
      value: 'good',
      agentId: 'agent-main',
      sessionId: 's-1',
    });
    expect(parseFeedback(buttons.negative_button.value)).toMatchObject({ value: 'bad' });
  });

  it('reads no feedback from a value that is not one of its own', () => {
    expect(parseFeedback(undefined)).toBeUndefined();
    expect(parseFeedback('not json')).toBeUndefined();
    expect(parseFeedback(JSON.stringify({ v: 'meh', a: 'agent', s: 's' }))).toBeUndefined();
    expect(parseFeedback(JSON.stringify({ v: 'good', a: 1, s: 's' }))).toBeUndefined();
  });

  it('offers "Send again" with the job it sends, and says who used it once it is gone', () => {
    const offered = sendAgainBlocks('The answer was lost.', 'job-1');
    expect(validateMessageBlocks(offered, undefined)).toBeUndefined();
    expect(offered[1]).toMatchObject({
      type: 'actions',
      elements: [{ type: 'button', action_id: SEND_AGAIN_ACTION_ID, value: 'job-1' }],
    });
    const used = sentAgainBlocks('The answer was lost.', 'U0ALICE');
    expect(validateMessageBlocks(used, undefined)).toBeUndefined();
    expect(JSON.stringify(used)).not.toContain(SEND_AGAIN_ACTION_ID);
    expect(JSON.stringify(used)).toContain('<@U0ALICE>');
  });
});
