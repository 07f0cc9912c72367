import { randomBytes } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBot } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type FakeSlackOptions } from '../fakes/slack.js';
import { freePort } from '../helpers/free-port.js';
import { installThroughSlack } from '../helpers/oauth-install.js';
import { createTestDatabase, shouldRunPostgresTests } from '../helpers/postgres.js';
import { appMentionEvent, nextTs, postSignedForm, slashCommandFields } from '../helpers/slack-events.js';
import {
  AGENT_ID,
  botEnvironment,
  deliver,
  LogCapture,
  metric,
  type RunningBot,
  SIGNING_SECRET,
  startBot,
} from '../helpers/stack.js';
import { type TestStore, testStore } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

/** The app as distributed (manifest.distributed.yml): OAuth, org-wide installs, token rotation. */
const DISTRIBUTED = new URL('../../manifest.distributed.yml', import.meta.url);
const keyOf = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
const K1 = keyOf('k1');

/** OAuth mode against the fake's app: no bot token, the app's credentials and a key for the stored tokens. */
function oauthEnv(slack: FakeSlack, keys = K1): Record<string, string> {
  return {
    SLACK_BOT_TOKEN: '',
    SLACK_CLIENT_ID: slack.oauth.clientId,
    SLACK_CLIENT_SECRET: slack.oauth.clientSecret,
    SLACK_STATE_SECRET: 'state-secret-of-the-tests-0123',
    TOKEN_ENCRYPTION_KEYS: keys,
  };
}

/** A fake Slack whose app sends installers back to `port`'s redirect URL, as its one configured Redirect URL. */
function startSlack(port: number, options: FakeSlackOptions = {}): Promise<FakeSlack> {
  return FakeSlack.start({
    manifest: DISTRIBUTED,
    preinstalled: false,
    ...options,
    oauth: { redirectUrls: [`http://127.0.0.1:${port}/slack/oauth_redirect`], ...options.oauth },
  });
}

