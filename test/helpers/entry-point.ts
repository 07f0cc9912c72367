import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { ENV_VARIABLES } from '../../src/config/index.js';
import { TEST_NODE_FLAGS } from './node-flags.js';

/**
 * Running the project's entry points (the bot, `npm run sessions`) in child processes, unaffected by a
 * developer's `.env`: both read `.env` from their working directory, and the project's root may hold one
 * (with their own Slack app token, their database). test/developer-dotenv.test.ts checks it.
 */

/** The project's root, where package.json is. */
export const PROJECT_ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Node's arguments that run an entry point, e.g. `entryPointArgs('src/main.ts')`: its JavaScript compiled
 * for this run by test/global-setup.ts (test/helpers/compiled-sources.ts), by absolute path, so it runs
 * from any working directory; with the flags Vitest's workers run with (test/helpers/node-flags.ts).
 */
export function entryPointArgs(file: string): string[] {
  return [
    ...TEST_NODE_FLAGS,
    '--enable-source-maps',
    path.join(inject('compiledSources'), file.replace(/\.ts$/, '.js')),
  ];
}

/**
 * An empty working directory for entry points run by the tests (in test/.tmp, which git ignores): no `.env`
 * is read there. They are always given DATA_DIR or DATABASE_URL, so nothing is written there.
 */
export function emptyWorkdir(): string {
  const dir = path.join(PROJECT_ROOT, 'test/.tmp/workdir');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * `env` with every other variable the bot reads set empty, which the bot reads as unset and which a `.env`
 * does not override. For `npm start`, which runs in the project's root whatever the working directory.
 */
export function withEveryVariable(env: Record<string, string | undefined>): Record<string, string> {
  const all: Record<string, string> = Object.fromEntries(ENV_VARIABLES.map((name) => [name, '']));
  for (const [name, value] of Object.entries(env)) if (value !== undefined) all[name] = value;
  return all;
}
