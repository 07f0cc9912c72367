import { describe, expect, it } from 'vitest';
import { AgentServiceError } from '../../src/agent/errors.js';
import {
  answerDroppedNotice,
  answerRefusedNote,
  failureKindOf,
  failureNotice,
  newReferenceId,
  promptTooLongNotice,
  stoppedNotice,
  threadResetText,
} from '../../src/conversation/notices.js';
import { permanentRefusalOf } from '../../src/slack-out/failures.js';

const failure = (details: ConstructorParameters<typeof AgentServiceError>[0]) =>
  new AgentServiceError(details);

describe('failureKindOf', () => {
  it('tells the author whether the agent got the message', () => {
    expect(failureKindOf(new Error('boom'))).toBe('internal');
    expect(failureKindOf(failure({ kind: 'unauthorized', operation: 'sendMessage', httpStatus: 401 }))).toBe(
      'misconfigured',
    );
    expect(failureKindOf(failure({ kind: 'redirected', operation: 'createSession', httpStatus: 301 }))).toBe(
      'misconfigured',
    );
    expect(
      failureKindOf(failure({ kind: 'unavailable', operation: 'sendMessage', notDelivered: true })),
    ).toBe('unavailable');
    // Before the prompt's own call, nothing was sent.
    expect(failureKindOf(failure({ kind: 'timeout', operation: 'createSession' }))).toBe('no_conversation');
    // After it left, the agent may have acted on it.
    expect(failureKindOf(failure({ kind: 'unavailable', operation: 'sendMessage' }))).toBe('cut_off');
    // A gateway that gave up on the service (502, 504) after the prompt went through it.
    for (const httpStatus of [502, 504])
      expect(failureKindOf(failure({ kind: 'unavailable', operation: 'sendMessage', httpStatus }))).toBe(
        'cut_off',
      );
    // The service says it did not take it (429, 503).
    for (const httpStatus of [429, 503])
      expect(failureKindOf(failure({ kind: 'unavailable', operation: 'sendMessage', httpStatus }))).toBe(
        'unavailable',
      );
    expect(failureKindOf(failure({ kind: 'timeout', operation: 'sendMessage' }))).toBe('timeout');
    expect(failureKindOf(failure({ kind: 'rejected', operation: 'sendMessage', httpStatus: 500 }))).toBe(
      'failed',
    );
    expect(failureKindOf(failure({ kind: 'rejected', operation: 'sendMessage', httpStatus: 400 }))).toBe(
      'rejected',
    );
    expect(failureKindOf(failure({ kind: 'session_not_found', operation: 'sendMessage' }))).toBe('rejected');
  });
});

describe('notices', () => {
  it('carry the reference that is also logged', () => {
    const ref = newReferenceId();
    expect(ref).toMatch(/^[0-9A-F]{8}$/);
    expect(failureNotice('timeout', ref)).toMatch(new RegExp(`^:warning: .*\\(ref ${ref}\\)$`));
  });

  it('say sizes and durations as people write them', () => {
    expect(promptTooLongNotice(12_345, 4_000)).toContain(
      '12,345 characters long; I can pass on at most 4,000',
    );
    expect(answerDroppedNotice(180_000, 'R')).toContain('more than 3 minutes');
    expect(answerDroppedNotice(3_600_000, 'R')).toContain('more than 1 hour');
    expect(answerDroppedNotice(90_000, 'R')).toContain('more than 90 seconds');
  });

  it('say what stop did, and that there was nothing to stop', () => {
    expect(stoppedNotice(0, 'none')).toMatch(/nothing to stop/);
    expect(stoppedNotice(1, 'none')).toBe(':octagonal_sign: Stopped: cancelled 1 queued message.');
    expect(stoppedNotice(2, 'sent')).toMatch(
      /cancelled 2 queued messages and dropped the answer.*may have acted/,
    );
    expect(stoppedNotice(0, 'unsent')).toBe(
      ':octagonal_sign: Stopped: cancelled the message I was about to send. The agent never received it.',
    );
    expect(stoppedNotice(0, 'partly-posted')).toBe(
      ':octagonal_sign: Stopped: posted no more of the answer. The next message here continues the conversation.',
    );
    expect(stoppedNotice(1, 'unsent')).toBe(
      ':octagonal_sign: Stopped: cancelled the message I was about to send and 1 queued message. None of them reached the agent.',
    );
  });

  it('say whether a reset found a conversation', () => {
    expect(threadResetText(0)).toMatch(/no conversation/);
    expect(threadResetText(2)).toMatch(/^:broom: Conversation reset/);
  });

  it('say privately why Slack will never take an answer, unless no note can reach its author', () => {
    const noteFor = (code: string) => answerRefusedNote(permanentRefusalOf(code), 'ABCD1234');
    expect(noteFor('restricted_action_thread_locked')).toMatch(
      /thread is locked\. Ask me again in a new thread/,
    );
    expect(noteFor('restricted_action_read_only_channel')).toMatch(
      /only some members can post in this channel/,
    );
    expect(noteFor('message_limit_exceeded')).toMatch(/message limit of its Slack plan/);
    // Refusals of the post itself are the bot's fault: a reference to its log line.
    expect(noteFor('invalid_arguments')).toMatch(/Slack refused the answer.*\(ref ABCD1234\)$/);
    for (const code of [
      'is_archived',
      'channel_not_found',
      'not_in_channel',
      'token_revoked',
      'invalid_auth',
    ])
      expect(noteFor(code), code).toBeUndefined();
  });
});