const sessionOf = (text: string) => /^echo\[(s-\d+)#\d+\]/.exec(text)?.[1] ?? '';

/** A person mentions the bot in `channel` of `teamId`; Slack addresses it to the installation serving there. */
function mentionIn(bot: RunningBot, slack: FakeSlack, teamId: string, channel: string, text: string) {
  const ts = nextTs();
  const envelope = slack.tenancy.addressed(appMentionEvent({ teamId, channel, user: 'U0ALICE', text, ts }));
  return { ts, sent: deliver(bot, envelope) };
}

describe('many workspaces, installed with "Add to Slack"', () => {
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let prepared: TestStore;
  let bot: RunningBot;

  beforeAll(async () => {
    const port = await freePort();
    slack = await startSlack(port, {
      workspaces: [
        { teamId: 'T2', name: 'Second' },
        { teamId: 'T3', name: 'Org east', enterpriseId: 'E1' },
        { teamId: 'T4', name: 'Org west', enterpriseId: 'E1' },
        { teamId: 'T5', name: 'Fifth' },
        { teamId: 'T6', name: 'Sixth' },
        { teamId: 'T7', name: 'Seventh' },
        { teamId: 'T8', name: 'Eighth' },
      ],
      orgs: [{ enterpriseId: 'E1', name: 'Org' }],
      channels: {
        C1: {},
        C2: { teamId: 'T2' },
        C3: { teamId: 'T3' },
        C4: { teamId: 'T4' },
        C5: { teamId: 'T5' },
        C6: { teamId: 'T6' },
        C7: { teamId: 'T7' },
        C8: { teamId: 'T8' },
      },
    });
    agent = await AgentServiceEmulator.start();
    prepared = await testStore();
    bot = await startBot({
      slack,
      agent,
      store: prepared.store,
      port,
      env: oauthEnv(slack),
    });
  });
  afterAll(async () => {
    await bot?.stop();
    await Promise.all([slack?.stop(), agent?.stop(), prepared?.remove()]);
  });

  it('installs through Slack from its install page, and answers each workspace with its own token and bot', async () => {
    for (const teamId of ['T0TEAM', 'T2']) {
      const journey = await installThroughSlack(`${bot.baseUrl}/slack/install`, slack, { teamId });
      expect(new URL(journey.authorizeUrl).origin).toBe(new URL(slack.apiUrl).origin);
      expect(journey.status).toBe(200);
    }

    const first = mentionIn(bot, slack, 'T0TEAM', 'C1', '<@U0BOT> hello from one');
    const second = mentionIn(bot, slack, 'T2', 'C2', '<@U0BOTT2> hello from two');
    expect((await first.sent).status).toBe(200);
    expect((await second.sent).status).toBe(200);

    const one = await slack.waitForCall(
      'chat.postMessage',
      (call) => call.args.thread_ts === first.ts,
      15_000,
    );
    const two = await slack.waitForCall(
      'chat.postMessage',
      (call) => call.args.thread_ts === second.ts,
      15_000,
    );
    // Each bot's own mention is taken out of the prompt: the bot knows itself in each workspace.
    expect(one.args.text).toMatch(/^echo\[s-\d+#1\]: hello from one$/);
    expect(two.args.text).toMatch(/^echo\[s-\d+#1\]: hello from two$/);
    expect(one.caller?.teamId).toBe('T0TEAM');
    expect(two.caller?.teamId).toBe('T2');

    // The slash command too: Bolt's authorize finds the workspace's installation in the store.
    const responseId = `help-in-T2-${nextTs()}`;
    const command = await postSignedForm(
      bot.eventsUrl,
      SIGNING_SECRET,
      slashCommandFields({
        teamId: 'T2',
        text: 'help',
        channel: 'C2',
        user: 'U0ALICE',
        responseUrl: slack.responseUrl(responseId),
      }),
    );
    expect(command.status).toBe(200);
    const help = await slack.waitForCall(
      'response_url',
      (call) => call.args.responseId === responseId,
      15_000,
    );
    expect(String(help.args.text)).toContain('/agent');
  });

  it('takes no event from a workspace it was uninstalled from, and answers there again once reinstalled', async () => {
    const answered = async (text: string) => {
      const mention = mentionIn(bot, slack, 'T5', 'C5', `<@U0BOTT5> ${text}`);
      expect((await mention.sent).status).toBe(200);
      return slack.waitForCall('chat.postMessage', (call) => call.args.thread_ts === mention.ts, 15_000);
    };
    await installThroughSlack(`${bot.baseUrl}/slack/install`, slack, { teamId: 'T5' });
    await answered('before');
    const { appUninstalled } = slack.tenancy.uninstall({ teamId: 'T5' });
    expect((await deliver(bot, appUninstalled)).status).toBe(200);
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'removal done');

    const journey = await installThroughSlack(`${bot.baseUrl}/slack/install`, slack, { teamId: 'T5' });
    expect(journey.status).toBe(200);
    const reply = await answered('after the reinstall');
    expect(String(reply.args.text)).toMatch(/after the reinstall$/);
  });

  it('ignores a late redelivery of app_uninstalled that arrives after the workspace installed again', async () => {
    const answered = async (text: string) => {
      const mention = mentionIn(bot, slack, 'T6', 'C6', `<@U0BOTT6> ${text}`);
      expect((await mention.sent).status).toBe(200);
      return slack.waitForCall('chat.postMessage', (call) => call.args.thread_ts === mention.ts, 15_000);
    };
    await installThroughSlack(`${bot.baseUrl}/slack/install`, slack, { teamId: 'T6' });
    const { appUninstalled } = slack.tenancy.uninstall({ teamId: 'T6' });
    expect((await deliver(bot, appUninstalled)).status).toBe(200);
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'removal done');
    // Slack's event_time is in whole seconds: the reinstall comes in a later second, as any real one does.
    await waitFor(() => Date.now() >= (appUninstalled.event_time + 1) * 1000, 'a second later');
    expect((await installThroughSlack(`${bot.baseUrl}/slack/install`, slack, { teamId: 'T6' })).status).toBe(
      200,
    );
    const before = await answered('reinstalled');

    // Slack retries an event for up to an hour: the same uninstall again, after the reinstall.
    const retried = await deliver(bot, appUninstalled, {
      retryNum: 3,
      retryReason: 'http_timeout',
    });
    expect(retried.status).toBe(200);
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'nothing pending');
    const after = await answered('still served');
    expect(String(after.args.text)).toMatch(/still served$/);
    // The same conversation goes on: its agent session was not deleted.
    expect(sessionOf(String(after.args.text))).not.toBe('');
    expect(agent.requestsFor('deleteSession').map((r) => r.sessionId)).not.toContain(
      sessionOf(String(before.args.text)),
    );
  });

  it('keeps a workspace whose calls Slack refuses as invalid_auth (an IP allowlist): it answers there again once the address is allowed', async () => {
    const mention = (text: string) => mentionIn(bot, slack, 'T7', 'C7', `<@U0BOTT7> ${text}`);
    const postIn = (ts: string) =>
      slack.waitForCall('chat.postMessage', (call) => call.args.thread_ts === ts, 15_000);
    await installThroughSlack(`${bot.baseUrl}/slack/install`, slack, { teamId: 'T7' });
    const linesBefore = bot.logs.lines.length;
    const logsSince = () => bot.logs.lines.slice(linesBefore).join('\n');
    const first = mention('before');
    expect((await first.sent).status).toBe(200);
    const before = await postIn(first.ts);

    // invalid_auth is also Slack's answer to a request "from an IP address disallowed from making the request".
    slack.tenancy.refuseAddress({ teamId: 'T7' });
    const during = mention('while refused');
    expect((await during.sent).status).toBe(200);
    await postIn(during.ts);
    await waitFor(
      () => logsSince().includes('Slack refused the bot token of a workspace as invalid_auth'),
      'the refusal logged',
    );

    slack.tenancy.allowAddress({ teamId: 'T7' });
    const after = mention('allowed again');
    expect((await after.sent).status).toBe(200);
    expect(String((await postIn(after.ts)).args.text)).toMatch(/allowed again$/);
    // Nothing was removed: no session of the workspace was deleted, and no removal was recorded.
    expect(agent.requestsFor('deleteSession').map((r) => r.sessionId)).not.toContain(
      sessionOf(String(before.args.text)),
    );
    expect(logsSince()).not.toContain('app removed');
  });

  it('removes a workspace whose token Slack answers token_revoked though its uninstall events never came', async () => {
    const mention = (text: string) => mentionIn(bot, slack, 'T8', 'C8', `<@U0BOTT8> ${text}`);
    await installThroughSlack(`${bot.baseUrl}/slack/install`, slack, { teamId: 'T8' });
    const first = mention('before');
    expect((await first.sent).status).toBe(200);
    const before = await slack.waitForCall(
      'chat.postMessage',
      (call) => call.args.thread_ts === first.ts,
      15_000,
    );
    const session = sessionOf(String(before.args.text));

    // A message whose answer comes after the uninstall, and Slack's app_uninstalled and tokens_revoked never
    // delivered (the bot was unreachable for their retries): the answer's post is what finds the token revoked.
    const release = agent.holdAnswerTo('answered after the uninstall');
    const later = mentionIn(bot, slack, 'T8', 'C8', '<@U0BOTT8> answered after the uninstall');
    expect((await later.sent).status).toBe(200);
    await waitFor(
      () => agent.requestsFor('sendMessage').some((r) => r.prompt === 'answered after the uninstall'),
      'the prompt sent',
    );
    slack.tenancy.uninstall({ teamId: 'T8' });
    release();
    await waitFor(
      () => agent.requestsFor('deleteSession').some((r) => r.sessionId === session),
      "the workspace's session deleted",
      15_000,
    );
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'removal done');
  });

  it('answers in two workspaces of an organisation from one org-wide install', async () => {
    const journey = await installThroughSlack(`${bot.baseUrl}/slack/install`, slack, { enterpriseId: 'E1' });
    expect(journey.status).toBe(200);

    const east = mentionIn(bot, slack, 'T3', 'C3', '<@U0BOTE1> east here');
    const west = mentionIn(bot, slack, 'T4', 'C4', '<@U0BOTE1> west here');
    expect((await east.sent).status).toBe(200);
    expect((await west.sent).status).toBe(200);

    const inEast = await slack.waitForCall(
      'chat.postMessage',
      (call) => call.args.thread_ts === east.ts,
      15_000,
    );
    const inWest = await slack.waitForCall(
      'chat.postMessage',
      (call) => call.args.thread_ts === west.ts,
      15_000,
    );
    expect(inEast.args.text).toMatch(/: east here$/);
    expect(inWest.args.text).toMatch(/: west here$/);
    for (const call of [inEast, inWest]) {
      expect(call.caller).toMatchObject({ enterpriseId: 'E1', isEnterpriseInstall: true });
    }
  });

  it("an org admin removing the org-wide app from one workspace ends that workspace's conversations only; adding it back serves it again", async () => {
    const started = async (teamId: string, channel: string, text: string) => {
      const mention = mentionIn(bot, slack, teamId, channel, `<@U0BOTE1> ${text}`);
      expect((await mention.sent).status).toBe(200);
      const reply = await slack.waitForCall(
        'chat.postMessage',
        (call) => call.args.thread_ts === mention.ts,
        15_000,
      );
      return sessionOf(String(reply.args.text));
    };
    const east = await started('T3', 'C3', 'east stays');
    const west = await started('T4', 'C4', 'west goes');
    const alive = () => agent.sessionsOf(AGENT_ID).map((session) => session.uuid);

    const revoked = slack.tenancy.removeFromWorkspace('E1', 'T4');
    expect(revoked).toMatchObject({ team_id: null, enterprise_id: 'E1', event: { team_ids: ['T4'] } });
    expect((await deliver(bot, revoked)).status).toBe(200);
    await waitFor(() => !alive().includes(west), "the workspace's session deleted");
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'removal done');
    expect(alive()).toContain(east);

    // Delivered again: nothing more is deleted.
    const deletions = agent.requestsFor('deleteSession').length;
    expect((await deliver(bot, revoked)).status).toBe(200);
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'nothing pending');
    expect(agent.requestsFor('deleteSession')).toHaveLength(deletions);
    expect(alive()).toContain(east);

    // Added back (in a later second than the removal was recorded: Slack's event_time is in whole seconds,
    // and an add is taken as sent after a removal only if its second is): the org install serves it again.
    const removedAt = Date.now();
    await waitFor(() => Date.now() >= (Math.floor(removedAt / 1000) + 1) * 1000, 'a second later');
    const granted = slack.tenancy.addToWorkspace('E1', 'T4');
    expect(granted).toMatchObject({ team_id: null, enterprise_id: 'E1', event: { team_ids: ['T4'] } });
    expect((await deliver(bot, granted)).status).toBe(200);
    expect(await started('T4', 'C4', 'west is back')).not.toBe('');
  });

  it('a late retry of adding the org-wide app to a workspace, arriving after it was removed from it again, does not serve it again', async () => {
    const refused = async () =>
      (await metric(bot, 'slack_events_ignored_total{type="app_mention",reason="workspace-removed"}')) ?? 0;
    const granted = slack.tenancy.addToWorkspace('E1', 'T4');
    expect((await deliver(bot, granted)).status).toBe(200);
    // A mention sent while the app served there, whose delivery failed: Slack retries it for up to an hour.
    const ts = nextTs();
    const mention = slack.tenancy.addressed(
      appMentionEvent({ teamId: 'T4', channel: 'C4', user: 'U0ALICE', text: '<@U0BOTE1> late', ts }),
    );
    const revoked = slack.tenancy.removeFromWorkspace('E1', 'T4');
    expect((await deliver(bot, revoked)).status).toBe(200);
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'removal done');

    const retry = { retryNum: 1, retryReason: 'http_timeout' };
    expect((await deliver(bot, granted, retry)).status).toBe(200);
    const before = await refused();
    expect((await deliver(bot, mention, retry)).status).toBe(200);
    expect(await refused()).toBe(before + 1);
    expect(slack.callsOf('chat.postMessage').some((call) => call.args.thread_ts === ts)).toBe(false);
  });

  it('an org-wide uninstall does not refuse a workspace of the org that then installs the app on its own', async () => {
    const { appUninstalled } = slack.tenancy.uninstall({ enterpriseId: 'E1' });
    expect((await deliver(bot, appUninstalled)).status).toBe(200);
    await waitFor(async () => (await metric(bot, 'workspace_removals_pending')) === 0, 'removal done');

    const journey = await installThroughSlack(`${bot.baseUrl}/slack/install`, slack, { teamId: 'T3' });
    expect(journey.status).toBe(200);
    const east = mentionIn(bot, slack, 'T3', 'C3', '<@U0BOTT3> on our own now');
    expect((await east.sent).status).toBe(200);
    const reply = await slack.waitForCall(
      'chat.postMessage',
      (call) => call.args.thread_ts === east.ts,
      15_000,
    );
    expect(reply.args.text).toMatch(/: on our own now$/);
    expect(reply.caller).toMatchObject({ teamId: 'T3', isEnterpriseInstall: false });
  });
});

