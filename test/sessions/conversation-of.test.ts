import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  type AgentViewState,
  agentViewIn,
  conversationOf,
  conversationOfThread,
  isDmChannel,
  isSlackThread,
  isThreadReply,
} from '../../src/sessions/conversation-of.js';

const CLASSIC: AgentViewState = { inDms: false, inChannels: false };
const AGENT_VIEW: AgentViewState = { inDms: true, inChannels: true };
/** SLACK_AGENT_VIEW=on in a workspace where Slack said "not an agent app": the Messages tab stays. */
const DMS_ONLY: AgentViewState = { inDms: true, inChannels: false };

describe('conversationOf: where a message belongs', () => {
  it.each([
    // where, view, channel, message ts, thread_ts → thread, reply thread, isDm, agentViewDm, agentView, isReply
    ['channel top level', CLASSIC, 'C1', '3.3', undefined, '3.3', '3.3', false, false, false, false],
    ['channel thread reply', CLASSIC, 'C1', '3.4', '3.3', '3.3', '3.3', false, false, false, true],
    [
      'channel in the agent view',
      AGENT_VIEW,
      'C1',
      '3.3',
      undefined,
      '3.3',
      '3.3',
      false,
      false,
      true,
      false,
    ],
    [
      'channel thread in the agent view',
      AGENT_VIEW,
      'C1',
      '3.4',
      '3.3',
      '3.3',
      '3.3',
      false,
      false,
      true,
      true,
    ],
    [
      'channel with DMs-only agent view',
      DMS_ONLY,
      'C1',
      '3.3',
      undefined,
      '3.3',
      '3.3',
      false,
      false,
      false,
      false,
    ],
    ['group DM (mpim)', AGENT_VIEW, 'G1', '3.3', undefined, '3.3', '3.3', false, false, true, false],
    ['classic DM top level', CLASSIC, 'D1', '2.2', undefined, 'dm', undefined, true, false, false, false],
    ['classic DM, root of a thread', CLASSIC, 'D1', '2.2', '2.2', 'dm', undefined, true, false, false, false],
    ['classic DM thread reply', CLASSIC, 'D1', '2.3', '2.2', '2.2', '2.2', true, false, false, true],
    ['agent-view DM top level', AGENT_VIEW, 'D1', '2.2', undefined, '2.2', '2.2', true, true, true, false],
    ['agent-view DM thread reply', AGENT_VIEW, 'D1', '2.3', '2.2', '2.2', '2.2', true, true, true, true],
    ['DMs-only agent view, DM', DMS_ONLY, 'D1', '2.2', undefined, '2.2', '2.2', true, true, true, false],
  ] as const)(
    '%s',
    (_name, view, channelId, ts, threadTs, thread, reply, isDm, agentViewDm, agentView, isReply) => {
      expect(conversationOf({ teamId: 'T1', channelId, ts, threadTs }, view)).toEqual({
        teamId: 'T1',
        channelId,
        isDm,
        thread: { teamId: 'T1', channelId, threadTs: thread },
        replyThreadTs: reply,
        agentViewDm,
        agentView,
        isReply,
      });
    },
  );
});

