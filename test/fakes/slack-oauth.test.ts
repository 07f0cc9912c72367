import { App, type Installation, MemoryInstallationStore } from '@slack/bolt';
import { retryPolicies, WebClient } from '@slack/web-api';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/free-port.js';
import { installThroughSlack } from '../helpers/oauth-install.js';
import { appMentionEvent, postSignedEvent } from '../helpers/slack-events.js';
import { silentSlackLogger } from '../helpers/slack-logger.js';
import { waitFor } from '../helpers/wait.js';
import { DEFAULT_SCOPES, FakeSlack, type FakeSlackOptions } from './slack.js';

const SIGNING_SECRET = 'oauth-signing-secret';

/** Two workspaces of their own (T1, T2) and an org (E1) of two more (T3, T4), each with a channel. */
const TENANTS: FakeSlackOptions = {
  preinstalled: false,
  teamId: 'T1',
  teamName: 'First',
  botUserId: 'U0BOTT1',
  workspaces: [
    { teamId: 'T2', name: 'Second' },
    { teamId: 'T3', name: 'Grid East', enterpriseId: 'E1' },
    { teamId: 'T4', name: 'Grid West', enterpriseId: 'E1' },
  ],
  orgs: [{ enterpriseId: 'E1', name: 'Grid' }],
  channels: {
    C1: { name: 'first' },
    C2: { name: 'second', teamId: 'T2' },
    C3: { name: 'east', teamId: 'T3' },
    C4: { name: 'west', teamId: 'T4' },
  },
  oauth: { orgDeployEnabled: true, redirectUrls: ['https://bridge.example.com/slack/oauth_redirect'] },
};

let slack: FakeSlack | undefined;
let app: App | undefined;
afterEach(async () => {
  await app?.stop();
  await slack?.stop();
  app = undefined;
  slack = undefined;
});

function client(
  fake: FakeSlack,
  token?: string,
  options: { rejectRateLimitedCalls?: boolean } = {},
): WebClient {
  return new WebClient(token, {
    slackApiUrl: fake.apiUrl,
    logger: silentSlackLogger(),
    retryConfig: retryPolicies.rapidRetryPolicy,
    ...options,
  });
}

function authorizeUrl(fake: FakeSlack, params: Record<string, string> = {}): string {
  const url = new URL(`http://127.0.0.1:${fake.port}/oauth/v2/authorize`);
  const all = {
    client_id: fake.oauth.clientId,
    scope: DEFAULT_SCOPES.join(','),
    redirect_uri: 'https://bridge.example.com/slack/oauth_redirect',
    state: 'st-1',
    ...params,
  };
  for (const [key, value] of Object.entries(all)) url.searchParams.set(key, value);
  return url.toString();
}

/** Allow on the consent page, then the code exchange, as an app's redirect handler does it. */
async function install(fake: FakeSlack, choice: Parameters<FakeSlack['oauth']['approve']>[1]) {
  const redirect = new URL(fake.oauth.approve(authorizeUrl(fake), choice));
  return client(fake).oauth.v2.access({
    client_id: fake.oauth.clientId,
    client_secret: fake.oauth.clientSecret,
    code: redirect.searchParams.get('code') ?? '',
    redirect_uri: 'https://bridge.example.com/slack/oauth_redirect',
  });
}

function refusalOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => 'ok',
    (error: { data?: { error?: string } }) => error.data?.error,
  );
}