describe('stored tokens and their keys', () => {
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let prepared: TestStore;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    slack = await startSlack(port);
    agent = await AgentServiceEmulator.start();
    prepared = await testStore();
    const bot = await startBot({
      slack,
      agent,
      store: prepared.store,
      port,
      env: oauthEnv(slack),
    });
    expect(
      (await installThroughSlack(`${bot.baseUrl}/slack/install`, slack, { teamId: 'T0TEAM' })).status,
    ).toBe(200);
    await bot.stop();
  });
  afterAll(async () => {
    await Promise.all([slack?.stop(), agent?.stop(), prepared?.remove()]);
  });

  it('refuses to start, in one line naming the variable and the key, when no configured key opens them', async () => {
    const env = botEnvironment(
      { slack, agent, store: prepared.store, env: oauthEnv(slack, keyOf('k2')) },
      port,
      await freePort(),
    );
    const config = loadConfig(env);
    const failure = await createBot(
      config,
      createLogger({ level: 'silent', secrets: [], destination: new LogCapture() }),
    ).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(AggregateError);
    const messages = (failure as AggregateError).errors.map((error: Error) => error.message);
    expect(messages).toEqual([
      expect.stringMatching(
        /^TOKEN_ENCRYPTION_KEYS does not open the stored tokens of team:T0TEAM: a stored token is sealed under key "k1", which no configured key is/,
      ),
    ]);
  });
});

