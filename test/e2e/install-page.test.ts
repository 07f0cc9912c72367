import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { AI_DISCLAIMER } from '../../src/slack-in/install-page.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { installThroughSlack } from '../helpers/oauth-install.js';
import { appMentionEvent, postSignedEvent } from '../helpers/slack-events.js';
import { type RunningBot, SIGNING_SECRET, startBot } from '../helpers/stack.js';
import { prepareEmbeddedStore } from '../helpers/stores.js';

let slack: FakeSlack;
let agent: AgentServiceEmulator;
let bot: RunningBot;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  slack = await FakeSlack.start({
    preinstalled: false,
    workspaces: [{ teamId: 'T2', name: 'Second' }],
    channels: { C2: { teamId: 'T2' } },
  });
  agent = await AgentServiceEmulator.start();
  const prepared = await prepareEmbeddedStore();
  cleanup = prepared.cleanup;
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
});

afterEach(async () => {
  await bot.stop();
  await Promise.all([slack.stop(), agent.stop()]);
  await cleanup();
});

it('shows the AI disclaimer beside Add to Slack, and the install it leads to answers in that workspace', async () => {
  const page = await fetch(`${bot.baseUrl}/slack/install`);
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  expect(await page.text()).toContain(AI_DISCLAIMER);
  const journey = await installThroughSlack(`${bot.baseUrl}/slack/install`, slack, { teamId: 'T2' });
  expect(journey.status).toBe(200);
  const envelope = slack.tenancy.addressed(
    appMentionEvent({ teamId: 'T2', channel: 'C2', user: 'U2ALICE', text: '<@U0BOTT2> hello' }),
  );
  await postSignedEvent(bot.eventsUrl, SIGNING_SECRET, envelope);
  const answer = await slack.waitForCall('chat.postMessage', (call) => call.args.channel === 'C2', 10_000);
  expect(answer.caller?.installation).toBe('T2');
});
