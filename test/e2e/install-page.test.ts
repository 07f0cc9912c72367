import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AI_DISCLAIMER } from '../../src/slack-in/install-page.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { appMentionEvent, postSignedEvent } from '../helpers/slack-events.js';
import { type RunningBot, SIGNING_SECRET, startBot } from '../helpers/stack.js';
import { testStore } from '../helpers/stores.js';

/** Debian's chromium package; CHROMIUM_PATH points elsewhere. `.ci/run` installs it. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REQUIRED = process.env.CI === 'true' || process.env.CI === '1';
const haveBrowser = existsSync(CHROMIUM);
if (!haveBrowser && !REQUIRED)
  console.warn(`${CHROMIUM} not found: skipping the install page browser test (CI would fail)`);

/** A person follows the install flow in a real browser: the state cookie set on /slack/install must come back. */
describe.runIf(haveBrowser || REQUIRED)('installing from the "Add to Slack" page in a browser', () => {
  let browser: Browser;
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let bot: RunningBot;
  let cleanup: () => Promise<void>;
  let context: BrowserContext;
  let page: Page;
  let tokenExchangesBefore: number;

  // One bot for the cases: each installs into a workspace of its own, in a browser context of its own.
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    slack = await FakeSlack.start({
      preinstalled: false,
      workspaces: [
        { teamId: 'T2', name: 'Second' },
        { teamId: 'T3', name: 'Third' },
        { teamId: 'T4', name: 'Fourth' },
      ],
      channels: { C2: { teamId: 'T2' } },
    });
    agent = await AgentServiceEmulator.start();
    const prepared = await testStore();
    cleanup = prepared.remove;
    bot = await startBot({
      slack,
      agent,
      store: prepared.store,
      env: {
        SLACK_BOT_TOKEN: '',
        SLACK_CLIENT_ID: slack.oauth.clientId,
        SLACK_CLIENT_SECRET: slack.oauth.clientSecret,
        SLACK_STATE_SECRET: randomBytes(16).toString('hex'),
        TOKEN_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      },
    });
    slack.oauth.setRedirectUrls([`${bot.baseUrl}/slack/oauth_redirect`]);
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await bot?.stop();
    await Promise.all([slack?.stop(), agent?.stop()]);
    await cleanup?.();
  });

  beforeEach(async () => {
    // A fresh context per case: no cookie from an earlier install.
    context = await browser.newContext();
    page = await context.newPage();
    tokenExchangesBefore = slack.callsOf('oauth.v2.access').length;
  });

  afterEach(async () => {
    await context?.close();
  });

  /** The install codes the bot exchanged for tokens during this case. */
  const tokenExchanges = () => slack.callsOf('oauth.v2.access').slice(tokenExchangesBefore);

  /** The bot's redirect URL, where Slack sends the browser back (the page the person then reads). */
  const backHere = (url: URL) => url.pathname === '/slack/oauth_redirect';

  /** Opens the install page, checks what it tells the person, and clicks "Add to Slack" to the consent page. */
  async function openConsentFromInstallPage(teamId: string): Promise<void> {
    const opened = await page.goto(`${bot.baseUrl}/slack/install`);
    expect(opened?.status()).toBe(200);
    expect(await page.getByRole('note').textContent()).toBe(AI_DISCLAIMER);
    await page.getByRole('link', { name: 'Add to Slack' }).click();
    await page.waitForURL((url) => url.pathname === '/oauth/v2/authorize');
    expect(await page.getByRole('heading').textContent()).toBe('Allow the app to access Slack');
    await page.getByLabel('Install on').selectOption(`team:${teamId}`);
  }

  it('Add to Slack, then Allow, lands on the success page, and the workspace is answered with its token', async () => {
    await openConsentFromInstallPage('T2');
    const back = page.waitForResponse((response) => backHere(new URL(response.url())));
    await page.getByRole('button', { name: 'Allow' }).click();
    expect((await back).status()).toBe(200);
    await page.waitForURL(backHere);
    const finalUrl = new URL(page.url());
    expect(`${finalUrl.origin}${finalUrl.pathname}`).toBe(`${bot.baseUrl}/slack/oauth_redirect`);
    expect(finalUrl.searchParams.get('code')).toBeTruthy();
    expect(await page.getByRole('heading').textContent()).toBe('Thank you!');
    expect(await page.textContent('body')).not.toMatch(/wrong|error/i);

    const envelope = slack.tenancy.addressed(
      appMentionEvent({ teamId: 'T2', channel: 'C2', user: 'U2ALICE', text: '<@U0BOTT2> hello' }),
    );
    await postSignedEvent(bot.eventsUrl, SIGNING_SECRET, envelope, { via: bot.slack });
    const answer = await slack.waitForCall('chat.postMessage', (call) => call.args.channel === 'C2', 10_000);
    expect(answer.caller?.installation).toBe('T2');
  });

  it('Cancel on the consent page says the app was not installed, and nothing is installed', async () => {
    await openConsentFromInstallPage('T3');
    const back = page.waitForResponse((response) => backHere(new URL(response.url())));
    await page.getByRole('button', { name: 'Cancel' }).click();
    // A person's own choice, not a server fault (Bolt's default page says "Oops, Something Went Wrong!", 500).
    expect((await back).status()).toBe(200);
    await page.waitForURL(backHere);
    expect(await page.getByRole('heading').textContent()).toBe('The agent was not added to Slack');
    expect(await page.textContent('body')).toMatch(/You cancelled on Slack's page/);
    await page.getByRole('link', { name: 'Start again' }).click();
    await page.waitForURL(`${bot.baseUrl}/slack/install`);
    expect(await page.getByRole('note').textContent()).toBe(AI_DISCLAIMER);
    expect(tokenExchanges()).toEqual([]);
    expect(slack.tenancy.installation('T3')).toBeUndefined();
  });

  it('a consent page opened from the install page in another browser does not install', async () => {
    await openConsentFromInstallPage('T4');
    const elsewhere = await browser.newContext();
    try {
      // The same link, without the cookie the install page set in the first browser.
      const other = await elsewhere.newPage();
      await other.goto(page.url());
      await other.getByLabel('Install on').selectOption('team:T4');
      const back = other.waitForResponse((response) => backHere(new URL(response.url())));
      await other.getByRole('button', { name: 'Allow' }).click();
      expect((await back).status()).toBe(400);
      await other.waitForURL(backHere);
      expect(await other.getByRole('heading').textContent()).toBe('The agent was not added to Slack');
      expect(await other.textContent('body')).toMatch(/opened in another browser than the install page/);
    } finally {
      await elsewhere.close();
    }
    expect(tokenExchanges()).toEqual([]);
  });
});
