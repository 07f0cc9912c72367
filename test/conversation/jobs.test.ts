import { describe, expect, it } from 'vitest';
import { type InboundMessage, indicatorOf, jobKey } from '../../src/conversation/jobs.js';

const message: InboundMessage = {
  thread: { teamId: 'T1', channelId: 'C1', threadTs: '1.000' },
  ts: '2.000',
  userId: 'U1',
  text: 'hello',
  replyThreadTs: '1.000',
  hasFiles: false,
};

describe('jobKey', () => {
  it('names a Slack message and the kind of its job, so a second delivery finds the first', () => {
    expect(jobKey('T1', 'C1', '2.000', 'message')).toBe('T1:C1:2.000:message');
    expect(jobKey('T1', 'C1', '2.000', 'reset')).not.toBe(jobKey('T1', 'C1', '2.000', 'message'));
  });
});

describe('indicatorOf', () => {
  it('points at the message itself, with reactions in a plain thread', () => {
    expect(indicatorOf(message)).toEqual({
      channelId: 'C1',
      ts: '2.000',
      replyThreadTs: '1.000',
      agentSession: undefined,
    });
  });

  it('shows an agent view conversation as a session started by the author', () => {
    expect(indicatorOf({ ...message, agentSession: true }).agentSession).toEqual({
      teamId: 'T1',
      initiator: 'U1',
      messagesTab: false,
    });
    expect(indicatorOf({ ...message, agentThread: true }).agentSession).toEqual({
      teamId: 'T1',
      initiator: 'U1',
      messagesTab: true,
    });
  });
});
