import { describe, expect, it } from 'vitest';
import { AccessPolicy } from '../../src/slack-in/access.js';

const policy = (lists: { teams?: string[]; channels?: string[]; users?: string[] }) =>
  new AccessPolicy({
    teamIds: new Set(lists.teams ?? []),
    channelIds: new Set(lists.channels ?? []),
    userIds: new Set(lists.users ?? []),
  });

describe('the access policy', () => {
  it('allows everyone when no list is set', () => {
    expect(policy({}).check({ teamId: 'T1', channelId: 'C1', userId: 'U1' })).toBe('allowed');
  });

  it("checks the delivering workspace and the sender's own (Slack Connect)", () => {
    const teams = policy({ teams: ['T1'] });
    expect(teams.check({ teamId: 'T2', channelId: 'C1', userId: 'U1' })).toBe('team-not-allowed');
    expect(teams.check({ teamId: 'T1', userTeamId: 'T-OTHER-ORG', channelId: 'C1', userId: 'U1' })).toBe(
      'user-not-allowed',
    );
    expect(teams.check({ teamId: 'T1', userTeamId: 'T1', channelId: 'C1', userId: 'U1' })).toBe('allowed');
    expect(teams.servesTeam('T2')).toBe(false);
  });

  it('governs channels by the channel list and 1:1 DMs by the user list only', () => {
    const lists = policy({ channels: ['C-OPEN'], users: ['U-ALICE'] });
    expect(lists.check({ teamId: 'T1', channelId: 'C-CLOSED', userId: 'U-ALICE' })).toBe(
      'channel-not-allowed',
    );
    expect(lists.check({ teamId: 'T1', channelId: 'C-OPEN', userId: 'U-BOB' })).toBe('user-not-allowed');
    expect(lists.check({ teamId: 'T1', channelId: 'D-ALICE', userId: 'U-ALICE' })).toBe('allowed');
    expect(lists.check({ teamId: 'T1', channelId: 'D-BOB', userId: 'U-BOB' })).toBe('user-not-allowed');
  });
});
