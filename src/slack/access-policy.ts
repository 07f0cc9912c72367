import type { Config } from '../config.js';

export type AccessDecision = 'allowed' | 'team-not-allowed' | 'channel-not-allowed' | 'user-not-allowed';

/**
 * Optional allow-lists of workspaces, channels and users (empty list: no restriction). Channel lists
 * govern channels and group conversations; a 1:1 DM is governed by the user list only.
 */
export class AccessPolicy {
  constructor(private readonly access: Pick<Config['access'], 'teamIds' | 'channelIds' | 'userIds'>) {}

  check(where: { teamId: string; channelId: string; userId: string }): AccessDecision {
    const { teamIds, channelIds, userIds } = this.access;
    if (teamIds.size > 0 && !teamIds.has(where.teamId)) return 'team-not-allowed';
    if (channelIds.size > 0 && !where.channelId.startsWith('D') && !channelIds.has(where.channelId)) {
      return 'channel-not-allowed';
    }
    if (userIds.size > 0 && !userIds.has(where.userId)) return 'user-not-allowed';
    return 'allowed';
  }
}

export function refusalText(decision: Exclude<AccessDecision, 'allowed' | 'team-not-allowed'>): string {
  return decision === 'channel-not-allowed'
    ? "Sorry, I'm not enabled in this channel, so I did not pass your message to the agent. Ask an admin, or try me in a DM."
    : "Sorry, you're not on the list of people who can use the agent here, so I did not pass your message on. Ask an admin for access.";
}

export function rateLimitedText(limit: number): string {
  return `You're sending messages faster than I can pass them on (at most ${limit} a minute), so I skipped this one. Please wait a moment and send it again.`;
}
