import { setTimeout as realSleep } from 'node:timers/promises';
import { WebClient } from '@slack/web-api';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import {
  SESSION_PROCESSING_REFRESH_MS,
  WorkIndicators,
  type WorkingOptions,
} from '../../src/slack-out/indicators.js';
import { SlackWrites } from '../../src/slack-out/writes.js';
import { FakeSlack } from '../fakes/slack.js';
import { LogCapture } from '../helpers/stack.js';

/**
 * The indicators' own timers run on a fake clock, moved on by the test; Slack's answers come over real
 * sockets, so what they bring is polled for in real time (node:timers/promises is not faked).
 */
function useFakeClock(): void {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}

const advance = (ms: number) => vi.advanceTimersByTimeAsync(ms);

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await realSleep(10);
  }
}

describe('the status of an agent thread', () => {
  let slack: FakeSlack;
  let client: WebClient;
  beforeAll(async () => {
    // The conversations the threads below are in: a fake knows only those it was told of, as Slack.
    slack = await FakeSlack.start({ channels: { C0WORK: {}, D0AGENT: { type: 'im', user: 'U0ALICE' } } });
    client = new WebClient(slack.botToken, { slackApiUrl: slack.apiUrl });
  });
  afterAll(() => slack.stop());
  useFakeClock();

  const logger = createLogger({ level: 'warn', secrets: [], destination: new LogCapture() });
  /** What the thread's agent session was asked, in order, and the status lines it was sent (none is). */
  const sessionStatuses = (threadTs: string) =>
    slack
      .callsOf('agents.sessions.setStatus')
      .filter((call) => call.args.thread_ts === threadTs)
      .map((call) => call.args.status);
  const statusLines = (threadTs: string) =>
    slack.callsOf('assistant.threads.setStatus').filter((call) => call.args.thread_ts === threadTs);

  it("is set again before Slack's one-hour end of processing", () => {
    expect(SESSION_PROCESSING_REFRESH_MS).toBeLessThan(60 * 60_000);
  });

  it('shows the work in the Messages tab through the session alone: processing, set again while slow, then active', async () => {
    const indicators = new WorkIndicators(new SlackWrites(client, client, logger), 0, 0);
    const threadTs = '1700000000.000100';
    const working = indicators.showWorking({
      channelId: 'D0AGENT',
      ts: threadTs,
      replyThreadTs: threadTs,
      agentView: { teamId: 'T0TEAM', initiator: 'U0ALICE' },
    });
    await until(() => sessionStatuses(threadTs).length === 1, 'processing');
    await advance(SESSION_PROCESSING_REFRESH_MS);
    await until(() => sessionStatuses(threadTs).length === 2, 'processing set again');
    await working.end();
    expect(sessionStatuses(threadTs)).toEqual(['processing', 'processing', 'active']);
    // No "is thinking…" line: Slack would make it the session's status (processing at once, then active).
    expect(statusLines(threadTs)).toEqual([]);
    expect(slack.callsOf('reactions.add')).toEqual([]);
    const session = slack.agentSession('D0AGENT', threadTs);
    expect(session).toMatchObject({ status: 'active', initiatorUserId: 'U0ALICE' });
    // Nothing keeps setting it after the end.
    await advance(SESSION_PROCESSING_REFRESH_MS);
    await realSleep(50);
    expect(sessionStatuses(threadTs)).toHaveLength(3);
  });

  /** Indicators with a working delay of 400 ms (WORKING_INDICATOR_DELAY_MS), as one process has them. */
  const delayed = () => new WorkIndicators(new SlackWrites(client, client, logger), 0, 400);
  /** Work on a channel thread's message. */
  const work = (indicators: WorkIndicators, threadTs: string, options?: WorkingOptions) =>
    indicators.showWorking(
      {
        channelId: 'C0WORK',
        ts: threadTs,
        replyThreadTs: threadTs,
        agentView: { teamId: 'T0TEAM', initiator: 'U0ALICE' },
      },
      options,
    );

  it.each([
    ['clear', 'an answer that comes within the delay leaves a conversation under way untouched'],
    ['leave', 'an attempt left before the delay (another owner finishes the job) sets nothing later'],
  ] as const)('%s: %s', async (how, _case) => {
    const threadTs = how === 'clear' ? '1700000000.000500' : '1700000000.000650';
    let storeAsked = 0;
    const working = work(delayed(), threadTs, {
      stillWanted: async () => {
        storeAsked += 1;
        return true;
      },
    });
    await advance(300);
    await working.end(how);
    await advance(1_000);
    await realSleep(50);
    expect(sessionStatuses(threadTs)).toEqual([]);
    // Nor is the store asked whether the job is still wanted: a quick answer costs no statement here.
    expect(storeAsked).toBe(0);
  });

  it('sets processing once the delay has passed, not before, and active at the end', async () => {
    const threadTs = '1700000000.000600';
    const working = work(delayed(), threadTs);
    await advance(399);
    await realSleep(50);
    expect(sessionStatuses(threadTs)).toEqual([]);
    await advance(1);
    await until(() => sessionStatuses(threadTs).length === 1, 'processing after the delay');
    await working.end();
    expect(sessionStatuses(threadTs)).toEqual(['processing', 'active']);
  });

  it('opens a new conversation named, in the call that first sets its status; a resumed job sets processing at once', async () => {
    const sessionCalls = (threadTs: string) =>
      slack.calls
        .filter((call) => call.method.startsWith('agents.sessions.') && call.args.thread_ts === threadTs)
        .map((call) => `${call.method} ${call.args.status ?? ''} ${call.args.title ?? ''}`.trim());
    // Answered within the delay: one call opens it, named, active; no stop button ever shows.
    const quick = '1700000000.000700';
    const quickly = work(delayed(), quick);
    quickly.setTitle('Plan the launch');
    await advance(300);
    await realSleep(50);
    expect(sessionCalls(quick)).toEqual([]);
    await quickly.end();
    expect(sessionCalls(quick)).toEqual(['agents.sessions.setStatus active Plan the launch']);
    expect(slack.agentSession('C0WORK', quick)).toMatchObject({ status: 'active', title: 'Plan the launch' });

    // A slower answer: processing after the delay opens it, named.
    const slow = '1700000000.000720';
    const slowly = work(delayed(), slow);
    slowly.setTitle('Plan the budget');
    await advance(400);
    await until(() => sessionCalls(slow).length === 1, 'processing after the delay');
    await slowly.end();
    expect(sessionCalls(slow)).toEqual([
      'agents.sessions.setStatus processing Plan the budget',
      'agents.sessions.setStatus active',
    ]);
    expect(slack.agentSession('C0WORK', slow)?.title).toBe('Plan the budget');

    // Left before the delay (the job goes on later): opened, named, for whoever finishes it; not once unwanted.
    const left = '1700000000.000740';
    const leaving = work(delayed(), left);
    leaving.setTitle('Plan the party');
    await leaving.end('leave');
    expect(slack.agentSession('C0WORK', left)).toMatchObject({
      status: 'processing',
      title: 'Plan the party',
    });
    const unwanted = '1700000000.000745';
    const cancelled = work(delayed(), unwanted, { stillWanted: async () => false });
    cancelled.setTitle('Plan nothing');
    await cancelled.end('leave');
    await advance(1_000);
    await realSleep(50);
    expect(sessionCalls(unwanted)).toEqual([]);

    // Named after the delay has set processing: processing once.
    const late = '1700000000.000750';
    const lateTitle = work(delayed(), late);
    await advance(400);
    await until(() => sessionStatuses(late).length === 1, 'processing after the delay');
    lateTitle.setTitle('Plan the offsite');
    await until(() => slack.agentSession('C0WORK', late)?.title === 'Plan the offsite', 'the session named');
    await lateTitle.end();
    expect(sessionStatuses(late)).toEqual(['processing', 'active']);

    // The job no longer wanted when processing was due (its author stopped it), then ended: opened, named, active.
    const stopped = '1700000000.000760';
    let wanted = true;
    const stopping = work(delayed(), stopped, { stillWanted: async () => wanted });
    stopping.setTitle('Plan the trip');
    wanted = false;
    await advance(400);
    await realSleep(50);
    expect(sessionCalls(stopped)).toEqual([]);
    await stopping.end();
    expect(sessionCalls(stopped)).toEqual(['agents.sessions.setStatus active Plan the trip']);

    // The earlier owner may have left it processing: this one ends it, however soon the answer comes.
    const resumed = '1700000000.000800';
    const resuming = work(delayed(), resumed, { resumed: true });
    await until(() => sessionStatuses(resumed).length === 1, 'processing at once');
    await resuming.end();
    expect(sessionStatuses(resumed)).toEqual(['processing', 'active']);
  });

  it('sets the status at once, as before the delay, in a thread whose last active did not land', async () => {
    const indicators = delayed();
    const threadTs = '1700000000.000900';
    const slow = work(indicators, threadTs);
    await advance(400);
    await until(() => sessionStatuses(threadTs).length === 1, 'processing after the delay');
    slack.failNextWith('agents.sessions.setStatus', 'internal_error', 1, (args) => args.status === 'active');
    await slow.end();
    expect(slack.agentSession('C0WORK', threadTs)?.status).toBe('processing');

    const quick = work(indicators, threadTs);
    await advance(100);
    await quick.end();
    expect(slack.agentSession('C0WORK', threadTs)?.status).toBe('active');
    // Settled: the next quick answer makes no call.
    const calls = sessionStatuses(threadTs).length;
    const next = work(indicators, threadTs);
    await advance(100);
    await next.end();
    expect(sessionStatuses(threadTs)).toHaveLength(calls);
  });
});

