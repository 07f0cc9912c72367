import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { type ChildOutput, watchOutput } from '../helpers/child-output.js';
import { freshDataDir, type TempDataDir } from '../helpers/embedded-store.js';
import { withEveryVariable } from '../helpers/entry-point.js';
import { freePort } from '../helpers/free-port.js';
import { appMentionEvent, nextTs, postSignedEvent } from '../helpers/slack-events.js';
import { BOT_TOKEN, SIGNING_SECRET } from '../helpers/stack.js';

/**
 * The bot as users run it: `npm start` in a child process, configured only through the environment. npm runs
 * it in the project's root, where a developer's `.env` may be: every variable the bot reads is set (empty
 * ones are unset to the bot), so that file fills in none.
 */
describe('npm start', () => {
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  // The store users get when they configure none: `npm start` is checked as they run it.
  let dataDir: TempDataDir;
  let child: ChildProcess;
  let watched: ChildOutput;
  let port: number;

  beforeAll(async () => {
    slack = await FakeSlack.start();
    agent = await AgentServiceEmulator.start();
    dataDir = await freshDataDir();
    port = await freePort();
    child = spawn('npm', ['start', '--silent'], {
      env: withEveryVariable({
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        SLACK_BOT_TOKEN: BOT_TOKEN,
        SLACK_SIGNING_SECRET: SIGNING_SECRET,
        SLACK_API_URL: slack.apiUrl,
        PORT: String(port),
        // Not the default 9090, which a developer's own bot may hold.
        ADMIN_PORT: String(await freePort()),
        AGENT_BASE_URL: agent.baseUrl,
        AGENT_API_KEY: agent.apiKey,
        AGENT_ID: 'agent-main',
        DATA_DIR: dataDir.path,
        LOG_LEVEL: 'trace',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    watched = watchOutput(child);
    await waitUntil(
      async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok,
      // `npm start` builds first: a full tsc run, slow while the rest of the suite shares the machine.
      120_000,
      () => watched.output(),
    );
  }, 150_000);

  afterAll(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await Promise.all([slack.stop(), agent.stop(), dataDir.remove()]);
  });

  it('answers a signed mention, logs no secret, and exits cleanly on SIGTERM', async () => {
    const rootTs = nextTs();
    const response = await postSignedEvent(
      `http://127.0.0.1:${port}/slack/events`,
      SIGNING_SECRET,
      appMentionEvent({
        channel: 'C0PROC',
        user: 'U0ALICE',
        text: '<@U0BOT> hello from a process',
        ts: rootTs,
      }),
      { via: slack },
    );
    expect(response.status).toBe(200);
    const reply = await slack.waitForCall('chat.postMessage', (call) => call.args.thread_ts === rootTs);
    expect(reply.args.text).toBe('echo[s-1#1]: hello from a process');

    child.kill('SIGTERM');
    // npm forwards SIGTERM to the bot, then ends itself by that signal once the bot has exited.
    const { code, signal } = await watched.exited;
    const output = watched.output();
    expect(code === 0 || signal === 'SIGTERM').toBe(true);
    expect(output.split('\n').slice(-6).join('\n')).toMatch(/"msg":"stopped"/);

    expect(output).toContain('slack-agent-bridge is running');
    for (const secret of [BOT_TOKEN, SIGNING_SECRET, agent.apiKey]) expect(output).not.toContain(secret);
  }, 30_000);
});

/** Fails with what `npm start` printed by then, so a start that never got ready says why. */
async function waitUntil(
  check: () => Promise<boolean | undefined>,
  timeoutMs: number,
  printed: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`not ready within ${timeoutMs} ms; npm start printed:\n${printed().slice(-3000)}`);
}