/** Replicas of the distributed app on one PostgreSQL, installed in T0TEAM, whose tokens live 6 s. */
interface RotatingReplicas {
  slack: FakeSlack;
  agent: AgentServiceEmulator;
  replicas: RunningBot[];
  stop(): Promise<void>;
}

/** One replica per entry of `extraEnv` (its variables beside the OAuth ones); the first serves the install. */
async function startRotatingReplicas(extraEnv: Record<string, string>[]): Promise<RotatingReplicas> {
  const port = await freePort();
  // Tokens live 6 s, so they are refreshed (past half their life) within a test.
  const slack = await startSlack(port, { tokenRotation: { lifetimeSeconds: 6 } });
  const agent = await AgentServiceEmulator.start();
  const database = await createTestDatabase({ schema: 'current' });
  const store = { kind: 'postgres', databaseUrl: database.url } as const;
  const replicas: RunningBot[] = [];
  for (const [index, env] of extraEnv.entries())
    replicas.push(
      await startBot({
        slack,
        agent,
        store,
        ...(index === 0 ? { port } : {}),
        env: { ...oauthEnv(slack), ...env },
      }),
    );
  const [first] = replicas;
  if (!first) throw new Error('no replica');
  expect(
    (await installThroughSlack(`${first.baseUrl}/slack/install`, slack, { teamId: 'T0TEAM' })).status,
  ).toBe(200);
  return {
    slack,
    agent,
    replicas,
    async stop() {
      await Promise.all(replicas.map((replica) => replica.stop()));
      await Promise.all([slack.stop(), agent.stop()]);
      await database.drop();
    },
  };
}

