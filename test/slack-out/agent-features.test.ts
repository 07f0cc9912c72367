import { WebClient } from '@slack/web-api';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { AgentFeatures, openedSessionsInMemory } from '../../src/slack-out/agent-features.js';
import { SlackWrites } from '../../src/slack-out/writes.js';
import { FakeSlack, type FakeSlackOptions } from '../fakes/slack.js';
import { LogCapture } from '../helpers/stack.js';

/** Agent-only features decided from what Slack answers, against the fake's documented refusals. */
describe('agent features', () => {
  let slack: FakeSlack | undefined;
  afterEach(() => slack?.stop());

  async function start(options: FakeSlackOptions = {}) {
    // The channel the threads below are in (a fake knows only the conversations it was told of, as Slack).
    slack = await FakeSlack.start({ ...options, channels: { C1: {}, ...options.channels } });
    const client = new WebClient(slack.botToken, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } });
    const logs = new LogCapture();
    const logger = createLogger({ level: 'info', secrets: [], destination: logs });
    return { slack, replies: new SlackWrites(client, client, logger), logger, logs };
  }
  const thread = (threadTs: string, teamId = 'T0TEAM') => ({ teamId, channelId: 'C1', threadTs });
  const NOT_AGENT_APP_MS = 500;

  it('closes only what it opened, also when another replica opened it', async () => {
    const { slack, replies, logger } = await start();
    const opened = openedSessionsInMemory();
    const a = new AgentFeatures(replies, 'auto', opened, logger);
    const b = new AgentFeatures(replies, 'auto', opened, logger);
    await a.setStatus(thread('1.000001'), 'processing', { initiator: 'U0ALICE' });
    await b.update(thread('1.000002'), 'active');
    await b.close([thread('1.000001'), thread('1.000002'), thread('dm-main')]);
    expect(slack.agentSession('C1', '1.000001')?.status).toBe('closed');
    expect(slack.agentSession('C1', '1.000002')).toBeUndefined();
    // Closed is forgotten: a second close asks nothing.
    const calls = slack.callsOf('agents.sessions.setStatus').length;
    await a.close([thread('1.000001')]);
    expect(slack.callsOf('agents.sessions.setStatus')).toHaveLength(calls);
  });

  it('names a session in the call that opens it, and by rename where Slack kept an older title', async () => {
    const { slack, replies, logger } = await start();
    const features = new AgentFeatures(replies, 'auto', openedSessionsInMemory(), logger);
    await features.setStatus(thread('5.000001'), 'active', { initiator: 'U0ALICE', title: 'Trip to Lisbon' });
    expect(slack.agentSession('C1', '5.000001')).toMatchObject({ status: 'active', title: 'Trip to Lisbon' });
    expect(slack.callsOf('agents.sessions.rename')).toEqual([]);

    // A reset's next conversation in the same thread: Slack ignores a title for a session that exists.
    await features.close([thread('5.000001')]);
    await features.setStatus(thread('5.000001'), 'processing', { initiator: 'U0ALICE', title: 'Budget' });
    expect(slack.agentSession('C1', '5.000001')).toMatchObject({ status: 'processing', title: 'Budget' });
    expect(slack.callsOf('agents.sessions.rename')).toHaveLength(1);
  });

  it('renames a session it opened where Slack answers without the title', async () => {
    const { slack, replies, logger } = await start({ agentSessionTitleAnswered: false });
    const opened = openedSessionsInMemory();
    const features = new AgentFeatures(replies, 'auto', opened, logger);
    await features.setStatus(thread('6.000001'), 'active', { initiator: 'U0ALICE', title: 'Trip to Porto' });
    expect(slack.agentSession('C1', '6.000001')).toMatchObject({ status: 'active', title: 'Trip to Porto' });
    expect(slack.callsOf('agents.sessions.rename').map((call) => call.args.title)).toEqual(['Trip to Porto']);
    expect(await opened.has(thread('6.000001'))).toBe(true);
  });

  it('opens a session without its initiator where Slack refuses the author as one (not a member of the channel)', async () => {
    const { slack, replies, logger, logs } = await start({
      channels: { C1: { name: 'shared', members: ['U0ALICE', 'U0BOT'] } },
    });
    const opened = openedSessionsInMemory();
    const features = new AgentFeatures(replies, 'auto', opened, logger);
    // Someone the channel does not list, as a guest of another organisation in a shared channel can be.
    await features.setStatus(thread('7.000001'), 'active', { initiator: 'U0GUEST', title: 'Q3 numbers' });
    expect(slack.agentSession('C1', '7.000001')).toMatchObject({ status: 'active', title: 'Q3 numbers' });
    expect(slack.agentSession('C1', '7.000001')?.initiatorUserId).toBeUndefined();
    expect(await opened.has(thread('7.000001'))).toBe(true);
    expect(features.statusUnsettled(thread('7.000001'))).toBe(false);
    expect(logs.text).not.toMatch(/could not set the agent view session status/);
  });

  it('counts a thread unsettled while its last status here did not land or its mark was not recorded', async () => {
    const { slack, replies, logger } = await start();
    const memory = openedSessionsInMemory();
    let markFails = false;
    const opened = {
      ...memory,
      add: async (t: ReturnType<typeof thread>) => {
        if (markFails) throw new Error('store down');
        await memory.add(t);
      },
    };
    const features = new AgentFeatures(replies, 'auto', opened, logger);
    const failing = thread('4.000001');
    await features.setStatus(failing, 'processing', { initiator: 'U0ALICE' });
    expect(features.statusUnsettled(failing)).toBe(false);
    // Slack failed the closing status: the session still shows processing.
    slack.failNextWith('agents.sessions.setStatus', 'internal_error');
    await features.update(failing, 'active');
    expect(slack.agentSession('C1', '4.000001')?.status).toBe('processing');
    expect(features.statusUnsettled(failing)).toBe(true);
    await features.setStatus(failing, 'processing');
    await features.update(failing, 'active');
    expect(features.statusUnsettled(failing)).toBe(false);

    // Slack took it, the mark could not be recorded: unsettled until a status lands with its mark.
    const unmarked = thread('4.000002');
    markFails = true;
    await features.setStatus(unmarked, 'processing', { initiator: 'U0ALICE' });
    expect(features.statusUnsettled(unmarked)).toBe(true);
    markFails = false;
    await features.setStatus(unmarked, 'processing');
    expect(features.statusUnsettled(unmarked)).toBe(false);
    expect(await memory.has(unmarked)).toBe(true);
  });

  it.each([
    ['not_agent_app', { agentView: false }],
    ['feature_disabled', {}],
  ] as const)(
    'after %s stops asking in that workspace only, logs it once, and asks again after a while',
    async (error, options) => {
      const { slack, replies, logger, logs } = await start(options);
      if (error === 'feature_disabled') {
        slack.failFor(
          'agents.sessions.setStatus',
          { type: 'error', error },
          60_000,
          (args) => args.thread_ts !== '3.000001',
        );
      }
      // "Not an agent app" is believed for half a second here: long enough for the checks below, which take
      // milliseconds, and then it is forgotten. lru-cache keeps the time, from a clock fake timers cannot move.
      const features = new AgentFeatures(replies, 'auto', openedSessionsInMemory(), logger, NOT_AGENT_APP_MS);
      await features.setStatus(thread('2.000001'), 'processing');
      expect(features.offersAgentView('T0TEAM')).toBe(false);
      expect(features.offersAgentView('T0OTHER')).toBe(true);
      await features.setStatus(thread('2.000002'), 'processing');
      await features.rename(thread('2.000001'), 'Title');
      expect(await features.setSuggestedPrompts('T0TEAM', 'D1', 'Try', [{ title: 'a', message: 'a' }])).toBe(
        false,
      );
      expect(slack.callsOf('agents.sessions.setStatus')).toHaveLength(1);
      expect(slack.callsOf('agents.sessions.rename')).toEqual([]);
      expect(logs.lines.filter((line) => line.includes('no agent features'))).toHaveLength(1);
      expect(logs.text).not.toContain('could not set the agent view session status');
      await vi.waitFor(() => expect(features.offersAgentView('T0TEAM')).toBe(true), {
        timeout: 2 * NOT_AGENT_APP_MS,
        interval: 20,
      });
    },
  );

  it('forced off, never asks', async () => {
    const { slack, replies, logger } = await start();
    const features = new AgentFeatures(replies, 'off', openedSessionsInMemory(), logger);
    await features.setStatus(thread('4.000001'), 'processing');
    expect(await features.setSuggestedPrompts('T0TEAM', 'D1', 'Try', [{ title: 'a', message: 'a' }])).toBe(
      false,
    );
    expect(slack.calls).toEqual([]);
  });
});
