import { queueFullNotice, rateLimitedText, refusalText } from '../conversation/notices.js';
import type { AccessDecision } from './access.js';

/** Bounds one thread's backlog; far beyond what a person types while waiting for one answer. */
export const MAX_OPEN_PER_THREAD = 20;

/**
 * The sentence refusing a person's request for an access decision. A workspace that is not served is refused
 * as its person is (messages from such a workspace are dropped before they get here; a command still answers).
 */
export function accessRefusalText(decision: Exclude<AccessDecision, 'allowed'>): string {
  return refusalText(decision === 'channel-not-allowed' ? decision : 'user-not-allowed');
}

/** The sentence refusing a message the inbox did not admit: the person's per-minute limit, or a full thread. */
export function admissionRefusalText(outcome: 'rate-limited' | 'thread-full', userRateLimit: number): string {
  return outcome === 'rate-limited' ? rateLimitedText(userRateLimit) : queueFullNotice(MAX_OPEN_PER_THREAD);
}
