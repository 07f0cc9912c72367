import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { killProcessGroup, watchOutput } from '../helpers/child-output.js';
import type { TempDataDir } from '../helpers/embedded-store.js';
import { dataDirOfAnEarlierRun } from './earlier-run.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const ENV = { PATH: process.env.PATH, HOME: process.env.HOME, DEMO_AGENT_LATENCY_MS: '50' };

/** `npm run demo` as a person types it in a terminal. */
describe('npm run demo', () => {
  let dataDir: TempDataDir | undefined;
  let child: ChildProcess | undefined;

  afterAll(async () => {
    // Its own process group (see below): npm, the shell, tsx and node go together.
    if (child) killProcessGroup(child);
    await dataDir?.remove();
  });

  it('starts with both flags given the way --help shows them', async () => {
    const { stdout } = await promisify(execFile)('npm', ['run', '--silent', 'demo', '--', '--help'], {
      cwd: ROOT,
      env: ENV,
    });
    const usage = /^Usage: (npm run demo .*)$/m.exec(stdout)?.[1];
    expect(usage).toBeDefined();

    // The usage line with its placeholders filled in and its optional parts taken.
    dataDir = await dataDirOfAnEarlierRun();
    const typed = (usage ?? '')
      .replace(/[[\]]/g, '')
      .replace(/\bN\b/, '0')
      .replace(/\bDIR\b/, dataDir.path);
    expect(typed).toContain('--port 0');
    expect(typed).toContain(`--data-dir ${dataDir.path}`);

    // Detached: a process group of its own, which receives Ctrl-C as a terminal's foreground group does.
    const [command = '', ...args] = typed.split(' ');
    const started = spawn(command, args, { cwd: ROOT, env: ENV, detached: true });
    child = started;
    const watched = watchOutput(started, { group: true });
    const url = await Promise.race([
      new Promise<string>((resolve) => {
        const check = () => {
          const found = /Open (http:\/\/127\.0\.0\.1:\d+\/)/.exec(watched.output())?.[1];
          if (found) resolve(found);
          else started.stdout.once('data', check);
        };
        check();
      }),
      watched.exited.then(() => {
        throw new Error(`the demo exited before it was running:\n${watched.output()}`);
      }),
    ]);

    // --port 0 took a free port and the page is served there; --data-dir holds the bot's store.
    expect(url).not.toBe('http://127.0.0.1:0/');
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>');
    expect(existsSync(path.join(dataDir.path, 'store'))).toBe(true);

    // Ctrl-C: the demo stops cleanly, and nothing of it is left running (npm itself ends by the signal).
    process.kill(-(started.pid ?? 0), 'SIGINT');
    await watched.exited;
    expect(watched.output()).toContain('Stopping…');
    await expect.poll(() => groupAlive(started.pid ?? 0), { timeout: 10_000, interval: 100 }).toBe(false);
  }, 60_000);
});

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}