describe('conversationOfThread: a known thread', () => {
  it.each([
    ['a DM main line', CLASSIC, 'D1', 'dm', undefined, false],
    ['a DM main line in the agent view', AGENT_VIEW, 'D1', 'dm', undefined, false],
    ['a classic DM thread', CLASSIC, 'D1', '2.2', '2.2', false],
    ['an agent-view DM thread', AGENT_VIEW, 'D1', '2.2', '2.2', true],
    ['a channel thread', CLASSIC, 'C1', '3.3', '3.3', false],
    ['an agent-view channel thread', AGENT_VIEW, 'C1', '3.3', '3.3', true],
  ] as const)('%s', (_name, view, channelId, threadTs, reply, agentView) => {
    const conversation = conversationOfThread({ teamId: 'T1', channelId, threadTs }, view);
    expect(conversation.replyThreadTs).toBe(reply);
    expect(conversation.agentView).toBe(agentView);
    expect(conversation.thread).toEqual({ teamId: 'T1', channelId, threadTs });
  });

  it.each([
    ['a channel thread', 'C1', '3.3'],
    ['a DM thread', 'D1', '2.2'],
  ])(
    '%s Slack shows as agent view is one, though the bot learned the workspace is classic',
    (_name, channelId, threadTs) => {
      const thread = { teamId: 'T1', channelId, threadTs };
      const conversation = conversationOfThread(thread, CLASSIC, { slackShowsAgentView: true });
      expect(conversation).toEqual({ ...conversationOfThread(thread, CLASSIC), agentView: true });
    },
  );

  it('places a message exactly where its stored thread says', () => {
    for (const view of [CLASSIC, AGENT_VIEW, DMS_ONLY]) {
      for (const position of [
        { channelId: 'D1', ts: '2.2' },
        { channelId: 'D1', ts: '2.3', threadTs: '2.2' },
        { channelId: 'C1', ts: '3.3' },
        { channelId: 'C1', ts: '3.4', threadTs: '3.3' },
      ]) {
        const placed = conversationOf({ teamId: 'T1', ...position }, view);
        expect(placed).toMatchObject(conversationOfThread(placed.thread, view));
      }
    }
  });
});

describe('agentViewIn: the agent view of a workspace', () => {
  it.each([
    ['on', true, { inDms: true, inChannels: true }],
    ['on', false, { inDms: true, inChannels: false }],
    ['auto', true, { inDms: true, inChannels: true }],
    ['auto', false, { inDms: false, inChannels: false }],
    ['off', false, { inDms: false, inChannels: false }],
  ] as const)('SLACK_AGENT_VIEW=%s, agent view offered in the workspace: %s', (mode, offered, expected) => {
    expect(agentViewIn({ mode, offersAgentView: () => offered }, 'T1')).toEqual(expected);
  });
});

describe('isDmChannel', () => {
  it.each([
    ['D024BE91L', true],
    ['C024BE91L', false],
    ['G024BE91L', false],
  ])('%s: %s', (channel, dm) => {
    expect(isDmChannel(channel)).toBe(dm);
  });

  it('agrees with channel_type wherever recorded Slack payloads carry both (so channel_type need not be read)', () => {
    const dir = new URL('../fixtures/slack/recorded/', import.meta.url);
    const pairs: [string, string][] = [];
    const collect = (value: unknown): void => {
      if (typeof value !== 'object' || value === null) return;
      const fields = value as { channel?: unknown; channel_type?: unknown };
      if (typeof fields.channel === 'string' && typeof fields.channel_type === 'string')
        pairs.push([fields.channel, fields.channel_type]);
      for (const child of Object.values(value)) collect(child);
    };
    for (const file of readdirSync(dir).filter((name) => name.endsWith('.json')))
      collect(JSON.parse(readFileSync(new URL(file, dir), 'utf8')));
    expect(pairs.map(([, type]) => type)).toContain('im');
    for (const [channel, type] of pairs)
      expect([channel, isDmChannel(channel)]).toEqual([channel, type === 'im']);
  });
});

describe('isSlackThread', () => {
  it('only threads have a Slack agent-view session; a classic DM main line has none', () => {
    expect(isSlackThread({ teamId: 'T1', channelId: 'D1', threadTs: 'dm' })).toBe(false);
    expect(isSlackThread({ teamId: 'T1', channelId: 'C1', threadTs: '3.3' })).toBe(true);
  });
});

describe('isThreadReply', () => {
  it.each([
    [undefined, '1.1', false],
    ['1.1', '1.1', false],
    ['1.0', '1.1', true],
  ])('thread_ts %s, ts %s: %s', (threadTs, ts, reply) => {
    expect(isThreadReply({ ts, threadTs })).toBe(reply);
  });
});
