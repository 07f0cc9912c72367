import { ErrorCode } from '@slack/web-api';
import { slackErrorCode } from './client.js';

/** How a failed Web API call failed, as far as what to do next goes. */
export interface SlackFailureKind {
  /** Slack may take the same call later: back off and try again. Otherwise it never will. */
  temporary: boolean;
  /** Slack may have acted on the call although it failed: look before repeating a post. */
  uncertain: boolean;
  /** Slack's error code, `ratelimited` for a 429, `http_<status>`, or `request_failed` (no answer). */
  code: string;
  /** How long Slack asked the caller to wait, when it said. */
  retryAfterMs?: number;
}

/**
 * Slack's `ok: false` answers that refuse a call for now, not for good. `rate_limited` is chat.postMessage's
 * documented HTTP-200 refusal ("posted too many messages"), to be treated like a 429; `ratelimited` is the
 * code of the 429 body; the others are Slack's own server faults.
 */
const TEMPORARY_ERRORS: ReadonlySet<string> = new Set([
  'rate_limited',
  'ratelimited',
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
]);

/**
 * Server faults after which part of the call may have been done: Slack does not say that nothing was, so a
 * post that nothing marks is not repeated after them.
 */
const MAYBE_TAKEN_ERRORS: ReadonlySet<string> = new Set(['internal_error', 'fatal_error', 'request_timeout']);

/** HTTP statuses Slack (or its edge) answers before taking a call in: nothing was done. */
const NOT_TAKEN_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/**
 * The one place that decides which Slack failures are temporary (worth retrying after a back-off) and whether a
 * failed call may still have been acted on.
 */
export function slackFailureKind(error: unknown): SlackFailureKind {
  const failure = error as
    | { code?: string; retryAfter?: number; statusCode?: number; headers?: Record<string, string> }
    | undefined;
  switch (failure?.code) {
    case ErrorCode.RateLimitedError:
      // Refused before it was taken: certain it was not posted.
      return {
        temporary: true,
        uncertain: false,
        code: 'ratelimited',
        retryAfterMs: (failure.retryAfter ?? 1) * 1000,
      };
    case ErrorCode.HTTPError: {
      const retryAfter = Number(failure.headers?.['retry-after']);
      return {
        temporary: true,
        // A gateway's 502 or 504 may come after Slack took the call; a 503 says it was not taken in.
        uncertain: !NOT_TAKEN_STATUSES.has(failure.statusCode ?? 0),
        code: `http_${failure.statusCode ?? 'error'}`,
        ...(Number.isFinite(retryAfter) ? { retryAfterMs: retryAfter * 1000 } : {}),
      };
    }
    case ErrorCode.PlatformError: {
      const code = slackErrorCode(error) ?? 'unknown_error';
      return { temporary: TEMPORARY_ERRORS.has(code), uncertain: MAYBE_TAKEN_ERRORS.has(code), code };
    }
    default:
      // A timeout or a reset connection: Slack may or may not have taken it.
      return { temporary: true, uncertain: true, code: 'request_failed' };
  }
}

/** What a refusal that no retry changes is about: who can be told why, and where. */
export type PermanentRefusal =
  | 'message-limit'
  | 'read-only'
  | 'thread-locked'
  | 'no-threads'
  | 'restricted'
  | 'unreachable'
  | 'content';

/** chat.postMessage's documented refusals (slack-api-ref chat.postMessage.json) that say what stands in the way. */
const REFUSAL_REASONS: ReadonlyMap<string, PermanentRefusal> = new Map([
  ['message_limit_exceeded', 'message-limit'],
  ['restricted_action_read_only_channel', 'read-only'],
  ['restricted_action_thread_locked', 'thread-locked'],
  ['restricted_action_non_threadable_channel', 'no-threads'],
  ['restricted_action', 'restricted'],
]);

/**
 * Refusals after which nothing reaches anyone in the conversation: the channel is gone or the bot is not in
 * it, or the bot's token no longer works there.
 */
const UNREACHABLE_REFUSALS: ReadonlySet<string> = new Set([
  'is_archived',
  'channel_not_found',
  'not_in_channel',
  'not_authed',
  'invalid_auth',
  'account_inactive',
  'token_revoked',
  'token_expired',
  'no_permission',
  'missing_scope',
  'ekm_access_denied',
  'org_login_required',
  'team_added_to_org',
]);

/** Classifies a refusal no retry changes; any not about the place or the token is about the post itself. */
export function permanentRefusalOf(code: string): PermanentRefusal {
  if (UNREACHABLE_REFUSALS.has(code)) return 'unreachable';
  return REFUSAL_REASONS.get(code) ?? 'content';
}

/**
 * A post that failed. `transient`: Slack may take it later (`uncertain`: it may even have taken this one, so
 * look before posting again). Otherwise Slack will never take it (an archived channel, a revoked token).
 */
export class SlackPostError extends Error {
  constructor(
    readonly transient: boolean,
    readonly uncertain: boolean,
    readonly code: string,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(`Slack refused the post: ${code}`, options);
    this.name = 'SlackPostError';
  }
}

/** Turns a WebClient failure into a SlackPostError. */
export function slackPostError(error: unknown): SlackPostError {
  if (error instanceof SlackPostError) return error;
  const { temporary, uncertain, code, retryAfterMs } = slackFailureKind(error);
  return new SlackPostError(temporary, uncertain, code, retryAfterMs, { cause: error });
}