describe.runIf(await shouldRunPostgresTests())('token rotation between two replicas', () => {
  let rotating: RotatingReplicas | undefined;
  let slack: FakeSlack;
  let replicas: RunningBot[] = [];

  beforeAll(async () => {
    rotating = await startRotatingReplicas([{}, {}]);
    ({ slack, replicas } = rotating);
  });
  afterAll(() => rotating?.stop());

  it('spends each refresh token once while both replicas answer at the same moment', async () => {
    await setTimeout(3_500);
    const mentions = replicas.flatMap((replica, index) =>
      [1, 2].map((n) => mentionIn(replica, slack, 'T0TEAM', 'C1', `<@U0BOT> replica ${index} asks ${n}`)),
    );
    for (const { sent } of mentions) expect((await sent).status).toBe(200);
    for (const { ts } of mentions)
      await slack.waitForCall('chat.postMessage', (call) => call.args.thread_ts === ts, 15_000);

    const refreshes = slack
      .callsOf('oauth.v2.access')
      .filter((call) => call.args.grant_type === 'refresh_token')
      .map((call) => call.args.refresh_token);
    expect(refreshes.length).toBeGreaterThanOrEqual(1);
    expect(new Set(refreshes).size).toBe(refreshes.length);
    for (const replica of replicas) {
      expect(await metric(replica, 'slack_token_refreshes_total{outcome="failed"}')).toBeUndefined();
      expect(replica.logs.text).not.toContain('could not refresh the bot token');
      // Debug-level logs, and not one of the tokens the bot held, nor the app's secrets.
      for (const secret of [...refreshes, slack.oauth.clientSecret])
        expect(replica.logs.text).not.toContain(secret);
    }
  });

  it('records the uninstall of a workspace whose token expired meanwhile: its refresh is revoked with it', async () => {
    // Quiet past the token's life: the next use would refresh it, which Slack refuses once the app is removed
    // ("An app is not uninstalled until its final user and bot tokens are revoked", app_uninstalled).
    await setTimeout(6_500);
    const [replica] = replicas;
    if (!replica) throw new Error('no replica');
    const { appUninstalled } = slack.tenancy.uninstall({ teamId: 'T0TEAM' });
    expect((await deliver(replica, appUninstalled)).status).toBe(200);
    await waitFor(
      () => replica.logs.text.includes('app removed; its waiting work and agent sessions are being dropped'),
      'the removal recorded',
    );
  });
});