describe('reaction indicators', () => {
  let slack: FakeSlack;
  beforeAll(async () => {
    slack = await FakeSlack.start();
  });
  afterAll(() => slack.stop());

  it('are never left behind when the removal is made while the addition is still on its way', async () => {
    // Additions reach Slack slowly, so a removal sent without waiting would take effect first, as a no-op.
    slack.delayArrival('reactions.add', 150);
    const client = new WebClient(slack.botToken, { slackApiUrl: slack.apiUrl });
    const logger = createLogger({ level: 'silent', secrets: [] });
    const indicators = new WorkIndicators(new SlackWrites(client, client, logger), 0);
    const ts = slack.seedMessage('C0QUEUE', { user: 'U0ALICE', text: 'one more thing' });
    const target = { channelId: 'C0QUEUE', ts, replyThreadTs: ts };
    const showing = indicators.showQueued(target);
    await indicators.clearQueued(target);
    await showing;
    slack.delayArrival('reactions.add', undefined);
    expect(slack.callsOf('reactions.add')).toHaveLength(1);
    expect(slack.reactionsOn('C0QUEUE', target.ts)).toEqual([]);
  });
});

describe('indicators of a job that goes on later or elsewhere', () => {
  let slack: FakeSlack;
  let client: WebClient;
  beforeAll(async () => {
    // The Messages-tab conversation below (C0LEAVE gets its messages seeded).
    slack = await FakeSlack.start({ channels: { D0AGENT: { type: 'im', user: 'U0ALICE' } } });
    client = new WebClient(slack.botToken, { slackApiUrl: slack.apiUrl });
  });
  afterAll(() => slack.stop());
  useFakeClock();

  const logger = createLogger({ level: 'silent', secrets: [] });
  const target = (ts: string) => ({ channelId: 'C0LEAVE', ts, replyThreadTs: ts });
  const sessionStatuses = (threadTs: string) =>
    slack
      .callsOf('agents.sessions.setStatus')
      .filter((call) => call.args.thread_ts === threadTs)
      .map((call) => call.args.status);
  const notices = (ts: string) => slack.threadMessages('C0LEAVE', ts).slice(1);

  it('stay shown when left: the reaction, and a slow notice recorded for whoever finishes the job', async () => {
    const indicators = new WorkIndicators(new SlackWrites(client, client, logger), 100);
    const ts = slack.seedMessage('C0LEAVE', { user: 'U0ALICE', text: 'question' });
    const recorded: string[] = [];
    const working = indicators.showWorking(target(ts), {
      onSlowNotice: async (noticeTs) => {
        recorded.push(noticeTs);
      },
    });
    await advance(250);
    await working.end('leave');
    expect(slack.reactionsOn('C0LEAVE', ts).map((r) => r.name)).toEqual(['eyes']);
    expect(notices(ts).map((m) => m.ts)).toEqual(recorded);
    expect(recorded).toHaveLength(1);
  });

  it('take back a slow notice nobody else knows of, and post none once the job is no longer wanted', async () => {
    const indicators = new WorkIndicators(new SlackWrites(client, client, logger), 100);
    const unrecorded = slack.seedMessage('C0LEAVE', { user: 'U0ALICE', text: 'first' });
    const working = indicators.showWorking(target(unrecorded), {
      onSlowNotice: () => Promise.reject(new Error('the job was taken over')),
    });
    await advance(250);
    await working.end('leave');
    expect(slack.callsOf('chat.postMessage').filter((c) => c.args.thread_ts === unrecorded)).toHaveLength(1);
    expect(notices(unrecorded)).toEqual([]);

    const unwanted = slack.seedMessage('C0LEAVE', { user: 'U0ALICE', text: 'second' });
    const unwantedWork = indicators.showWorking(target(unwanted), { stillWanted: async () => false });
    await advance(250);
    await unwantedWork.end('leave');
    expect(slack.callsOf('chat.postMessage').filter((c) => c.args.thread_ts === unwanted)).toEqual([]);
  });

  it('add no delayed working reaction once the job is no longer this process’s', async () => {
    // The reaction waits 150 ms (WORKING_INDICATOR_DELAY_MS); meanwhile another replica took the job over.
    const indicators = new WorkIndicators(new SlackWrites(client, client, logger), 0, 150);
    const ts = slack.seedMessage('C0LEAVE', { user: 'U0ALICE', text: 'taken over' });
    let wanted = true;
    const working = indicators.showWorking(target(ts), { stillWanted: async () => wanted });
    await advance(50);
    wanted = false;
    await advance(300);
    await working.end('leave');
    expect(slack.callsOf('reactions.add').filter((c) => c.args.timestamp === ts)).toEqual([]);
    expect(slack.reactionsOn('C0LEAVE', ts)).toEqual([]);

    // While it is still this process's, the delayed reaction shows.
    const kept = slack.seedMessage('C0LEAVE', { user: 'U0ALICE', text: 'still ours' });
    const keptWork = indicators.showWorking(target(kept), { stillWanted: async () => true });
    await advance(300);
    await keptWork.end('leave');
    expect(slack.reactionsOn('C0LEAVE', kept).map((r) => r.name)).toEqual(['eyes']);
  });

  it('stop setting an agent thread status when left, without making the session active', async () => {
    const indicators = new WorkIndicators(new SlackWrites(client, client, logger), 0, 0);
    const threadTs = '1700000000.000300';
    const working = indicators.showWorking({
      ...target(threadTs),
      channelId: 'D0AGENT',
      agentView: { teamId: 'T0TEAM', initiator: 'U0ALICE' },
    });
    await until(() => sessionStatuses(threadTs).length === 1, 'processing');
    await working.end('leave');
    expect(sessionStatuses(threadTs)).toEqual(['processing']);
    await advance(SESSION_PROCESSING_REFRESH_MS);
    await realSleep(50);
    expect(sessionStatuses(threadTs)).toEqual(['processing']);
  });

  it('stop setting an agent thread status again once the job is no longer this process’s, before it ends', async () => {
    const indicators = new WorkIndicators(new SlackWrites(client, client, logger), 0, 0);
    const threadTs = '1700000000.000400';
    let wanted = true;
    const working = indicators.showWorking(
      {
        ...target(threadTs),
        channelId: 'D0AGENT',
        agentView: { teamId: 'T0TEAM', initiator: 'U0ALICE' },
      },
      { stillWanted: async () => wanted },
    );
    await until(() => sessionStatuses(threadTs).length === 1, 'processing');
    await advance(SESSION_PROCESSING_REFRESH_MS);
    await until(() => sessionStatuses(threadTs).length === 2, 'processing set again');
    // Another replica took the job over (this one stalled): it answers and ends the status itself.
    wanted = false;
    await advance(SESSION_PROCESSING_REFRESH_MS);
    await realSleep(50);
    await working.end('leave');
    expect(sessionStatuses(threadTs)).toEqual(['processing', 'processing']);
  });
});
