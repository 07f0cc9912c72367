import { spawn } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { killProcessGroup, watchOutput } from './helpers/child-output.js';
import { freshDataDir, type TempDataDir } from './helpers/embedded-store.js';
import { entryPointCommand, startEntryPoint, withEveryVariable } from './helpers/entry-point.js';
import { freePort } from './helpers/free-port.js';
import { waitFor } from './helpers/wait.js';

/**
 * `npm start` and `npm run sessions` read `.env` from their working directory, and a developer who followed
 * the README has one in the project's root, with their own Slack app token and database. The tests that start
 * those processes must not pick it up: a Socket Mode token would take the bot off HTTP, a DATABASE_URL would
 * migrate the developer's database, and every variable it sets would be missing from "every missing
 * variable". They start them one of two ways (test/helpers/entry-point.ts), each checked here against a copy
 * of the project that has such a `.env` in its root, and no test starts them another way.
 */

const ROOT = path.resolve(import.meta.dirname, '..');

/** `.env.example` as a developer fills it in: their tokens and key, and their database uncommented. */
function developersDotEnv(example: string): string {
  const values: Record<string, string> = {
    SLACK_BOT_TOKEN: 'xoxb-the-developers-own-token',
    SLACK_APP_TOKEN: 'xapp-the-developers-own-token',
    SLACK_SIGNING_SECRET: 'the-developers-signing-secret',
    AGENT_BASE_URL: 'https://agent-service.internal/v1',
    AGENT_API_KEY: 'the-developers-agent-key',
    AGENT_ID: 'the-developers-agent',
    // Nothing listens on port 9: a bot that uses this database does not start.
    DATABASE_URL: 'postgres://developer:secret@127.0.0.1:9/their_own_database',
  };
  const filled = example.replace(/^#?\s*([A-Z][A-Z0-9_]*)=.*$/gm, (line, name: string) =>
    name in values ? `${name}=${values[name]}` : line,
  );
  for (const name of Object.keys(values)) expect(filled).toContain(`\n${name}=${values[name]}\n`);
  return filled;
}

interface Run {
  code: number | null;
  output: string;
}

/** A command in its own process group (npm, a shell and node go together), with its output so far. */
interface Started {
  output: () => string;
  stop: () => void;
}

async function run(command: string, args: string[], cwd: string, env: Record<string, string>): Promise<Run> {
  const child = spawn(command, args, { cwd, env: { PATH: process.env.PATH ?? '', ...env } });
  const watched = watchOutput(child);
  const { code } = await watched.exited;
  return { code, output: watched.output() };
}

function start(command: string, args: string[], cwd: string, env: Record<string, string>): Started {
  const child = spawn(command, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    detached: true,
  });
  return { output: watchOutput(child).output, stop: () => killProcessGroup(child) };
}

/** waitFor, failing with what the commands printed by then. */
async function waitShowing<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs: number,
  ...commands: Started[]
): Promise<T> {
  try {
    return await waitFor(check, what, timeoutMs);
  } catch (error) {
    const printed = commands.map((command) => command.output().slice(-3000)).join('\n---\n');
    throw new Error(`${error instanceof Error ? error.message : String(error)}; printed:\n${printed}`);
  }
}

