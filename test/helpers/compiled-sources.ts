import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { runTsc, TYPESCRIPT_VERSION } from './typescript.js';

/**
 * src compiled to JavaScript once per test run, for the tests that start the bot or the sessions command in a
 * child process: node runs the output directly, as `npm start` runs dist/, instead of every child loading a
 * TypeScript loader and compiling src again (measured: about twice the CPU of a compiled start).
 *
 * It is `npm run build` (tsconfig.build.json) without its type check, which `npm test` runs anyway, and with
 * the source maps inline, so a failing test's stack traces name the TypeScript lines. One test still runs the
 * real `npm start` (test/e2e/process.test.ts).
 */

/** Builds older than this, of sources since changed, are removed; a run lasts minutes. */
const STALE_BUILD_MS = 60 * 60 * 1000;

/** What the build reads besides src: the compiler's options, and package.json's "type" (ES modules or not). */
const CONFIG_FILES = ['package.json', 'tsconfig.json', 'tsconfig.build.json'];
/** `npm run build` without its type check, source maps inline. */
const TSC_ARGS = ['-p', 'tsconfig.build.json', '--noCheck', '--sourceMap', 'false', '--inlineSourceMap'];

/**
 * Compiles `root`'s src into test/.tmp/build/<hash of what the build reads>/ unless that build exists, and
 * returns its directory. A build appears whole or not at all (written aside, then renamed), so runs side by
 * side share it safely.
 */
export async function compileSources(root: string): Promise<string> {
  const sources = (await readdir(path.join(root, 'src'), { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
    .sort();
  const hash = createHash('sha256').update(TYPESCRIPT_VERSION).update(TSC_ARGS.join(' '));
  for (const file of [...CONFIG_FILES, ...sources]) {
    hash.update(`\0${file}\0${await readFile(path.join(root, file), 'utf8')}`);
  }
  const builds = path.join(root, 'test/.tmp/build');
  const build = path.join(builds, hash.digest('hex').slice(0, 16));
  if (existsSync(build)) return build;

  await mkdir(builds, { recursive: true });
  const staging = await mkdtemp(path.join(builds, 'staging-'));
  try {
    const compiled = await runTsc([...TSC_ARGS, '--outDir', staging], root);
    if (compiled.code !== 0) throw new Error(`compiling src for the tests failed:\n${compiled.output}`);
    await rename(staging, build).catch((error: unknown) => {
      // Another run finished the same build first.
      if (!existsSync(build)) throw error;
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  await removeStaleBuilds(builds, build);
  return build;
}

async function removeStaleBuilds(builds: string, current: string): Promise<void> {
  const now = Date.now();
  for (const entry of await readdir(builds)) {
    const dir = path.join(builds, entry);
    if (dir === current) continue;
    const modified = await stat(dir).then(
      (stats) => stats.mtimeMs,
      () => now,
    );
    if (now - modified > STALE_BUILD_MS) await rm(dir, { recursive: true, force: true });
  }
}