describe('the fake Slack consent page', () => {
  it('shows what the app asks for, and where it can go: workspaces, and orgs for an org-ready app', async () => {
    slack = await FakeSlack.start(TENANTS);
    const page = await fetch(authorizeUrl(slack));
    expect(page.status).toBe(200);
    const html = await page.text();
    for (const text of ['team:T1', 'team:T2', 'team:T3', 'org:E1', 'chat:write'])
      expect(html).toContain(text);
  });

  it('redirects back with a code and the state on Allow, and with access_denied on Cancel', async () => {
    slack = await FakeSlack.start(TENANTS);
    const form = (decision: string) =>
      fetch(`http://127.0.0.1:${slack?.port}/oauth/v2/authorize`, {
        method: 'POST',
        body: new URLSearchParams({
          ...Object.fromEntries(new URL(authorizeUrl(slack!)).searchParams),
          decision,
          install_on: 'team:T2',
        }),
        redirect: 'manual',
      });
    const allowed = new URL((await form('allow')).headers.get('location') ?? '');
    expect(allowed.origin + allowed.pathname).toBe('https://bridge.example.com/slack/oauth_redirect');
    expect(allowed.searchParams.get('code')).toMatch(/^\d+\.[0-9a-f]{32}$/);
    expect(allowed.searchParams.get('state')).toBe('st-1');
    const cancelled = new URL((await form('cancel')).headers.get('location') ?? '');
    expect(Object.fromEntries(cancelled.searchParams)).toEqual({ error: 'access_denied', state: 'st-1' });
  });

  it('shows an error instead of redirecting for a wrong client id, no scope, or a Redirect URL the app lacks', async () => {
    slack = await FakeSlack.start({
      ...TENANTS,
      oauth: { redirectUrls: ['https://bridge.example.com/slack/'] },
    });
    const refused: Record<string, string>[] = [
      { client_id: 'nope' },
      { scope: '' },
      { redirect_uri: 'https://evil.example.com/slack/oauth_redirect' },
    ];
    for (const params of refused) {
      const page = await fetch(authorizeUrl(slack, params), { redirect: 'manual' });
      expect(page.status).toBe(400);
    }
    expect((await fetch(authorizeUrl(slack), { redirect: 'manual' })).status).toBe(200);
  });

  it('takes a redirect_uri only at a Redirect URL of the app or beneath it: same scheme, host and port, whole path segments', async () => {
    slack = await FakeSlack.start(TENANTS);
    const status = async (redirectUri: string) =>
      (await fetch(authorizeUrl(slack!, { redirect_uri: redirectUri }), { redirect: 'manual' })).status;
    for (const taken of [
      'https://bridge.example.com/slack/oauth_redirect',
      'https://bridge.example.com/slack/oauth_redirect/',
      'https://bridge.example.com/slack/oauth_redirect/team/T2',
      'https://bridge.example.com:443/slack/oauth_redirect',
    ])
      expect(await status(taken), taken).toBe(200);
    for (const refused of [
      'https://bridge.example.com/slack/oauth_redirect_evil',
      'https://bridge.example.com/slack/oauth_redirect.evil.com',
      'https://bridge.example.com/slack/oauth',
      'https://bridge.example.com/slack/oauth_redirect/../install',
      'http://bridge.example.com/slack/oauth_redirect',
      'https://bridge.example.com:8443/slack/oauth_redirect',
      'https://bridge.example.com.evil.com/slack/oauth_redirect',
      'https://evil@bridge.example.com/slack/oauth_redirect',
      'not a url',
    ])
      expect(await status(refused), refused).toBe(400);
  });

  it('refuses every install of an app with no Redirect URL, whether or not it names a redirect_uri', async () => {
    slack = await FakeSlack.start({ ...TENANTS, oauth: { orgDeployEnabled: true } });
    const fake = slack;
    const page = await fetch(authorizeUrl(fake), { redirect: 'manual' });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('redirect_uri did not match any configured URIs');
    const without = authorizeUrl(fake).replace(/&redirect_uri=[^&]*/, '');
    expect(() => fake.oauth.approve(without, { teamId: 'T2' })).toThrow('redirect_uri is missing');
  });

  it('sends an install that names no redirect_uri to the one Redirect URL the app has', async () => {
    slack = await FakeSlack.start({ ...TENANTS, oauth: { orgDeployEnabled: true } });
    const fake = slack;
    const without = authorizeUrl(fake).replace(/&redirect_uri=[^&]*/, '');
    expect(() => fake.oauth.approve(without, { teamId: 'T2' })).toThrow('redirect_uri is missing');
    fake.oauth.setRedirectUrls(['http://127.0.0.1:1234/slack/oauth_redirect']);
    const back = new URL(fake.oauth.approve(without, { teamId: 'T2' }));
    expect(back.origin + back.pathname).toBe('http://127.0.0.1:1234/slack/oauth_redirect');
    // The code is then exchanged without a redirect_uri, as none was sent.
    const granted = await client(fake).oauth.v2.access({
      client_id: fake.oauth.clientId,
      client_secret: fake.oauth.clientSecret,
      code: back.searchParams.get('code') ?? '',
    });
    expect(granted.team).toEqual({ id: 'T2', name: 'Second' });
  });

  it('offers no org-wide install for an app without org_deploy_enabled', async () => {
    slack = await FakeSlack.start({ ...TENANTS, oauth: { redirectUrls: TENANTS.oauth?.redirectUrls } });
    expect(await (await fetch(authorizeUrl(slack))).text()).not.toContain('org:E1');
    expect(() => slack?.oauth.approve(authorizeUrl(slack), { enterpriseId: 'E1' })).toThrow(
      'org_deploy_enabled',
    );
  });
});

