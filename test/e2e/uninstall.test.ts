import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type SlackApiCall } from '../fakes/slack.js';
import {
  appMentionEvent,
  nextTs,
  postSignedEvent,
  type SlackEventEnvelope,
  workspaceGoneEvent,
} from '../helpers/slack-events.js';
import { AGENT_ID, metric, type RunningBot, SIGNING_SECRET, startBot } from '../helpers/stack.js';
import { type TestStore, testStore } from '../helpers/stores.js';
import { sleep, waitFor } from '../helpers/wait.js';

const textOf = (call: SlackApiCall) => String(call.args.text);
const sessionIdIn = (text: string) => /^echo\[(s-\d+)#\d+\]/.exec(text)?.[1] ?? '';
const live = (agent: AgentServiceEmulator, agentId = AGENT_ID) =>
  agent
    .sessionsOf(agentId)
    .map((session) => session.uuid)
    .sort();

/**
 * The envelope as Slack sends it for a workspace of an org (Enterprise Grid): `enterprise_id` on the envelope
 * and its authorization (@slack/bolt EnvelopedEvent, Authorization), `is_enterprise_install` when the app is
 * installed org-wide (docs.slack.dev, "Organization-ready apps").
 */
function inOrg<E>(envelope: SlackEventEnvelope<E>, enterpriseId: string, orgInstall: boolean) {
  return {
    ...envelope,
    enterprise_id: enterpriseId,
    is_enterprise_install: orgInstall,
    authorizations: envelope.authorizations.map((entry) => ({
      ...entry,
      enterprise_id: enterpriseId,
      is_enterprise_install: orgInstall,
    })),
  };
}

const env = { SESSION_DELETE_RETRY_MS: '200', AGENT_ROUTES: 'C0ROUTED=agent-b' };
/** An Enterprise Grid org with two workspaces besides the bot's own (preinstalled) workspace. */
const SLACK = {
  orgs: [{ enterpriseId: 'E0ORG', name: 'Org' }],
  workspaces: [
    { teamId: 'T0ORGA', name: 'Org A', enterpriseId: 'E0ORG' },
    { teamId: 'T0ORGB', name: 'Org B', enterpriseId: 'E0ORG' },
  ],
};

/** A first mention in a new thread, answered; its root and session. */
function threadStarter(slack: FakeSlack, send: (body: unknown) => Promise<{ status: number }>) {
  return async (
    channel: string,
    teamId = 'T0TEAM',
    enterpriseId?: string,
  ): Promise<{ root: string; session: string }> => {
    const root = nextTs();
    const event = appMentionEvent({ teamId, channel, user: 'U0ALICE', text: '<@U0BOT> hello', ts: root });
    expect((await send(enterpriseId ? inOrg(event, enterpriseId, false) : event)).status).toBe(200);
    const reply = await slack.waitForCall(
      'chat.postMessage',
      (call) => call.args.thread_ts === root && textOf(call).startsWith('echo'),
    );
    return { root, session: sessionIdIn(textOf(reply)) };
  };
}

/** Each case removes the bot's own workspace (or restarts the bot): a bot of its own. */
describe('uninstall and revocation', () => {
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let bot: RunningBot;
  let cleanup: () => Promise<void>;
  let store: TestStore['store'];

  beforeEach(async () => {
    const prepared = await testStore();
    cleanup = prepared.remove;
    store = prepared.store;
    slack = await FakeSlack.start(SLACK);
    agent = await AgentServiceEmulator.start();
    bot = await startBot({
      slack,
      agent,
      store,
      env,
    });
  });
  afterEach(async () => {
    await bot.stop();
    await Promise.all([slack.stop(), agent.stop(), cleanup()]);
  });

  const send = (body: unknown) => postSignedEvent(bot.eventsUrl, SIGNING_SECRET, body, { via: bot.slack });
  const startThread = (channel: string, teamId?: string, enterpriseId?: string) =>
    threadStarter(slack, send)(channel, teamId, enterpriseId);

  it("deletes the workspace's agent sessions on each one's agent, keeps another workspace's, and drops its waiting work", async () => {
    const plain = await startThread('C0U1');
    await startThread('C0ROUTED');
    const other = await startThread('C0T2', 'T0OTHER');
    expect(live(agent, 'agent-b')).toHaveLength(1);

    // One prompt at the agent (answered once the uninstall has done its work), one more waiting behind it.
    const answer = agent.holdAnswerTo('in flight');
    const mentionIn = (text: string) =>
      send(appMentionEvent({ channel: 'C0U1', user: 'U0ALICE', text, threadTs: plain.root }));
    await mentionIn('<@U0BOT> in flight');
    await waitFor(
      () => agent.requestsFor('sendMessage').some((r) => r.prompt?.includes('in flight')),
      'the prompt reached the agent',
    );
    await mentionIn('<@U0BOT> still waiting');

    const uninstalled = await send(workspaceGoneEvent('app_uninstalled'));
    expect(uninstalled.status).toBe(200);
    await waitFor(
      () => live(agent).length === 1 && live(agent, 'agent-b').length === 0,
      "the workspace's sessions deleted on both agents",
    );
    expect(live(agent)).toEqual([other.session]);
    answer();

    // The answer under way is not posted (its session is gone: no new one is made for it), and the waiting
    // message never reaches the agent.
    const creates = agent.requestsFor('createSession').length;
    await sleep(2_000);
    expect(agent.requestsFor('createSession')).toHaveLength(creates);
    expect(live(agent)).toEqual([other.session]);
    expect(agent.requestsFor('sendMessage').some((r) => r.prompt?.includes('still waiting'))).toBe(false);
    expect(slack.callsOf('chat.postMessage').some((call) => textOf(call).includes('in flight'))).toBe(false);

    // Slack's other event, and a repeated delivery, change nothing more.
    const deletions = agent.requestsFor('deleteSession').length;
    expect((await send(workspaceGoneEvent('tokens_revoked'))).status).toBe(200);
    expect((await send(workspaceGoneEvent('app_uninstalled'))).status).toBe(200);
    await waitFor(
      async () => (await metric(bot, 'workspace_removals_pending')) === 0,
      'no removal left pending',
    );
    expect(agent.requestsFor('deleteSession')).toHaveLength(deletions);
    expect(live(agent)).toEqual([other.session]);
    expect(bot.logs.text).toMatch(/SLACK_BOT_TOKEN no longer works; reinstall the app/);
  });

  it('leaves no session behind that was being made for a first message when the app was uninstalled', async () => {
    const sessionMade = agent.holdSessionCreation();
    const root = nextTs();
    await send(
      appMentionEvent({ channel: 'C0NEW', user: 'U0ALICE', text: '<@U0BOT> first words', ts: root }),
    );
    await waitFor(() => agent.requestsFor('createSession').length === 1, 'the session is being made');
    expect((await send(workspaceGoneEvent('app_uninstalled'))).status).toBe(200);
    // The session comes once the removal has run (it runs after the ack): the job is cancelled by then.
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'removal done');
    sessionMade();
    await waitFor(
      () => agent.requestsFor('deleteSession').length === 1,
      'the session made after the uninstall deleted too',
      10_000,
    );
    expect(live(agent)).toEqual([]);
    expect(agent.requestsFor('sendMessage')).toEqual([]);
    expect(slack.callsOf('chat.postMessage')).toEqual([]);
  });

  it('leaves no session behind that was replacing a lost one (session_not_found) when the app was uninstalled', async () => {
    const thread = await startThread('C0REP');
    // The agent service loses its sessions; the next prompt gets session_not_found and a slow replacement.
    agent.reset();
    const replacementMade = agent.holdSessionCreation();
    await send(
      appMentionEvent({ channel: 'C0REP', user: 'U0ALICE', text: '<@U0BOT> again', threadTs: thread.root }),
    );
    await waitFor(() => agent.requestsFor('createSession').length === 1, 'the replacement is being made');
    expect((await send(workspaceGoneEvent('app_uninstalled'))).status).toBe(200);
    // The replacement comes once the removal has run (it runs after the ack): the job is cancelled by then.
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'removal done');
    replacementMade();
    await waitFor(
      () => agent.requestsFor('deleteSession').some((r) => r.sessionId !== thread.session),
      'the replacement made after the uninstall deleted too',
      10_000,
    );
    expect(live(agent)).toEqual([]);
    // Sent once, to the lost session (which did not run it), and never again to the replacement.
    expect(agent.requestsFor('sendMessage').filter((r) => r.prompt?.includes('again'))).toHaveLength(1);
    expect(
      slack
        .callsOf('chat.postMessage')
        .some((call) => call.args.thread_ts === thread.root && textOf(call).includes('again')),
    ).toBe(false);
  });

  it('takes no event of a workspace the app was removed from until it is installed again (single workspace: a start whose token works)', async () => {
    expect((await send(workspaceGoneEvent('app_uninstalled'))).status).toBe(200);
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'removal done');
    // Slack retries an event it could not deliver (immediately, after 1 and 5 minutes); whether it still
    // delivers a retry once the app is gone, it does not say.
    const late = appMentionEvent({ channel: 'C0LATE', user: 'U0ALICE', text: '<@U0BOT> late', ts: nextTs() });
    const retried = await postSignedEvent(bot.eventsUrl, SIGNING_SECRET, late, {
      via: bot.slack,
      retryNum: 2,
      retryReason: 'http_timeout',
    });
    expect(retried.status).toBe(200);
    await sleep(1_500);
    expect(agent.requestsFor('createSession')).toEqual([]);
    expect(slack.callsOf('chat.postMessage')).toEqual([]);
    // Another workspace is served as before.
    await startThread('C0T2', 'T0OTHER');

    // Reinstalled: in this mode the bot is started with the new token, and auth.test says it works.
    await bot.stop();
    bot = await startBot({ slack, agent, store, env });
    const back = await startThread('C0BACK');
    expect(live(agent)).toContain(back.session);
  });

  it('single workspace: a late retry of the uninstall, delivered after a start with the new token, is ignored', async () => {
    const gone = workspaceGoneEvent('app_uninstalled');
    expect((await send(gone)).status).toBe(200);
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'removal done');
    // Reinstalled in a later second (Slack's event_time is in whole seconds), and started with the new token.
    await waitFor(() => Date.now() >= (gone.event_time + 1) * 1000, 'a second later');
    await bot.stop();
    bot = await startBot({ slack, agent, store, env });
    const back = await startThread('C0BACK');

    // Slack retries an event for up to an hour: the same uninstall again, after the reinstall.
    const retried = await postSignedEvent(bot.eventsUrl, SIGNING_SECRET, gone, {
      via: bot.slack,
      retryNum: 3,
      retryReason: 'http_timeout',
    });
    expect(retried.status).toBe(200);
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'nothing pending');
    await startThread('C0STILL');
    expect(live(agent)).toContain(back.session);
  });

  it("single workspace: Slack's own uninstall ends its conversations, and the bot keeps running and says what to do", async () => {
    const thread = await startThread('C0ONE');
    const { appUninstalled, tokensRevoked } = slack.tenancy.uninstall({ teamId: 'T0TEAM' });
    expect((await send(tokensRevoked)).status).toBe(200);
    expect((await send(appUninstalled)).status).toBe(200);
    await waitFor(() => !live(agent).includes(thread.session), 'its session deleted');
    // Said once the removal is over, which is a moment after its sessions are deleted.
    await waitFor(
      () =>
        /SLACK_BOT_TOKEN no longer works; reinstall the app, set the new token and restart/.test(
          bot.logs.text,
        ),
      'the operator told what to do',
    );
    expect((await fetch(`${bot.adminUrl}/readyz`)).status).toBe(200);
    expect((await fetch(`${bot.baseUrl}/healthz`)).status).toBe(200);
  });
});

