import { describe, expect, it } from 'vitest';
import {
  type InboundMessage,
  inboundMessageOf,
  indicatorOf,
  jobKey,
  resetRequestOf,
} from '../../src/conversation/jobs.js';

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
      agentView: undefined,
    });
  });

  it('shows an agent view conversation as a session started by the author', () => {
    expect(indicatorOf({ ...message, agentView: true }).agentView).toEqual({
      teamId: 'T1',
      initiator: 'U1',
    });
    expect(indicatorOf({ ...message, agentViewDm: true }).agentView).toEqual({
      teamId: 'T1',
      initiator: 'U1',
    });
  });
});

describe('reading a recorded payload', () => {
  it('reads a message job recorded now unchanged', () => {
    const recorded = { ...message, agentViewDm: true, agentView: true };
    expect(inboundMessageOf(JSON.parse(JSON.stringify(recorded)))).toEqual(recorded);
    expect(inboundMessageOf(JSON.parse(JSON.stringify(message)))).toEqual(message);
  });

  it('reads the agent-view fields of a message job recorded before they were renamed', () => {
    const earlier = { ...message, agentThread: true, agentSession: true };
    const read = inboundMessageOf(JSON.parse(JSON.stringify(earlier)));
    expect(read).toEqual({ ...message, agentViewDm: true, agentView: true });
    expect(read).not.toHaveProperty('agentThread');
    expect(read).not.toHaveProperty('agentSession');
    expect(indicatorOf(inboundMessageOf({ ...message, agentThread: true })).agentView).toBeDefined();
    expect(inboundMessageOf({ ...message, agentSession: false })).toEqual({ ...message, agentView: false });
  });

  it('reads a reset job recorded before or after the rename alike', () => {
    const request = { thread: message.thread, ts: '2.000', replyThreadTs: '1.000' };
    expect(resetRequestOf({ ...request, agentSession: true })).toEqual({ ...request, agentView: true });
    expect(resetRequestOf({ ...request, agentView: true })).toEqual({ ...request, agentView: true });
    expect(resetRequestOf(request)).toEqual(request);
  });
});