describe('oauth.v2.access', () => {
  it('exchanges a code for the workspace bot token, which acts there and nowhere else', async () => {
    slack = await FakeSlack.start(TENANTS);
    const granted = await install(slack, { teamId: 'T2', userId: 'U2ADMIN' });
    expect(granted).toMatchObject({
      ok: true,
      token_type: 'bot',
      scope: DEFAULT_SCOPES.join(','),
      bot_user_id: 'U0BOTT2',
      app_id: slack.appId,
      team: { id: 'T2', name: 'Second' },
      enterprise: null,
      is_enterprise_install: false,
      authed_user: { id: 'U2ADMIN' },
    });
    expect(granted.access_token).toMatch(/^xoxb-/);
    expect(granted).not.toHaveProperty('refresh_token');
    const bot = client(slack, granted.access_token);
    expect(await bot.auth.test()).toMatchObject({ team_id: 'T2', team: 'Second', user_id: 'U0BOTT2' });
    const posted = await bot.chat.postMessage({ channel: 'C2', text: 'hello' });
    expect(posted.message).toMatchObject({ user: 'U0BOTT2', team: 'T2' });
    expect(slack.callsOf('chat.postMessage')[0]?.caller).toMatchObject({ installation: 'T2', teamId: 'T2' });
    // Another workspace's channel does not exist for this token.
    expect(await refusalOf(bot.chat.postMessage({ channel: 'C1', text: 'hello' }))).toBe('channel_not_found');
    expect(await refusalOf(bot.conversations.info({ channel: 'C3' }))).toBe('channel_not_found');
  });

  it("gives each workspace's token an allowance of its own: one workspace's calls do not throttle another's", async () => {
    // Slack's limits are per app and workspace (docs.slack.dev/apis/web-api/rate-limits).
    slack = await FakeSlack.start({ ...TENANTS, rateLimits: { 'auth.test': { perMinute: 1, burst: 1 } } });
    const first = await install(slack, { teamId: 'T1', userId: 'U1ADMIN' });
    const second = await install(slack, { teamId: 'T2', userId: 'U2ADMIN' });
    const fake = slack;
    const throttled = (token?: string) =>
      client(fake, token, { rejectRateLimitedCalls: true })
        .auth.test()
        .then(
          () => 'ok',
          (error: { code?: string }) => error.code,
        );
    expect(await throttled(first.access_token)).toBe('ok');
    expect(await throttled(first.access_token)).toBe('slack_webapi_rate_limited_error');
    expect(await throttled(second.access_token)).toBe('ok');
  });

  it('refuses a wrong client id or secret, a spent or unknown code, another redirect_uri and an unknown grant', async () => {
    slack = await FakeSlack.start(TENANTS);
    const fake = slack;
    const code = () =>
      new URL(fake.oauth.approve(authorizeUrl(fake), { teamId: 'T2' })).searchParams.get('code') ?? '';
    const access = (args: Record<string, string>) =>
      refusalOf(
        client(fake).oauth.v2.access({
          client_id: fake.oauth.clientId,
          client_secret: fake.oauth.clientSecret,
          redirect_uri: 'https://bridge.example.com/slack/oauth_redirect',
          ...args,
        }),
      );
    expect(await access({ code: code(), client_id: 'nope' })).toBe('invalid_client_id');
    expect(await access({ code: code(), client_secret: 'nope' })).toBe('bad_client_secret');
    expect(await access({ code: 'made-up' })).toBe('invalid_code');
    expect(await access({ code: code(), redirect_uri: 'https://bridge.example.com/other' })).toBe(
      'bad_redirect_uri',
    );
    expect(await access({ code: code(), grant_type: 'password' })).toBe('invalid_grant_type');
    const once = code();
    expect(await access({ code: once })).toBe('ok');
    expect(await access({ code: once })).toBe('invalid_code');
  });

  it('installs org-wide: one token for every workspace of the org, none outside it', async () => {
    slack = await FakeSlack.start(TENANTS);
    const granted = await install(slack, { enterpriseId: 'E1' });
    expect(granted).toMatchObject({
      team: null,
      enterprise: { id: 'E1', name: 'Grid' },
      is_enterprise_install: true,
      bot_user_id: 'U0BOTE1',
    });
    const bot = client(slack, granted.access_token);
    expect(await bot.auth.test()).toMatchObject({
      team_id: 'E1',
      enterprise_id: 'E1',
      is_enterprise_install: true,
      url: 'https://grid.enterprise.slack.com/',
    });
    await bot.chat.postMessage({ channel: 'C3', text: 'east' });
    await bot.chat.postMessage({ channel: 'C4', text: 'west' });
    expect(await refusalOf(bot.chat.postMessage({ channel: 'C2', text: 'no' }))).toBe('channel_not_found');
    // A workspace install in an org that has the app org-wide is refused.
    expect(await refusalOf(install(slack, { teamId: 'T3' }))).toBe('cannot_install_an_org_installed_app');
  });

  it('serves only the org workspaces the admin added the org-wide app to', async () => {
    slack = await FakeSlack.start(TENANTS);
    const granted = await install(slack, { enterpriseId: 'E1' });
    const bot = client(slack, granted.access_token);
    slack.tenancy.install(
      { enterpriseId: 'E1' },
      { installerUserId: 'U0ADMIN', scopes: DEFAULT_SCOPES, teams: ['T3'] },
    );
    const narrow = slack.tenancy.installation('E1');
    expect([...(narrow?.teams ?? [])]).toEqual(['T3']);
    // The earlier token belongs to the earlier installation, which served both.
    await bot.chat.postMessage({ channel: 'C4', text: 'still' });
    slack.tenancy.addToWorkspace('E1', 'T4');
    expect([...(slack.tenancy.installation('E1')?.teams ?? [])].sort()).toEqual(['T3', 'T4']);
  });
});