describe.runIf(await shouldRunPostgresTests())(
  'token rotation on a replica with few store connections',
  () => {
    let rotating: RotatingReplicas | undefined;
    let slack: FakeSlack;
    let replica: RunningBot;

    beforeAll(async () => {
      rotating = await startRotatingReplicas([{ DATABASE_POOL_SIZE: '2' }]);
      slack = rotating.slack;
      replica = rotating.replicas[0] as RunningBot;
    });
    afterAll(() => rotating?.stop());

    it('keeps the tokens of a refresh made while every store connection waits for it', async () => {
      // Many lookups of the token at once, each of which would wait for the refresh's lock on a connection of
      // its own: the refresh must still store what Slack gave it, for Slack has spent the old refresh token.
      for (const round of [1, 2]) {
        await setTimeout(3_500);
        const mentions = Array.from({ length: 8 }, (_, n) =>
          mentionIn(replica, slack, 'T0TEAM', 'C1', `<@U0BOT> round ${round} asks ${n}`),
        );
        for (const { sent } of mentions) expect((await sent).status).toBe(200);
        for (const { ts } of mentions)
          await slack.waitForCall('chat.postMessage', (call) => call.args.thread_ts === ts, 15_000);
      }
      expect(await metric(replica, 'slack_token_refreshes_total{outcome="failed"}')).toBeUndefined();
    });
  },
);

describe('OAuth in Socket Mode', () => {
  it('serves the install pages and the health endpoints on PORT, and answers over the WebSocket', async () => {
    const port = await freePort();
    const slack = await startSlack(port);
    const agent = await AgentServiceEmulator.start();
    const prepared = await testStore();
    const bot = await startBot({
      slack,
      agent,
      store: prepared.store,
      port,
      socketMode: true,
      env: oauthEnv(slack),
    });
    try {
      await slack.waitForSocketConnection();
      expect((await fetch(`${bot.baseUrl}/healthz`)).status).toBe(200);
      expect(
        (await installThroughSlack(`${bot.baseUrl}/slack/install`, slack, { teamId: 'T0TEAM' })).status,
      ).toBe(200);

      const ts = nextTs();
      await slack.sendSocketEvent(
        slack.tenancy.addressed(
          appMentionEvent({
            teamId: 'T0TEAM',
            channel: 'C0SOCK',
            user: 'U0ALICE',
            text: '<@U0BOT> over the socket',
            ts,
          }),
        ),
      );
      const reply = await slack.waitForCall('chat.postMessage', (call) => call.args.thread_ts === ts, 15_000);
      expect(reply.args.text).toMatch(/: over the socket$/);
      expect(reply.caller?.teamId).toBe('T0TEAM');
    } finally {
      await bot.stop();
      await Promise.all([slack.stop(), agent.stop(), prepared.remove()]);
    }
  });
});
