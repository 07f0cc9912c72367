import { rateLimitedText } from '../../../conversation/notices.js';
import type { AccessPolicy, AccessRequest } from '../../access.js';
import { accessRefusalText } from '../../refusals.js';

export interface RequestRefusalDeps {
  access: Pick<AccessPolicy, 'check'>;
  /** Counts a request against the person's per-minute limit; false when over it. */
  chargeUser: (userId: string) => Promise<boolean>;
  userRateLimit: number;
}

/** Access and the per-user limit of a command or shortcut: the sentence refusing it, or undefined. */
export async function requestRefusal(
  deps: RequestRefusalDeps,
  request: AccessRequest,
): Promise<string | undefined> {
  const decision = deps.access.check(request);
  if (decision !== 'allowed') return accessRefusalText(decision);
  if (!(await deps.chargeUser(request.userId))) return rateLimitedText(deps.userRateLimit);
  return undefined;
}