describe('an app created from manifest.distributed.yml', () => {
  it('installs org-wide and gets expiring tokens with refresh tokens, as its settings say', async () => {
    const { oauth: _oauth, ...tenants } = TENANTS;
    slack = await FakeSlack.start({
      ...tenants,
      manifest: new URL('../../manifest.distributed.yml', import.meta.url),
      // The manifest's Redirect URL with YOUR-HOST replaced, as the set-up guide says.
      oauth: { redirectUrls: TENANTS.oauth?.redirectUrls },
    });
    const granted = await install(slack, { enterpriseId: 'E1' });
    expect(granted).toMatchObject({ is_enterprise_install: true, expires_in: 43_200 });
    expect(granted.refresh_token).toMatch(/^xoxe-1-/);
    expect(granted.scope?.split(',').sort()).toEqual([...slack.grantedScopes].sort());
  });
});

describe('token rotation', () => {
  it('issues expiring tokens and single-use refresh tokens; a spent one answers invalid_refresh_token', async () => {
    slack = await FakeSlack.start({ ...TENANTS, tokenRotation: { lifetimeSeconds: 600 } });
    const fake = slack;
    const granted = await install(fake, { teamId: 'T2' });
    expect(granted).toMatchObject({ expires_in: 600 });
    expect(granted.access_token).toMatch(/^xoxe\.xoxb-1-/);
    expect(granted.refresh_token).toMatch(/^xoxe-1-/);
    const refresh = (token: string) =>
      client(fake).oauth.v2.access({
        client_id: fake.oauth.clientId,
        client_secret: fake.oauth.clientSecret,
        grant_type: 'refresh_token',
        refresh_token: token,
      });
    const next = await refresh(granted.refresh_token ?? '');
    expect(next).toMatchObject({ ok: true, token_type: 'bot', expires_in: 600, team: { id: 'T2' } });
    expect(next.refresh_token).not.toBe(granted.refresh_token);
    expect(await refusalOf(refresh(granted.refresh_token ?? ''))).toBe('invalid_refresh_token');
    // The new token works; the one it replaced answers token_expired (the fake's strict reading).
    await client(fake, next.access_token).auth.test();
    expect(await refusalOf(client(fake, granted.access_token).auth.test())).toBe('token_expired');
  });

  it('keeps a superseded token working until its expiry when told to, and expires tokens on time', async () => {
    slack = await FakeSlack.start({
      ...TENANTS,
      tokenRotation: { lifetimeSeconds: 1, keepSupersededTokens: true },
    });
    const granted = await install(slack, { teamId: 'T2' });
    await client(slack).oauth.v2.access({
      client_id: slack.oauth.clientId,
      client_secret: slack.oauth.clientSecret,
      grant_type: 'refresh_token',
      refresh_token: granted.refresh_token ?? '',
    });
    const old = client(slack, granted.access_token);
    await old.auth.test();
    await waitFor(
      async () => (await refusalOf(old.auth.test())) === 'token_expired',
      'the token to expire',
      3000,
    );
  });
});

