import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDemo, startDemo } from '../../demo/demo.js';

/** Debian's chromium package; CHROMIUM_PATH points elsewhere. `.ci/run` installs it. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REQUIRED = process.env.CI === 'true' || process.env.CI === '1';
const haveBrowser = existsSync(CHROMIUM);
if (!haveBrowser && !REQUIRED)
  console.warn(`${CHROMIUM} not found: skipping the demo browser test (CI would fail)`);

/** Where the screenshot goes; the README's picture is refreshed with DEMO_SCREENSHOT=docs/demo.png. */
/** The page updates over SSE within moments; a cold embedded store makes the first answer slower. */
const POLL = { timeout: 8_000, interval: 100 };

const SCREENSHOT = path.resolve(process.env.DEMO_SCREENSHOT ?? 'test/.tmp/demo.png');

describe.runIf(haveBrowser || REQUIRED)('npm run demo in a browser', () => {
  let demo: RunningDemo;
  let dataDir: string;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'bridge-demo-'));
    demo = await startDemo({
      port: 0,
      dataDir,
      emulatorLatencyMs: 2_000,
      logLevel: 'warn',
      prettyLogs: false,
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
    await page.goto(demo.url);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await demo?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const channel = (name: string) => page.locator(`[data-testid="channel-link"][data-channel-name="${name}"]`);
  /** A message in the channel's list (the open thread's pane repeats its parent). */
  const inMain = (text: string | RegExp) =>
    page.locator('[data-pane="main"][data-testid="message"]', { hasText: text });
  const traffic = (operation: string) =>
    page.locator(`[data-testid="traffic-entry"][data-operation="${operation}"][data-state="done"]`);

  it('mentions the bot, follows the thread, resets it and archives the channel', async () => {
    await channel('general').click();

    // A mention in the channel: the working indicator, then the answer in the message's thread.
    await page.getByTestId('composer-input').fill('@agent What can you do?');
    await page.getByTestId('composer-input').press('Enter');
    const asked = inMain('What can you do?');
    await expect
      .poll(() => asked.locator('[data-testid="reaction"][data-name="eyes"]').count(), POLL)
      .toBe(1);
    await asked.getByTestId('open-thread').click({ timeout: 10_000 });
    const thread = page.getByTestId('thread-panel');
    await thread.locator('[data-testid="message"]', { hasText: 'echo[s-1#1]: What can you do?' }).waitFor();
    await expect.poll(() => asked.locator('[data-testid="reaction"]').count(), POLL).toBe(0);
    expect(await traffic('createSession').count()).toBe(1);

    // A reply in the thread needs no mention and lands in the same session.
    await thread.getByTestId('thread-composer-input').fill('And in more detail?');
    await thread.getByTestId('thread-composer-send').click();
    await thread
      .locator('[data-testid="message"]', { hasText: 'echo[s-1#2]: And in more detail?' })
      .waitFor();
    expect(await traffic('createSession').count()).toBe(1);

    // The "Reset conversation" shortcut deletes the thread's session on the agent service.
    await asked.hover();
    await asked.getByTestId('message-actions').click();
    await page.getByTestId('shortcut-reset').click();
    await page
      .getByTestId('ephemeral')
      .filter({ hasText: /reset|start/i })
      .first()
      .waitFor();
    await traffic('deleteSession').filter({ hasText: 's-1' }).waitFor();

    // A new conversation in the channel, then the channel is archived: its session is deleted too.
    await page.getByTestId('composer-input').fill('@agent One more thing');
    await page.getByTestId('composer-input').press('Enter');
    const second = inMain('One more thing');
    await second.getByTestId('open-thread').waitFor({ timeout: 10_000 });
    expect(await traffic('createSession').count()).toBe(2);
    await page.getByTestId('archive-channel').click();
    await traffic('deleteSession').filter({ hasText: 's-2' }).waitFor();
    expect(await traffic('deleteSession').count()).toBe(2);
    await expect.poll(() => page.getByTestId('composer-input').isDisabled(), POLL).toBe(true);

    await mkdir(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT });
  }, 60_000);

  it('shows the DM as the Messages tab: suggested prompts, a thread per conversation, a title', async () => {
    await channel('agent').click();
    // Opening it sends app_home_opened; the bot answers with its suggested prompts and a greeting.
    const prompt = page.getByTestId('tab-prompt').first();
    await prompt.waitFor();
    await inMain(/Ask me anything/).waitFor();
    const suggestion = (await prompt.getAttribute('data-message')) ?? '';
    await prompt.click();
    const conversation = inMain(suggestion);
    await conversation.getByTestId('open-thread').click({ timeout: 10_000 });
    const thread = page.getByTestId('thread-panel');
    await thread.locator('[data-testid="message"]', { hasText: `#1]: ${suggestion}` }).waitFor();
    await expect.poll(() => page.getByTestId('assistant-title').textContent(), POLL).toBe(suggestion);

    await page.getByTestId('composer-input').fill('/agent help');
    await page.getByTestId('composer-input').press('Enter');
    await page.getByTestId('ephemeral').filter({ hasText: '/agent reset' }).first().waitFor();
  }, 30_000);
});
