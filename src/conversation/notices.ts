import { randomBytes } from 'node:crypto';
import { isAgentServiceError } from '../agent/errors.js';
import { StoreError } from '../db/database.js';

/** A short id shown to the user and logged with the failure, so support can find the log line. */
export function newReferenceId(): string {
  return randomBytes(4).toString('hex').toUpperCase();
}

export type FailureKind = 'unavailable' | 'timeout' | 'rejected' | 'bad_response' | 'store' | 'internal';

export function failureKindOf(error: unknown): FailureKind {
  if (isAgentServiceError(error)) {
    // A session that is still missing after one replacement is reported like any refusal.
    return error.kind === 'session_not_found' ? 'rejected' : error.kind;
  }
  if (error instanceof StoreError) return 'store';
  return 'internal';
}

/** One readable sentence per failure kind: never raw error text, stack traces or secrets. */
export function failureNotice(kind: FailureKind, referenceId: string): string {
  const sentence: Record<FailureKind, string> = {
    unavailable:
      'The agent service is unavailable right now, so I could not get an answer. Please try again in a moment.',
    timeout:
      'The agent took too long to answer, so I stopped waiting. Please try again, perhaps with a shorter question.',
    rejected:
      'The agent service refused this request. Please try rephrasing, or ask an admin to check the agent.',
    bad_response: 'The agent service sent a reply I could not read. Please try again.',
    store:
      'I could not reach my conversation storage, so I did not send your message to the agent. Please try again shortly.',
    internal: 'Something went wrong on my side while handling this message. Please try again.',
  };
  return `:warning: ${sentence[kind]} (ref ${referenceId})`;
}

export const EMPTY_PROMPT_HELP =
  'Hi! Mention me with a question or a task, for example `@agent summarize this thread`, and I will answer here in the thread. Replies in this thread continue the same conversation.';

export const SESSION_RESTARTED_NOTICE =
  ':information_source: The agent had lost this conversation, so I started a new one. Earlier context is gone.';

export const ATTACHMENTS_NOT_FORWARDED =
  'Note: I passed on the text of your message only; attachments are not forwarded to the agent.';

export const FILES_ONLY_NOTICE =
  'I can only pass text to the agent, and attachments are not forwarded. Please describe what you need in words.';

export const EDIT_NOT_RESENT_NOTICE =
  'I had already sent the original version of that message to the agent; edits are not re-sent. Send a new message to correct it.';

export function promptTooLongNotice(length: number, limit: number): string {
  return `:warning: That message is ${length.toLocaleString('en-US')} characters long; I can pass on at most ${limit.toLocaleString('en-US')}. Please shorten it or split it into several messages.`;
}

export function stoppedNotice(cancelled: number, answerInProgress: boolean): string {
  const what = cancelled === 1 ? '1 queued message' : `${cancelled} queued messages`;
  const rest = answerInProgress ? ' The answer already in progress will still arrive.' : '';
  return `:octagonal_sign: Stopped: cancelled ${what}.${rest}`;
}

export function nothingToStopNotice(): string {
  return 'Nothing is waiting in this conversation, so there is nothing to stop.';
}

export function queueFullNotice(limit: number): string {
  return `:warning: This conversation already has ${limit} messages waiting for the agent, so I did not queue this one. Please wait for the answers, or mention me with \`stop\` to cancel them.`;
}

export const INTERRUPTED_AFTER_SEND_NOTICE =
  ':warning: I was restarted while the agent was answering this message, and its answer was lost. I did not send it again (it would run twice); please ask again if you still need it.';

export function threadResetText(count: number): string {
  if (count < 0) return ':warning: I could not reset this conversation right now. Please try again shortly.';
  if (count === 0)
    return 'There was no conversation with the agent here to reset. The next message starts a fresh one.';
  return ':broom: Conversation reset. The next message starts a fresh conversation with the agent.';
}
