import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { type Browser, type CDPSession, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDemo, startDemo } from '../../demo/demo.js';
import type { TempDataDir } from '../helpers/embedded-store.js';
import { dataDirOfAnEarlierRun } from './earlier-run.js';

/** Debian's chromium package; CHROMIUM_PATH points elsewhere. `.ci/run` installs it. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REQUIRED = process.env.CI === 'true' || process.env.CI === '1';
const haveBrowser = existsSync(CHROMIUM);
if (!haveBrowser && !REQUIRED)
  console.warn(`${CHROMIUM} not found: skipping the demo browser test (CI would fail)`);

/** The page updates over SSE within moments; a cold embedded store makes the first answer slower. */
const POLL = { timeout: 8_000, interval: 100 };

/** Where the screenshot goes; the README's picture is refreshed with DEMO_SCREENSHOT=docs/demo.png. */
const SCREENSHOT = path.resolve(process.env.DEMO_SCREENSHOT ?? 'test/.tmp/demo.png');
/** The reader's time zone: far from UTC, so times not shown in local time are caught. */
const TIME_ZONE = 'Asia/Kathmandu';
const VIEWPORT = { width: 1400, height: 860 };

describe.runIf(haveBrowser || REQUIRED)('npm run demo in a browser', () => {
  let demo: RunningDemo;
  let dataDir: TempDataDir | undefined;
  let browser: Browser;
  let page: Page;
  /** Every request of the page's that failed (the favicon included), as `404 http://…`. */
  const failedRequests: string[] = [];

  beforeAll(async () => {
    dataDir = await dataDirOfAnEarlierRun();
    demo = await startDemo({
      port: 0,
      dataDir: dataDir.path,
      emulatorLatencyMs: 2_000,
      // After "Restart bot" the bot calls an answer lost once the agent's time is up: short, for the test.
      botEnv: { AGENT_TIMEOUT_MS: '4000' },
      // Errors only: "Restart bot" makes the bot warn, as it should, about the answer it lost.
      logLevel: 'error',
      prettyLogs: false,
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    // As a reader who asks for less motion: the page's indicators stand still, which is checked below, and the
    // browser does not redraw them sixty times a second while the suite waits (half its CPU here otherwise).
    page = await browser.newPage({ viewport: VIEWPORT, timezoneId: TIME_ZONE, reducedMotion: 'reduce' });
    page.on('response', (response) => {
      if (response.status() >= 400) failedRequests.push(`${response.status()} ${response.url()}`);
    });
    await page.goto(demo.url);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await demo?.stop();
    await dataDir?.remove();
  });

  const channel = (name: string) => page.locator(`[data-testid="channel-link"][data-channel-name="${name}"]`);
  /** A message in the channel's list (the open thread's pane repeats its parent). */
  const inMain = (text: string | RegExp) =>
    page.locator('[data-pane="main"][data-testid="message"]', { hasText: text });
  const traffic = (operation: string) =>
    page.locator(`[data-testid="traffic-entry"][data-operation="${operation}"][data-state="done"]`);

  it('says the traffic panel is live as soon as it is connected, before any agent call', async () => {
    await expect.poll(() => page.getByTestId('traffic-live').textContent(), POLL).toBe('live');
    // Only the bot's start-up check of the agent service (listing its sessions) has happened so far; it may
    // still be under way (the emulator answers after 2 s), so pending entries count too.
    const calls = page.getByTestId('traffic-entry');
    const checks = page.locator('[data-testid="traffic-entry"][data-operation="listSessions"]');
    expect(await calls.count()).toBe(await checks.count());
  });

  it('mentions the bot, follows the thread, resets it and archives the channel', async () => {
    await channel('general').click();
    // In a channel the bot answers mentions only, so the page teaches the mention.
    expect(await page.getByTestId('composer-input').getAttribute('placeholder')).toContain('@agent');
    expect(await page.locator('#hint-mention').isVisible()).toBe(true);

    // A mention in the channel: an agent session from the first mention (manifest.yml makes the app an agent
    // app), with Slack's stop button while the agent works, then the answer in the message's thread.
    await page.getByTestId('composer-input').fill('@agent What can you do?');
    await page.getByTestId('composer-input').press('Enter');
    const asked = inMain('What can you do?');
    await asked.getByTestId('stop-button').waitFor({ timeout: 10_000 });
    await asked.getByTestId('open-thread').click({ timeout: 10_000 });
    const thread = page.getByTestId('thread-panel');
    await thread.locator('[data-testid="message"]', { hasText: 'echo[s-1#1]: What can you do?' }).waitFor();
    await expect.poll(() => asked.getByTestId('stop-button').count(), POLL).toBe(0);
    expect(await asked.locator('[data-testid="reaction"]').count()).toBe(0);
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
    const resetNote = page
      .getByTestId('ephemeral')
      .filter({ hasText: /reset|start/i })
      .first();
    await resetNote.waitFor();
    // Off the message, so its hover toolbar has faded by the time of the screenshot below.
    await page.mouse.move(1, 1);
    await traffic('deleteSession').filter({ hasText: 's-1' }).waitFor();

    // The bot's :broom: is drawn from a colour emoji font (not an empty box), and the text is not.
    const broom = resetNote.locator('.emoji[data-name="broom"]');
    expect((await broom.boundingBox())?.width ?? 0).toBeGreaterThan(0);
    const fonts = await fontsOf(page);
    expect(await fonts('[data-testid="ephemeral"] .emoji[data-name="broom"]')).toEqual([
      expect.stringMatching(/emoji/i),
    ]);
    // Digits and spaces are where an emoji font taking over the text shows (they come out emoji-wide).
    for (const text of ['[data-testid="ephemeral"] .msg-time', '[data-testid="thread-panel"] .message-body'])
      expect(await fonts(text)).not.toContainEqual(expect.stringMatching(/emoji/i));

    // A new conversation in the channel, then the channel is archived: its session is deleted too.
    await page.getByTestId('composer-input').fill('@agent One more thing');
    await page.getByTestId('composer-input').press('Enter');
    const second = inMain('One more thing');
    await second.getByTestId('open-thread').waitFor({ timeout: 10_000 });
    expect(await traffic('createSession').count()).toBe(2);

    // Archiving asks first; Cancel leaves the channel as it was.
    await page.getByTestId('archive-channel').click();
    const dialog = page.getByTestId('archive-dialog');
    expect(await dialog.isVisible()).toBe(true);
    expect(await dialog.textContent()).toContain('#general');
    await page.getByTestId('archive-cancel').click();
    expect(await dialog.isVisible()).toBe(false);
    expect(await page.getByTestId('composer-input').isEnabled()).toBe(true);
    expect(await traffic('deleteSession').count()).toBe(1);

    // A short window, so that the list of messages scrolls: its last row must stay in sight after archiving.
    await page.setViewportSize({ width: VIEWPORT.width, height: 440 });
    await page.getByTestId('archive-channel').click();
    await page.getByTestId('archive-confirm').click();
    await traffic('deleteSession').filter({ hasText: 's-2' }).waitFor();
    expect(await traffic('deleteSession').count()).toBe(2);
    const note = page.getByTestId('archived-note');
    await note.waitFor();
    // No composer to type into and no hints for it; "archived" is said once, in the footer.
    expect(await page.getByTestId('composer-input').isVisible()).toBe(false);
    expect(await page.getByTestId('composer-hint').isVisible()).toBe(false);
    expect(await page.getByTestId('thread-composer-input').isVisible()).toBe(false);
    expect(await page.getByTestId('archive-channel').isVisible()).toBe(false);
    const shown = await Promise.all(
      ['sidebar', 'channel-pane', 'thread-panel'].map((id) => page.getByTestId(id).innerText()),
    );
    expect(shown.join('\n').match(/archived/gi)).toEqual(['archived']);
    expect(await note.textContent()).toContain('#general');
    const lastRow = await second.locator('.thread-summary').boundingBox();
    const list = await page.getByTestId('message-list').boundingBox();
    const footer = await note.boundingBox();
    expect(lastRow && list && footer).toBeTruthy();
    if (lastRow && list && footer) {
      expect(lastRow.y + lastRow.height).toBeLessThanOrEqual(list.y + list.height);
      expect(lastRow.y + lastRow.height).toBeLessThanOrEqual(footer.y);
    }
    await page.setViewportSize(VIEWPORT);
  }, 60_000);

  it('shows the DM as the Messages tab: suggested prompts, a thread per conversation, a title', async () => {
    await channel('agent').click();
    // Opening it sends app_home_opened; the bot answers with its suggested prompts and a greeting.
    const prompt = page.getByTestId('tab-prompt').first();
    await prompt.waitFor();
    await inMain(/Ask me anything/).waitFor();
    // The greeting once (the bot also heads its prompts with it); nothing here asks for a mention.
    const pane = await page.getByTestId('channel-pane').innerText();
    expect(pane.match(/Ask me anything/g)).toHaveLength(1);
    expect(await page.getByTestId('composer-input').getAttribute('placeholder')).not.toMatch(/@|mention/);
    expect(await page.getByTestId('composer-hint').innerText()).not.toMatch(/@|mention/);
    expect(await page.getByTestId('composer-hint').innerText()).toContain('/agent help');
    const suggestion = (await prompt.getAttribute('data-message')) ?? '';
    await prompt.click();
    const conversation = inMain(suggestion);
    await conversation.getByTestId('open-thread').click({ timeout: 10_000 });
    const thread = page.getByTestId('thread-panel');
    await thread.locator('[data-testid="message"]', { hasText: `#1]: ${suggestion}` }).waitFor();
    // The conversation is named after its first prompt (its agent session's title): atop the thread, and
    // where the Messages tab lists it.
    await expect.poll(() => page.getByTestId('thread-title').textContent(), POLL).toBe(suggestion);
    expect(await conversation.getByTestId('conversation-title').textContent()).toBe(suggestion);
    expect(await page.getByTestId('session-status').textContent()).toBe('Active');

    await page.getByTestId('composer-input').fill('/agent help');
    await page.getByTestId('composer-input').press('Enter');
    await page.getByTestId('ephemeral').filter({ hasText: '/agent reset' }).first().waitFor();

    // Slack's date tokens show as Slack shows them: in the reader's own time zone, not as ISO times.
    await page.getByTestId('composer-input').fill('/agent sessions');
    await page.getByTestId('composer-input').press('Enter');
    const listing = page.getByTestId('ephemeral').filter({ hasText: 'last active' });
    await listing.waitFor();
    const sent = await page.evaluate(async () => {
      const state = (await (await fetch('/ui/state')).json()) as { ephemerals: { text?: string }[] };
      return state.ephemerals.map((e) => e.text ?? '').find((text) => text.includes('<!date^')) ?? '';
    });
    const epoch = Number(/<!date\^(\d+)\^\{date_short_pretty\} \{time\}\|/.exec(sent)?.[1]);
    expect(epoch).toBeGreaterThan(0);
    const text = await listing.innerText();
    expect(text).not.toMatch(/\d{4}-\d\d-\d\dT/);
    expect(text).toContain(`started ${dayAndTime(epoch * 1000)}`);
  }, 30_000);

  /** A message of the open thread. */
  const inThread = (text: string | RegExp) =>
    page.getByTestId('thread-panel').locator('[data-testid="message"]', { hasText: text });

  it("shows a channel thread as an agent session, with Slack's Stop while the answer comes", async () => {
    // The Messages tab was opened above, so the bot treats channel threads as agent sessions too.
    await channel('project-x').click();
    // The agent answers once Stop was pressed, however long the clicks take on this machine.
    const answer = demo.emulator?.holdAnswerTo('Draft the release notes');
    await page.getByTestId('composer-input').fill('@agent Draft the release notes');
    await page.getByTestId('composer-input').press('Enter');
    const asked = inMain('Draft the release notes');
    // While the agent works: Stop under the message, and in its thread under a header naming the session.
    await asked.getByTestId('stop-button').waitFor({ timeout: 5_000 });
    await asked.hover();
    await asked.getByTestId('reply-in-thread').click();
    await expect
      .poll(() => page.getByTestId('thread-title').textContent(), POLL)
      .toBe('Draft the release notes');
    expect(await page.getByTestId('session-status').textContent()).toBe('Working…');
    expect(await page.getByTestId('assistant-status').innerText()).toContain('working');
    // The typing dots and the pending call's spinner stand still for a reader who asks for less motion, and
    // move for one who does not.
    const indicators = page.locator('[data-testid="assistant-status"] .typing i, .tr-pending .spinner');
    const animations = () => indicators.evaluateAll((all) => all.map((one) => one.getAnimations().length));
    expect(await animations()).toEqual([0, 0, 0, 0]);
    await page.emulateMedia({ reducedMotion: 'no-preference' });
    expect(await animations()).toEqual([1, 1, 1, 1]);
    await page.emulateMedia({ reducedMotion: 'reduce' });

    // Still being answered when Stop is pressed.
    const asking = demo.emulator
      ?.requestsFor('sendMessage')
      .filter((r) => r.prompt === 'Draft the release notes');
    expect(asking?.map((r) => r.status)).toEqual([null]);
    await page.getByTestId('thread-stop').click();
    const stopped = inThread(/Stopped: .*dropped the answer I was waiting for/);
    await stopped.waitFor({ timeout: 10_000 });
    answer?.();
    await expect.poll(() => page.getByTestId('session-status').textContent(), POLL).toBe('Active');
    expect(await page.getByTestId('thread-stop').count()).toBe(0);
    expect(await asked.getByTestId('stop-button').count()).toBe(0);
    // The agent did answer (the traffic panel shows it), a moment after which the answer would be posted:
    // it is not.
    await traffic('sendMessage').filter({ hasText: 'Draft the release notes' }).waitFor({ timeout: 10_000 });
    await page.waitForTimeout(1_500);
    expect(await inThread(']: Draft the release notes').count()).toBe(0);
    expect(await page.getByTestId('thread-panel').getByTestId('message').count()).toBe(2);
  }, 30_000);

  it('shows a table in an answer as a table, and thanks privately for feedback', async () => {
    // The hint fills in a prompt holding a Markdown table; the emulator echoes it, so the answer has one. A
    // thread is open (the one stopped above): the prompt goes into it, where no mention is needed.
    await page.locator('#hint-table').click();
    expect(await page.getByTestId('composer-input').inputValue()).toBe('');
    const threadInput = page.getByTestId('thread-composer-input');
    expect(await threadInput.inputValue()).toMatch(/^Compare the regions:\n\|/);
    await page.getByTestId('thread-composer-send').click();
    const answer = inThread(']: Compare the regions:');
    await answer.waitFor({ timeout: 10_000 });
    const table = answer.getByTestId('table-block');
    const rows = await table.locator('tr').all();
    const cells = await Promise.all(rows.map((row) => row.locator('th, td').allInnerTexts()));
    expect(cells).toEqual([
      ['Region', 'Users', 'p95 latency'],
      ['EU', '1,204', '87 ms'],
      ['US', '2,311', '102 ms'],
      ['APAC', '938', '141 ms'],
    ]);
    // Columns line up as the Markdown asked: names to the left, figures to the right.
    const align = (column: number) =>
      table
        .locator(`tbody tr:first-child td:nth-child(${column})`)
        .evaluate((cell) => (globalThis as unknown as BrowserWindow).getComputedStyle(cell).textAlign);
    expect([await align(1), await align(2), await align(3)]).toEqual(['left', 'right', 'right']);
    // No pipes left over: the table is not also shown as text.
    expect(await answer.locator('.message-body').innerText()).not.toContain('|');

    const good = answer.locator('[data-testid="feedback-button"][data-feedback="positive"]');
    expect(await good.getAttribute('title')).toBe('Good answer');
    await good.click();
    // Off the message, so its hover toolbar has faded by the time of the screenshot below.
    await page.mouse.move(1, 1);
    await page
      .getByTestId('thread-panel')
      .getByTestId('ephemeral')
      .filter({ hasText: 'Thanks for the feedback!' })
      .waitFor({ timeout: 10_000 });
    expect(await good.getAttribute('aria-pressed')).toBe('true');

    // The README's picture: a thread answered with a table, its feedback buttons and the thanks, the calls.
    await mkdir(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT });
  }, 30_000);

  it('offers Send again for an answer lost to a restart, and sends the message once more', async () => {
    // A follow-up in the open thread; while the agent is answering it, the bot restarts.
    const thread = page.getByTestId('thread-panel');
    await thread.getByTestId('thread-composer-input').fill('And next quarter?');
    await thread.getByTestId('thread-composer-send').click();
    await page
      .locator('[data-testid="traffic-entry"][data-operation="sendMessage"][data-state="pending"]', {
        hasText: 'And next quarter?',
      })
      .waitFor({ timeout: 10_000 });
    await page.getByTestId('restart-bot').click();
    await expect.poll(() => page.getByTestId('restart-bot').isEnabled(), POLL).toBe(true);

    // Once the agent's time is up the restarted bot says the answer was lost, and offers to send it again.
    const notice = inThread('its answer was lost');
    await notice.waitFor({ timeout: 30_000 });
    const sendAgain = notice.getByTestId('block-button').filter({ hasText: 'Send again' });
    expect(await sendAgain.count()).toBe(1);
    // The agent answered the bot that was stopped: that answer never reached the thread.
    const calls = traffic('sendMessage').filter({ hasText: 'And next quarter?' });
    expect(await calls.count()).toBe(1);
    expect(await inThread(']: And next quarter?').count()).toBe(0);

    await sendAgain.click();
    await inThread(']: And next quarter?').waitFor({ timeout: 10_000 });
    // The button is gone, with who used it in its place; the agent was asked once more, no more.
    await expect.poll(() => notice.getByTestId('block-button').count(), POLL).toBe(0);
    expect(await notice.innerText()).toContain('Sent again by @You');
    expect(await calls.count()).toBe(2);
  }, 60_000);

  it("keeps a closed thread's private notes in the thread", async () => {
    const thanks = (pane: string) =>
      page.getByTestId(pane).getByTestId('ephemeral').filter({ hasText: 'Thanks for the feedback!' });
    expect(await thanks('thread-panel').count()).toBe(1);
    const title = (await page.getByTestId('thread-title').textContent()) ?? '';
    await page.getByTestId('thread-close').click();
    await expect.poll(() => page.getByTestId('thread-panel').isVisible(), POLL).toBe(false);
    expect(await thanks('channel-pane').count()).toBe(0);
    await inMain(title).getByTestId('open-thread').click();
    await thanks('thread-panel').waitFor();
    expect(await thanks('channel-pane').count()).toBe(0);
  });

  it('lists /agent sessions with a link per conversation, each naming and opening its own thread', async () => {
    // A second conversation in the Messages tab, beside the one started from a suggested prompt above.
    await channel('agent').click();
    await page.getByTestId('composer-input').fill('Plan the offsite');
    await page.getByTestId('composer-input').press('Enter');
    await inMain('Plan the offsite').getByTestId('open-thread').waitFor({ timeout: 10_000 });

    await page.getByTestId('composer-input').fill('/agent sessions');
    await page.getByTestId('composer-input').press('Enter');
    const listing = page
      .getByTestId('ephemeral')
      .filter({ hasText: 'last active' })
      .filter({ hasText: 'Plan the offsite' });
    await listing.waitFor();
    const links = listing.getByTestId('thread-link');
    expect(await links.count()).toBe(2);
    const names = await links.evaluateAll((anchors) =>
      anchors.map((anchor) => (anchor as unknown as { title: string }).title),
    );
    expect(new Set(names).size).toBe(2);
    expect(names).toContain('Plan the offsite');
    // Each opens its own conversation here, not a Slack workspace that does not exist.
    for (const name of names) {
      await listing.locator(`[data-testid="thread-link"][title="${name}"]`).click();
      await expect.poll(() => page.getByTestId('thread-title').textContent(), POLL).toBe(name);
    }
  }, 30_000);

  it('asks the demo server for nothing it lacks, the favicon included', async () => {
    expect((await fetch(new URL('/favicon.ico', demo.url))).status).toBeLessThan(400);
    expect(failedRequests).toEqual([]);
  });
});

/** The little of the browser's `window` the tests use (this project compiles without the DOM types). */
interface BrowserWindow {
  getComputedStyle(element: unknown): { textAlign: string };
}

/** `{date_short_pretty} {time}` in TIME_ZONE, e.g. "Today 14:05" or "Mar 3, 2025 09:12". */
function dayAndTime(ms: number): string {
  const parts = (at: number) =>
    Object.fromEntries(
      new Intl.DateTimeFormat('en-US', {
        timeZone: TIME_ZONE,
        year: 'numeric',
        month: 'short',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      })
        .formatToParts(at)
        .map((part) => [part.type, part.value]),
    );
  const when = parts(ms);
  const day = (at: number) => {
    const p = parts(at);
    return `${p.year} ${p.month} ${p.day}`;
  };
  const relative =
    day(ms) === day(Date.now())
      ? 'Today'
      : day(ms) === day(Date.now() - 86_400_000)
        ? 'Yesterday'
        : undefined;
  return `${relative ?? `${when.month} ${when.day}, ${when.year}`} ${when.hour}:${when.minute}`;
}

/** The fonts Chromium drew an element's own text with (DevTools' "Rendered Fonts"). */
async function fontsOf(page: Page): Promise<(selector: string) => Promise<string[]>> {
  const cdp: CDPSession = await page.context().newCDPSession(page);
  await cdp.send('DOM.enable');
  await cdp.send('CSS.enable');
  return async (selector) => {
    const { root } = await cdp.send('DOM.getDocument', { depth: -1 });
    const { nodeId } = await cdp.send('DOM.querySelector', { nodeId: root.nodeId, selector });
    if (!nodeId) throw new Error(`nothing matches ${selector}`);
    const { fonts } = await cdp.send('CSS.getPlatformFontsForNode', { nodeId });
    return fonts.map((font) => font.familyName);
  };
}
