import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type SlackApiCall } from '../fakes/slack.js';
import {
  appMentionEvent,
  nextTs,
  postSignedEvent,
  postSignedForm,
  type SlackEventEnvelope,
  slashCommandFields,
  workspaceGoneEvent,
} from '../helpers/slack-events.js';
import { AGENT_ID, type RunningBot, SIGNING_SECRET, startBot } from '../helpers/stack.js';
import { testStore } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const textOf = (call: SlackApiCall) => String(call.args.text);

/** `enterprise_id` on the envelope and its authorization, as Slack sends it from an org's workspace. */
function inOrg<E>(envelope: SlackEventEnvelope<E>, enterpriseId: string, orgInstall = false) {
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

describe('which agent answers: channel, then workspace, then org, then AGENT_ID', () => {
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let bot: RunningBot;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    const prepared = await testStore();
    cleanup = prepared.remove;
    slack = await FakeSlack.start();
    agent = await AgentServiceEmulator.start();
    bot = await startBot({
      slack,
      agent,
      store: prepared.store,
      env: {
        SESSION_DELETE_RETRY_MS: '200',
        AGENT_ROUTES: 'C0CHAN=agent-channel',
        AGENT_WORKSPACE_ROUTES: 'T0WS=agent-workspace',
        AGENT_ORG_ROUTES: 'E0ORG=agent-org',
      },
    });
  });
  afterAll(async () => {
    await bot.stop();
    await Promise.all([slack.stop(), agent.stop(), cleanup()]);
  });

  /** Mentions the bot (in a new thread, or in `threadTs`) and returns the agent that answered and its session. */
  async function ask(
    where: { teamId: string; channel: string; enterpriseId?: string; threadTs?: string },
    words = 'hello',
  ): Promise<{ root: string; agentId: string; session: string }> {
    const ts = nextTs();
    const text = `<@U0BOT> ${words} ${ts}`;
    const event = appMentionEvent({ ...where, user: 'U0ALICE', text, ts });
    const body = where.enterpriseId ? inOrg(event, where.enterpriseId) : event;
    expect((await postSignedEvent(bot.eventsUrl, SIGNING_SECRET, body, { via: bot.slack })).status).toBe(200);
    await slack.waitForCall('chat.postMessage', (call) => textOf(call).endsWith(`${words} ${ts}`));
    const sent = agent
      .requestsFor('sendMessage')
      .find((request) => request.prompt?.endsWith(`${words} ${ts}`));
    return { root: where.threadTs ?? ts, agentId: sent?.agentId ?? '', session: sent?.sessionId ?? '' };
  }

  it('answers each conversation with the agent routed to it, and keeps a thread with its agent', async () => {
    expect((await ask({ teamId: 'T0WS', channel: 'C0CHAN' })).agentId).toBe('agent-channel');
    expect((await ask({ teamId: 'T0WS', channel: 'C0WS1' })).agentId).toBe('agent-workspace');
    expect((await ask({ teamId: 'T0WS', channel: 'C0WS2', enterpriseId: 'E0ORG' })).agentId).toBe(
      'agent-workspace',
    );
    const inOrgThread = await ask({ teamId: 'T0ORGA', channel: 'C0ORG1', enterpriseId: 'E0ORG' });
    expect(inOrgThread.agentId).toBe('agent-org');
    expect((await ask({ teamId: 'T0ORGA', channel: 'C0ORG2', enterpriseId: 'E0OTHER' })).agentId).toBe(
      AGENT_ID,
    );
    expect((await ask({ teamId: 'T0TEAM', channel: 'C0PLAIN' })).agentId).toBe(AGENT_ID);

    // A reply in the org's thread goes on in the same session with the same agent.
    const followUp = await ask(
      { teamId: 'T0ORGA', channel: 'C0ORG1', enterpriseId: 'E0ORG', threadTs: inOrgThread.root },
      'and more',
    );
    expect(followUp).toMatchObject({ agentId: 'agent-org', session: inOrgThread.session });
  });

  it("resets a conversation on its own agent, and an org's uninstall deletes the sessions on the org's agent", async () => {
    const thread = await ask({ teamId: 'T0ORGB', channel: 'C0ORGR', enterpriseId: 'E0ORG' });
    expect(thread.agentId).toBe('agent-org');
    const responseId = `reset-${nextTs()}`;
    const fields = {
      ...slashCommandFields({
        text: 'reset',
        channel: 'C0ORGR',
        user: 'U0ALICE',
        teamId: 'T0ORGB',
        responseUrl: slack.responseUrl(responseId),
      }),
      enterprise_id: 'E0ORG',
    };
    expect((await postSignedForm(bot.eventsUrl, SIGNING_SECRET, fields)).status).toBe(200);
    await waitFor(
      () => !agent.sessionsOf('agent-org').some((session) => session.uuid === thread.session),
      'the reset session deleted on the org agent',
    );

    await ask({ teamId: 'T0ORGB', channel: 'C0ORGS', enterpriseId: 'E0ORG' });
    const elsewhere = await ask({ teamId: 'T0WS', channel: 'C0WS3' });
    expect(agent.sessionsOf('agent-org').length).toBeGreaterThan(0);
    const orgGone = inOrg(workspaceGoneEvent('app_uninstalled', { teamId: 'T0ORGB' }), 'E0ORG', true);
    expect((await postSignedEvent(bot.eventsUrl, SIGNING_SECRET, orgGone, { via: bot.slack })).status).toBe(
      200,
    );
    await waitFor(
      () => agent.sessionsOf('agent-org').length === 0,
      "every session on the org's agent deleted",
    );
    expect(agent.sessionsOf('agent-workspace').map((session) => session.uuid)).toContain(elsewhere.session);
  });
});