describe('uninstalls and revocations', () => {
  it('revoke the tokens, which then answer token_revoked, and give both events to deliver', async () => {
    slack = await FakeSlack.start({ ...TENANTS, tokenRotation: true });
    const granted = await install(slack, { teamId: 'T2' });
    const { appUninstalled, tokensRevoked } = slack.tenancy.uninstall({ teamId: 'T2' });
    expect(appUninstalled).toMatchObject({ team_id: 'T2', event: { type: 'app_uninstalled' } });
    expect(tokensRevoked).toMatchObject({
      team_id: 'T2',
      event: { type: 'tokens_revoked', tokens: { oauth: [], bot: ['U0BOTT2'] } },
      authorizations: [{ team_id: 'T2', user_id: 'U0BOTT2', is_enterprise_install: false }],
    });
    const bot = client(slack, granted.access_token);
    expect(await refusalOf(bot.chat.postMessage({ channel: 'C2', text: 'x' }))).toBe('token_revoked');
    expect(
      await refusalOf(
        client(slack).oauth.v2.access({
          client_id: slack.oauth.clientId,
          client_secret: slack.oauth.clientSecret,
          grant_type: 'refresh_token',
          refresh_token: granted.refresh_token ?? '',
        }),
      ),
    ).toBe('invalid_refresh_token');
    expect(slack.tenancy.installationFor('T2')).toBeUndefined();
  });

  it('can answer invalid_auth or account_inactive instead, and names the org for an org-wide uninstall', async () => {
    slack = await FakeSlack.start(TENANTS);
    const workspace = await install(slack, { teamId: 'T2' });
    const org = await install(slack, { enterpriseId: 'E1' });
    slack.tenancy.revokeTokens({ teamId: 'T2' }, 'invalid_auth');
    expect(await refusalOf(client(slack, workspace.access_token).auth.test())).toBe('invalid_auth');
    const { appUninstalled } = slack.tenancy.uninstall({ enterpriseId: 'E1' }, 'account_inactive');
    // The strict reading: no workspace (team_id null), the org named in authorizations only.
    expect(appUninstalled).toMatchObject({
      team_id: null,
      authorizations: [{ enterprise_id: 'E1', team_id: null, is_enterprise_install: true }],
    });
    expect(appUninstalled).not.toHaveProperty('enterprise_id');
    expect(await refusalOf(client(slack, org.access_token).auth.test())).toBe('account_inactive');
  });
});

describe('events addressed to an installation', () => {
  it('carry the org, the context and the installation that receives them', async () => {
    slack = await FakeSlack.start(TENANTS);
    await install(slack, { teamId: 'T2' });
    await install(slack, { enterpriseId: 'E1' });
    const fake = slack;
    const inWorkspace = fake.tenancy.addressed(
      appMentionEvent({ teamId: 'T2', channel: 'C2', user: 'U2', text: 'hi' }),
    );
    expect(inWorkspace).toMatchObject({
      team_id: 'T2',
      context_team_id: 'T2',
      context_enterprise_id: null,
      authorizations: [{ enterprise_id: null, team_id: 'T2', user_id: 'U0BOTT2', is_bot: true }],
    });
    expect(inWorkspace).not.toHaveProperty('enterprise_id');
    const inOrg = fake.tenancy.addressed(
      appMentionEvent({ teamId: 'T4', channel: 'C4', user: 'U4', text: 'hi' }),
    );
    expect(inOrg).toMatchObject({
      team_id: 'T4',
      enterprise_id: 'E1',
      context_team_id: 'T4',
      context_enterprise_id: 'E1',
      authorizations: [
        { enterprise_id: 'E1', team_id: null, user_id: 'U0BOTE1', is_enterprise_install: true },
      ],
    });
    expect(() =>
      fake.tenancy.addressed(appMentionEvent({ teamId: 'T1', channel: 'C1', user: 'U1', text: 'hi' })),
    ).toThrow('not installed in T1');
  });
});

