import type { types } from '@slack/bolt';

/** The interactive pieces of the bot's messages, and the action ids its listeners answer. */

export const FEEDBACK_ACTION_ID = 'reply_feedback';
export const SEND_AGAIN_ACTION_ID = 'send_again';

export type FeedbackValue = 'good' | 'bad';

/** Which answer a feedback click is about: its agent and agent session (ids only). */
export interface FeedbackTarget {
  agentId: string;
  sessionId: string;
}

/** Slack's thumbs up / down under an answer (`context_actions` with `feedback_buttons`). */
export function feedbackBlock(target: FeedbackTarget): types.ContextActionsBlock {
  const value = (feedback: FeedbackValue) =>
    JSON.stringify({ v: feedback, a: target.agentId, s: target.sessionId });
  return {
    type: 'context_actions',
    elements: [
      {
        type: 'feedback_buttons',
        action_id: FEEDBACK_ACTION_ID,
        positive_button: {
          text: { type: 'plain_text', text: 'Good answer' },
          value: value('good'),
          accessibility_label: 'Mark this answer as good',
        },
        negative_button: {
          text: { type: 'plain_text', text: 'Bad answer' },
          value: value('bad'),
          accessibility_label: 'Mark this answer as bad',
        },
      },
    ],
  };
}

/** A feedback click's value, or undefined when it is not one of ours. */
export function parseFeedback(
  value: string | undefined,
): ({ value: FeedbackValue } & FeedbackTarget) | undefined {
  try {
    const parsed = JSON.parse(value ?? '') as { v?: unknown; a?: unknown; s?: unknown };
    if (
      (parsed.v === 'good' || parsed.v === 'bad') &&
      typeof parsed.a === 'string' &&
      typeof parsed.s === 'string'
    ) {
      return { value: parsed.v, agentId: parsed.a, sessionId: parsed.s };
    }
  } catch {
    // Not ours.
  }
  return undefined;
}

/** A notice with a "Send again" button, whose value names the job whose answer was lost. */
export function sendAgainBlocks(text: string, jobKey: string): types.KnownBlock[] {
  return [
    { type: 'section', text: { type: 'mrkdwn', text } },
    {
      type: 'actions',
      elements: [
        {
          type: 'button',
          action_id: SEND_AGAIN_ACTION_ID,
          text: { type: 'plain_text', text: 'Send again' },
          value: jobKey,
        },
      ],
    },
  ];
}

/** The same notice once its button was used: the button is gone, and who used it is said. */
export function sentAgainBlocks(text: string, userId: string): types.KnownBlock[] {
  return [
    { type: 'section', text: { type: 'mrkdwn', text } },
    {
      type: 'context',
      elements: [{ type: 'mrkdwn', text: `:leftwards_arrow_with_hook: Sent again by <@${userId}>.` }],
    },
  ];
}
