import type { Config } from '../config/index.js';

export type AccessDecision = 'allowed' | 'team-not-allowed' | 'channel-not-allowed' | 'user-not-allowed';

export interface AccessRequest {
  /** The workspace the event was delivered for. */
  teamId: string;
  /** The sender's own workspace, when it differs (Slack Connect) or is known. */
  userTeamId?: string;
  channelId: string;
  userId: string;
}

/**
 * Optional allow-lists of workspaces, channels and users (empty list: no restriction). The workspace list
 * applies to the delivering workspace and to the sender's own (in a Slack Connect channel people of another
 * organisation take part). Channel lists govern channels and group conversations; a 1:1 DM is governed by
 * the user list only.
 */
export class AccessPolicy {
  constructor(private readonly access: Pick<Config['access'], 'teamIds' | 'channelIds' | 'userIds'>) {}

  check(request: AccessRequest): AccessDecision {
    const { teamIds, channelIds, userIds } = this.access;
    if (teamIds.size > 0) {
      if (!teamIds.has(request.teamId)) return 'team-not-allowed';
      if (request.userTeamId !== undefined && !teamIds.has(request.userTeamId)) return 'user-not-allowed';
    }
    if (channelIds.size > 0 && !request.channelId.startsWith('D') && !channelIds.has(request.channelId)) {
      return 'channel-not-allowed';
    }
    if (userIds.size > 0 && !userIds.has(request.userId)) return 'user-not-allowed';
    return 'allowed';
  }

  /** Whether a workspace is served at all (events from others are dropped without a word). */
  servesTeam(teamId: string): boolean {
    return this.access.teamIds.size === 0 || this.access.teamIds.has(teamId);
  }
}