describe("a developer's .env in the project's root", () => {
  let copy: string;
  const started: Started[] = [];
  const removed: TempDataDir[] = [];
  afterEach(async () => {
    for (const command of started.splice(0)) command.stop();
    await Promise.all(removed.splice(0).map((dir) => dir.remove()));
  });

  beforeAll(async () => {
    copy = await mkdtemp(path.join(tmpdir(), 'bridge-with-dotenv-'));
    // manifest.yml: the fake Slack grants the scopes and features of the manifest in use; test/: its fakes.
    const entries = ['tsconfig.json', 'tsconfig.build.json', 'manifest.yml', 'src'];
    for (const entry of entries) {
      await cp(path.join(ROOT, entry), path.join(copy, entry), { recursive: true });
    }
    await cp(path.join(ROOT, 'test'), path.join(copy, 'test'), {
      recursive: true,
      filter: (source) => source !== path.join(ROOT, 'test/.tmp'),
    });
    await symlink(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'));
    // `npm start` there builds the copy first: a whole tsc run over the same src (12 s of CPU), when what is
    // checked is which variables the started bot reads. There, its build is this run's compiled src;
    // test/e2e/process.test.ts runs the real build.
    const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    pkg.scripts.build = 'true';
    await writeFile(path.join(copy, 'package.json'), JSON.stringify(pkg, null, 2));
    await symlink(inject('compiledSources'), path.join(copy, 'dist'));
    await writeFile(
      path.join(copy, '.env'),
      developersDotEnv(await readFile(path.join(ROOT, '.env.example'), 'utf8')),
    );
  });
  afterAll(async () => {
    if (copy) await rm(copy, { recursive: true, force: true });
  });

  it('is what the bot reads when started there', async () => {
    // The copy's src is this project's, compiled for this run.
    const bot = startEntryPoint('src/main.ts', [], { PORT: 'eighty' }, { cwd: copy, dotEnv: 'read' });
    expect((await bot.exited).code).toBe(1);
    // Every other required variable comes from the .env.
    expect(bot.output().trim().split('\n')).toEqual([
      'Configuration error: PORT must be a whole number from 1 to 65535 (got "eighty")',
    ]);
  });

  it('is not read by the bot or a command as the tests start them: never in the root, nor beside a .env unasked', async () => {
    expect(() => startEntryPoint('src/main.ts', [], {}, { cwd: ROOT })).toThrow(/project's root/);
    expect(() => startEntryPoint('src/cli/sessions.ts', ['list'], {}, { cwd: copy })).toThrow(
      /whose \.env it would read/,
    );
    // By default, a directory with none: every variable the .env would set is missing.
    const bot = startEntryPoint('src/main.ts', [], { PORT: 'eighty' }, { timeoutMs: 20_000 });
    expect((await bot.exited).code).toBe(1);
    expect(bot.output()).toContain('Configuration error: SLACK_BOT_TOKEN is required');
    expect(bot.output()).toContain('No .env here');
  });

  it('is not read by `npm start` with every variable set, as test/e2e/process.test.ts starts it', async () => {
    const npmStart = await run(
      'npm',
      ['start', '--silent'],
      copy,
      withEveryVariable({ HOME: process.env.HOME ?? '', PORT: 'eighty' }),
    );
    expect(npmStart.code).toBe(1);
    // Found (no "No .env here" hint), and none of its values used: the variables set empty stay unset.
    expect(npmStart.output.trim().split('\n')).toEqual([
      'Configuration error: SLACK_BOT_TOKEN is required (the Bot User OAuth Token, xoxb-…)',
      'Configuration error: SLACK_SIGNING_SECRET is required (needed in HTTP mode; set SLACK_APP_TOKEN instead to use Socket Mode)',
      'Configuration error: PORT must be a whole number from 1 to 65535 (got "eighty")',
      'Configuration error: AGENT_BASE_URL is required (e.g. https://host/v1)',
      'Configuration error: AGENT_API_KEY is required (the agent service API key)',
      'Configuration error: AGENT_ID is required (the default agent id)',
    ]);
  });

  it('is kept out of every test that starts the bot or a command: none starts one another way', async () => {
    // The files that may start node or npm themselves, and why none of them reads a developer's .env.
    const allowed: Record<string, string> = {
      'helpers/entry-point.ts': 'startEntryPoint: never in the root, nor beside a .env unasked',
      'helpers/typescript.ts': 'runs tsc, no entry point',
      'global-setup.ts': 'hands the compiled sources to startEntryPoint',
      'developer-dotenv.test.ts': 'this file, in its copy of the project',
      'e2e/process.test.ts': '`npm start` with withEveryVariable',
      'fakes/slack-contracts/generate.ts': 'npx biome, no entry point',
    };
    expect(await readFile(path.join(ROOT, 'test/e2e/process.test.ts'), 'utf8')).toContain(
      'withEveryVariable(',
    );
    const files = (await readdir(path.join(ROOT, 'test'), { recursive: true })).filter(
      (file) => file.endsWith('.ts') && !file.startsWith('.tmp') && !(file in allowed),
    );
    const startsNode =
      /process\.execPath|\bfork\(|\bexeca|entryPointCommand\(|compiledSources|\b(spawn|spawnSync|exec|execSync|execFile|execFileSync)\(\s*['"`](node|npm|npx|tsx)\b/;
    const offenders: string[] = [];
    for (const file of files) {
      if (startsNode.test(await readFile(path.join(ROOT, 'test', file), 'utf8'))) offenders.push(file);
    }
    expect(offenders).toEqual([]);
  });

  it('changes nothing in the bot started as `npm run fakes` says, which answers the mention it says to send', async () => {
    const port = String(await freePort());
    // The admin port off 9090, which may be taken here.
    const adminPort = String(await freePort());
    const fakes = start('npm', ['run', '--silent', 'fakes'], copy, {
      FAKE_SLACK_PORT: String(await freePort()),
      FAKE_AGENT_PORT: String(await freePort()),
      PORT: port,
      ADMIN_PORT: adminPort,
    });
    started.push(fakes);
    const printed = await waitShowing(
      () =>
        /with[^\n]*:\n\n([\s\S]*?npm start)\n[\s\S]*\n {2}(.*fakes:mention.*)\n/.exec(fakes.output()) ??
        undefined,
      "the fakes' instructions",
      20_000,
      fakes,
    );
    const [, startLine = '', mentionLine = ''] = printed;
    expect(startLine).toContain(` PORT=${port}`);
    expect(startLine).toContain(`ADMIN_PORT=${adminPort}`);

    // The bot keeps its store in ./data (DATA_DIR unset): here, one a developer's earlier start left, in the
    // current schema. A first start's initdb (seconds of CPU) proves nothing about which variables it reads.
    const data = await freshDataDir();
    removed.push(data);
    await symlink(data.path, path.join(copy, 'data'));

    // Typed in a terminal in the project's root, with node on the compiled entry point for `npm start`, which
    // would build the copy first: test/e2e/process.test.ts runs the real `npm start`.
    expect(startLine).toMatch(/ npm start$/);
    const command = `${startLine.replace(/npm start$/, '')}${entryPointCommand('src/main.ts')}`;
    const bot = start('sh', ['-c', command], copy, {});
    started.push(bot);
    await waitShowing(
      async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok,
      'the bot to be ready',
      60_000,
      bot,
    );
    const sent = await run('sh', ['-c', mentionLine], copy, { HOME: process.env.HOME ?? '' });
    expect(sent.output).toMatch(/-> 200 in/);
    // It waits for the answer and shows it.
    expect(sent.output).toMatch(/^bot: echo\[s-\d+#1\]: hello agent$/m);
    expect(sent.code).toBe(0);
    await waitShowing(
      () => /^slack: chat\.postMessage .*"channel":"C0LOCAL"/m.test(fakes.output()),
      'the answer posted to the fake Slack',
      20_000,
      fakes,
      bot,
    );
    // Slack took every call the bot made (the fakes' log names the error of one it refused).
    expect(fakes.output()).not.toMatch(/^slack: .*\} -> /m);
  }, 120_000);
});
