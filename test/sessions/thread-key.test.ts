import { describe, expect, it } from 'vitest';
import {
  channelKeyPrefix,
  DM_MAIN_THREAD,
  sessionKeyString,
  teamOfThreadKey,
  threadKeyString,
} from '../../src/sessions/thread-key.js';

describe('thread keys', () => {
  const thread = { teamId: 'T1', channelId: 'C1', threadTs: '1700000000.000100' };

  it('names a thread by workspace, channel and root, in the order the inbox splits it by', () => {
    expect(threadKeyString(thread)).toBe('T1:C1:1700000000.000100');
    expect(threadKeyString({ teamId: 'T1', channelId: 'D1', threadTs: DM_MAIN_THREAD })).toBe('T1:D1:dm');
  });

  it("starts the keys of a channel's threads with one prefix, which no other channel's share", () => {
    expect(threadKeyString(thread).startsWith(channelKeyPrefix(thread))).toBe(true);
    expect(threadKeyString({ ...thread, channelId: 'C10' }).startsWith(channelKeyPrefix(thread))).toBe(false);
  });

  it('gives a thread one key whether or not Slack named its org: a team id is unique across orgs', () => {
    expect(threadKeyString({ ...thread, enterpriseId: 'E1' })).toBe(threadKeyString(thread));
    expect(sessionKeyString({ ...thread, enterpriseId: 'E1' }, 'agent')).toBe(
      sessionKeyString(thread, 'agent'),
    );
  });

  it("keys a thread's sessions by agent too", () => {
    expect(sessionKeyString(thread, 'helpdesk')).toBe('T1:C1:1700000000.000100:helpdesk');
    expect(sessionKeyString(thread, 'a')).not.toBe(sessionKeyString(thread, 'b'));
  });

  it('reads the workspace back from a thread key or a session key', () => {
    expect(teamOfThreadKey(threadKeyString(thread))).toBe('T1');
    expect(teamOfThreadKey(sessionKeyString({ ...thread, teamId: 'T0LONGER' }, 'agent:with:colons'))).toBe(
      'T0LONGER',
    );
  });
});