describe("Bolt's own installer and authorize, against the fake", () => {
  async function startApp(fake: FakeSlack, store: MemoryInstallationStore): Promise<string> {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    app = new App({
      signingSecret: SIGNING_SECRET,
      clientId: fake.oauth.clientId,
      clientSecret: fake.oauth.clientSecret,
      stateSecret: 'state-secret',
      scopes: [...DEFAULT_SCOPES],
      installationStore: store,
      redirectUri: `${base}/slack/oauth_redirect`,
      installerOptions: {
        authorizationUrl: `http://127.0.0.1:${fake.port}/oauth/v2/authorize`,
        redirectUriPath: '/slack/oauth_redirect',
      },
      clientOptions: { slackApiUrl: fake.apiUrl },
      logger: silentSlackLogger(),
    });
    app.event('app_mention', async ({ event, client: bolt, context }) => {
      await bolt.chat.postMessage({
        channel: event.channel,
        thread_ts: event.ts,
        text: `hi ${context.teamId}`,
      });
    });
    await app.start(port);
    fake.oauth.setRedirectUrls([`${base}/slack/oauth_redirect`]);
    return base;
  }

  it('installs in a workspace and org-wide, then answers each with its own token', async () => {
    slack = await FakeSlack.start(TENANTS);
    const store = new MemoryInstallationStore();
    const base = await startApp(slack, store);
    const first = await installThroughSlack(`${base}/slack/install`, slack, { teamId: 'T2' });
    expect(first.status).toBe(200);
    expect(new URL(first.authorizeUrl).searchParams.get('redirect_uri')).toBe(`${base}/slack/oauth_redirect`);
    expect((await installThroughSlack(`${base}/slack/install`, slack, { enterpriseId: 'E1' })).status).toBe(
      200,
    );
    const stored: Installation = await store.fetchInstallation({
      teamId: 'T2',
      enterpriseId: undefined,
      isEnterpriseInstall: false,
    });
    expect(stored.bot).toMatchObject({ userId: 'U0BOTT2', id: expect.stringMatching(/^B/) });

    const fake = slack;
    for (const [teamId, channel] of [
      ['T2', 'C2'],
      ['T3', 'C3'],
    ] as const) {
      const envelope = fake.tenancy.addressed(
        appMentionEvent({ teamId, channel, user: 'UPERSON', text: 'hi' }),
      );
      expect((await postSignedEvent(`${base}/slack/events`, SIGNING_SECRET, envelope)).status).toBe(200);
      const answer = await fake.waitForCall('chat.postMessage', (call) => call.args.channel === channel);
      expect(answer.args.text).toBe(`hi ${teamId}`);
      expect(answer.caller?.installation).toBe(teamId === 'T2' ? 'T2' : 'E1');
    }
  });

  it('refreshes an expiring token with each refresh token once', async () => {
    // Bolt refreshes a token expiring within two hours, so each event here spends a refresh token.
    slack = await FakeSlack.start({ ...TENANTS, tokenRotation: { lifetimeSeconds: 3600 } });
    const store = new MemoryInstallationStore();
    const base = await startApp(slack, store);
    await installThroughSlack(`${base}/slack/install`, slack, { teamId: 'T2' });
    const fake = slack;
    for (const text of ['one', 'two']) {
      const envelope = fake.tenancy.addressed(
        appMentionEvent({ teamId: 'T2', channel: 'C2', user: 'UPERSON', text }),
      );
      await postSignedEvent(`${base}/slack/events`, SIGNING_SECRET, envelope);
    }
    await fake.waitForCalls('chat.postMessage', 2);
    const refreshes = fake
      .callsOf('oauth.v2.access')
      .filter((call) => call.args.grant_type === 'refresh_token');
    expect(refreshes).toHaveLength(2);
    expect(new Set(refreshes.map((call) => call.args.refresh_token)).size).toBe(2);
  });
});
