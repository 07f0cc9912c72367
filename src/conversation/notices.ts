import { randomBytes } from 'node:crypto';
import { isAgentServiceError } from '../agent/errors.js';
import type { PermanentRefusal } from '../slack-out/failures.js';
import type { StoppedWork } from './job-progress.js';

/** The sentences people read from the bot: plain words, never raw error text, stack traces or secrets. */

/** A short id shown to the user and logged with the failure, so support can find the log line. */
export function newReferenceId(): string {
  return randomBytes(4).toString('hex').toUpperCase();
}

/** What went wrong, as the person who wrote the message needs to know it: above all, whether the agent got it. */
export type FailureKind =
  /** The service could not be reached, or said it is unavailable. */
  | 'unavailable'
  /** The thread's conversation could not be created on the service, so the prompt was never sent. */
  | 'no_conversation'
  /** The connection broke after the prompt was sent. */
  | 'cut_off'
  /** No answer in time after the prompt was sent. */
  | 'timeout'
  /** The service refused the prompt (a 4xx, or `status: false`). */
  | 'rejected'
  /** The service failed on the prompt (a 5xx). */
  | 'failed'
  | 'bad_response'
  | 'misconfigured'
  | 'internal';

export function failureKindOf(error: unknown): FailureKind {
  if (!isAgentServiceError(error)) return 'internal';
  if (error.kind === 'unauthorized' || error.kind === 'not_found' || error.kind === 'redirected')
    return 'misconfigured';
  if (error.kind === 'unavailable' && (error.notDelivered || saidUnavailable(error))) return 'unavailable';
  // Only the prompt's own call can fail after the prompt left; anything before it is the conversation's start.
  if (error.operation !== 'sendMessage') return 'no_conversation';
  switch (error.kind) {
    // A gateway that gave up on the service (502, 504), or a connection that broke.
    case 'unavailable':
      return 'cut_off';
    // A session still missing after one replacement is reported like any refusal.
    case 'session_not_found':
      return 'rejected';
    case 'rejected':
      return error.httpStatus !== undefined && error.httpStatus >= 500 ? 'failed' : 'rejected';
    default:
      return error.kind;
  }
}

/**
 * The service itself said it cannot take requests now (429, 503): nothing was run. A call that never reached it
 * (`notDelivered`) is told apart by the caller; a gateway's 502 or 504 may come after the prompt went through.
 */
function saidUnavailable(error: { httpStatus?: number }): boolean {
  return error.httpStatus === 429 || error.httpStatus === 503;
}