/**
 * Each case removes workspaces and orgs of its own, never the bot's, so they share one bot; each counts only
 * the sessions and deletions of its own time (what a fresh agent service would show).
 */
describe('uninstall and revocation of other workspaces and orgs', () => {
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let bot: RunningBot;
  let cleanup: () => Promise<void>;
  /** The agent's sessions and deletions when the case began. */
  let earlier: Set<string>;
  let deletionsEarlier: number;

  beforeAll(async () => {
    const prepared = await testStore();
    cleanup = prepared.remove;
    slack = await FakeSlack.start(SLACK);
    agent = await AgentServiceEmulator.start();
    bot = await startBot({ slack, agent, store: prepared.store, env });
  });
  afterAll(async () => {
    await bot?.stop();
    await Promise.all([slack?.stop(), agent?.stop(), cleanup?.()]);
  });
  beforeEach(() => {
    earlier = new Set(live(agent));
    deletionsEarlier = agent.requestsFor('deleteSession').length;
  });
  // Nothing of a case is left under way when the next begins.
  afterEach(async () => {
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'no removal pending');
  });

  const send = (body: unknown) => postSignedEvent(bot.eventsUrl, SIGNING_SECRET, body, { via: bot.slack });
  const startThread = (channel: string, teamId?: string, enterpriseId?: string) =>
    threadStarter(slack, send)(channel, teamId, enterpriseId);
  /** The sessions made in this case that are still alive. */
  const alive = () => live(agent).filter((session) => !earlier.has(session));
  const deletedSessions = () =>
    agent
      .requestsFor('deleteSession')
      .slice(deletionsEarlier)
      .map((r) => r.sessionId);

  it('cleans up when tokens_revoked comes first, and takes the later app_uninstalled as done', async () => {
    const mine = await startThread('C0R1', 'T0REV');
    const kept = await startThread('C0R2');
    expect((await send(workspaceGoneEvent('tokens_revoked', { teamId: 'T0REV' }))).status).toBe(200);
    await waitFor(() => !alive().includes(mine.session), 'deleted on tokens_revoked');
    expect((await send(workspaceGoneEvent('app_uninstalled', { teamId: 'T0REV' }))).status).toBe(200);
    await sleep(500);
    expect(deletedSessions()).toEqual([mine.session]);
    expect(alive()).toEqual([kept.session]);
  });

  it('ignores a revocation of user tokens only: the bot still works there', async () => {
    const thread = await startThread('C0USR');
    const envelope = workspaceGoneEvent('tokens_revoked');
    envelope.event.tokens = { oauth: ['U0ALICE'], bot: [] };
    expect((await send(envelope)).status).toBe(200);
    await sleep(500);
    expect(alive()).toEqual([thread.session]);
  });

  it("an org-wide uninstall deletes every workspace's sessions in the org, and none outside it", async () => {
    slack.tenancy.install(
      { enterpriseId: 'E0ORG' },
      { installerUserId: 'U0ADMIN', scopes: slack.grantedScopes },
    );
    const first = await startThread('C0ORGA', 'T0ORGA', 'E0ORG');
    const second = await startThread('C0ORGB', 'T0ORGB', 'E0ORG');
    const outside = await startThread('C0SOLO', 'T0SOLO');
    const elsewhere = await startThread('C0ORGC', 'T0ORGC', 'E0OTHER');
    expect(alive()).toEqual([first.session, second.session, outside.session, elsewhere.session].sort());

    // The envelope the fake Slack sends for an org-wide install's uninstall (slack-tenancy.ts says why):
    // team_id null, the org named in authorizations only.
    const orgGone = slack.tenancy.uninstall({ enterpriseId: 'E0ORG' }).appUninstalled;
    expect(orgGone).toMatchObject({
      team_id: null,
      authorizations: [{ enterprise_id: 'E0ORG', is_enterprise_install: true }],
    });
    expect(orgGone).not.toHaveProperty('enterprise_id');
    expect((await send(orgGone)).status).toBe(200);
    await waitFor(() => alive().length === 2, "the org's sessions deleted");
    expect(alive()).toEqual([outside.session, elsewhere.session].sort());
  });

  it("an org-wide uninstall read the other ways Slack may send it (a workspace's id, the org on the envelope) ends the org's sessions", async () => {
    const first = await startThread('C0SECA', 'T0SECA', 'E0SECOND');
    await startThread('C0SECB', 'T0SECB', 'E0SECOND');
    const other = await startThread('C0THIRD', 'T0THIRD', 'E0THIRD');
    const outside = await startThread('C0SOLO2', 'T0SOLO2');
    // One of its workspaces' ids in team_id, the org named in authorizations only.
    const gone = workspaceGoneEvent('app_uninstalled', { teamId: 'T0SECA' });
    const sample = {
      ...gone,
      authorizations: gone.authorizations.map((a) => ({
        ...a,
        enterprise_id: 'E0SECOND',
        is_enterprise_install: true,
      })),
    };
    expect((await send(sample)).status).toBe(200);
    await waitFor(() => !alive().includes(first.session), "the org's sessions deleted");
    await waitFor(() => alive().length === 2, "both of the org's sessions deleted");
    expect(alive()).toEqual([other.session, outside.session].sort());

    // team_id null with the org named on the envelope (an org-level event's shape).
    const orgLevel = { ...inOrg(workspaceGoneEvent('app_uninstalled'), 'E0THIRD', true), team_id: null };
    expect((await send(orgLevel)).status).toBe(200);
    await waitFor(() => !alive().includes(other.session), 'the other org’s session deleted');
    expect(alive()).toEqual([outside.session]);
  });

  it("a workspace's uninstall inside an org leaves the org's other workspaces alone", async () => {
    const gone = await startThread('C0WSA', 'T0WSA', 'E0FOURTH');
    const stays = await startThread('C0WSB', 'T0WSB', 'E0FOURTH');
    const single = inOrg(workspaceGoneEvent('app_uninstalled', { teamId: 'T0WSA' }), 'E0FOURTH', false);
    expect((await send(single)).status).toBe(200);
    await waitFor(() => !alive().includes(gone.session), 'the workspace’s session deleted');
    expect(alive()).toEqual([stays.session]);
  });
});