/** One readable sentence per failure kind, with the reference that is also in the log line. */
export function failureNotice(kind: FailureKind, referenceId: string): string {
  const sentence: Record<FailureKind, string> = {
    unavailable:
      'The agent service is unavailable right now, so I could not get an answer. Please try again in a moment.',
    no_conversation:
      'The agent service could not start a conversation, so your message was not sent to the agent. Please try again in a moment.',
    cut_off:
      'The connection to the agent service broke after your message was sent, so I have no answer. The agent may have received it and acted on it; ask again if you still need the answer.',
    timeout:
      'The agent took too long to answer, so I stopped waiting. It may have received your message and acted on it; ask again if you still need the answer, perhaps with a shorter question.',
    rejected:
      'The agent service refused this request. Please try rephrasing, or ask an admin to check the agent.',
    failed:
      'The agent service failed while handling your message, so I have no answer. It may have received it and acted on it; ask again if you still need the answer, and if it keeps failing, ask an admin to check the agent.',
    bad_response:
      'The agent service sent a reply I could not read, so I have no answer. It received your message and may have acted on it; ask again if you still need the answer.',
    misconfigured:
      'I am not set up correctly: the agent service does not accept my credentials or does not know my agent. An admin must fix my configuration; trying again will not help until then.',
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

export const EDIT_WHILE_SENDING_NOTICE =
  'I was already passing the original version of that message on to the agent; edits are not sent. Send a new message to correct it.';

export const DELETED_BEFORE_SENT_NOTICE =
  'You deleted your message before I passed it on, so I did not send it to the agent.';

export function promptTooLongNotice(length: number, limit: number): string {
  return `:warning: That message is ${length.toLocaleString('en-US')} characters long; I can pass on at most ${limit.toLocaleString('en-US')}. Please shorten it or split it into several messages.`;
}

/** What `stop` did: the stopper's waiting messages cancelled, and where the one being worked on had got to. */
export function stoppedNotice(cancelledQueued: number, stoppedWork: StoppedWork): string {
  if (cancelledQueued === 0 && stoppedWork === 'none') {
    return 'Nothing of yours is waiting for the agent in this conversation, so there is nothing to stop.';
  }
  const cancelledItems: string[] = [];
  if (stoppedWork === 'unsent') cancelledItems.push('the message I was about to send');
  if (cancelledQueued > 0)
    cancelledItems.push(cancelledQueued === 1 ? '1 queued message' : `${cancelledQueued} queued messages`);
  const actions = cancelledItems.length > 0 ? [`cancelled ${cancelledItems.join(' and ')}`] : [];
  if (stoppedWork === 'sent') actions.push('dropped the answer I was waiting for');
  // True also when its last part was already in: only the parts before it are recorded as posted.
  if (stoppedWork === 'partly-posted') actions.push('posted no more of the answer');
  const sentence = `:octagonal_sign: Stopped: ${actions.join(' and ')}.`;
  switch (stoppedWork) {
    case 'sent':
      return `${sentence} The agent had already received that message and may have acted on it; the next message here continues the conversation.`;
    case 'partly-posted':
      return `${sentence} The next message here continues the conversation.`;
    case 'unsent':
      return `${sentence} ${cancelledItems.length > 1 ? 'None of them reached the agent.' : 'The agent never received it.'}`;
    case 'none':
      return sentence;
  }
}

export function queueFullNotice(limit: number): string {
  return `:warning: This conversation already has ${limit} messages for the agent, waiting or being answered, so I did not queue this one. Please wait for the answers, or mention me with \`stop\` to cancel yours.`;
}

export const INTERRUPTED_AFTER_SEND_NOTICE =
  ':warning: I was restarted while the agent was answering this message, and its answer was lost. I did not send it again on my own (the agent may already have acted on it). If you still need the answer, press *Send again*.';

/** A message acknowledged to Slack although it could not be recorded (a long store outage). */
export function notTakenNotice(userId: string): string {
  return `<@${userId}> :warning: I could not take your message just now because of a fault on my side, so it did not reach the agent. Please send it again in a few minutes.`;
}

/**
 * The agent answered, but the store stayed unreachable for longer than STORE_RETRY_WINDOW, so the answer,
 * which cannot be posted without being recorded (only what is recorded is posted exactly once), is dropped.
 */
export function answerDroppedNotice(windowMs: number, referenceId: string): string {
  return `:warning: The agent answered this message, but my database was unreachable for more than ${durationWords(windowMs)}, so I could not record the answer and had to drop it. The agent may already have acted on your message. If you still need the answer, press *Send again*; it works once my database is back. (ref ${referenceId})`;
}

/** `3 minutes`, `90 seconds`, `1 hour`: a duration as people say it. */
function durationWords(ms: number): string {
  const [amount, unit] =
    ms >= 3_600_000 && ms % 3_600_000 === 0
      ? [ms / 3_600_000, 'hour']
      : ms >= 60_000 && ms % 60_000 === 0
        ? [ms / 60_000, 'minute']
        : [Math.round(ms / 1_000), 'second'];
  return `${amount} ${unit}${amount === 1 ? '' : 's'}`;
}

export const ORIGINAL_GONE_NOTICE =
  ':warning: I could not find your original message any more, so I could not send it again. Please write it again.';

export function slackRefusedNotice(referenceId: string): string {
  return `:warning: Slack did not take the answer to this message for too long, so I stopped trying to post it. Please ask again. (ref ${referenceId})`;
}

const MESSAGE_LIMIT_NOTE =
  ':warning: Slack did not let me post the answer to your message: this workspace has reached the message limit of its Slack plan. An admin can check the workspace plan; please ask again once messages can be posted.';

/** Why Slack will never take the answer here, in words for its author (see permanentRefusalOf). */
const REFUSAL_WORDS: Readonly<
  Record<Exclude<PermanentRefusal, 'message-limit' | 'unreachable' | 'content'>, string>
> = {
  'read-only': 'only some members can post in this channel. Ask me in another channel, or in a DM with me.',
  'thread-locked': 'this thread is locked. Ask me again in a new thread.',
  'no-threads':
    'this channel does not allow replies in threads. Ask me in another channel, or in a DM with me.',
  restricted: 'a setting of this workspace does not let me post here. Ask me in a DM with me.',
};

/**
 * The private note for the author of a message whose answer Slack will never take, or undefined when no note
 * can reach them. A refusal of the answer itself (its length or layout) is the bot's own fault, told with a
 * reference to its log line.
 */
export function answerRefusedNote(refusal: PermanentRefusal, referenceId: string): string | undefined {
  switch (refusal) {
    case 'message-limit':
      return MESSAGE_LIMIT_NOTE;
    case 'unreachable':
      return undefined;
    case 'content':
      return `:warning: Slack refused the answer to your message, so I could not post it. Please ask again, or tell whoever runs me. (ref ${referenceId})`;
    default:
      return `:warning: Slack did not let me post the answer to your message here: ${REFUSAL_WORDS[refusal]}`;
  }
}

export function threadResetText(count: number): string {
  if (count === 0)
    return 'There was no conversation with the agent here to reset. The next message starts a fresh one.';
  return ':broom: Conversation reset. The next message starts a fresh conversation with the agent.';
}

export function resetNotAllowedText(starter: string): string {
  return `Only <@${starter}>, who started this conversation with the agent, can reset it. You can start your own by mentioning me in a new thread.`;
}

export const RESET_FAILED_TEXT =
  ':warning: I could not reset this conversation right now. Please try again shortly.';

export type RefusalReason = 'channel-not-allowed' | 'user-not-allowed';

export function refusalText(reason: RefusalReason): string {
  return reason === 'channel-not-allowed'
    ? "Sorry, I'm not enabled in this channel, so I did not pass your message to the agent. Ask an admin, or try me in a DM."
    : "Sorry, you're not on the list of people who can use the agent here, so I did not pass your message on. Ask an admin for access.";
}

export function rateLimitedText(limit: number): string {
  return `You're sending requests faster than I can take them (at most ${limit} a minute), so I skipped this one. Please wait a moment and try again.`;
}
