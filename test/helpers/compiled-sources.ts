import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import ts from 'typescript';

/**
 * src compiled to JavaScript once per test run, for the tests that start the bot or the sessions command in a
 * child process: node runs the output directly, as `npm start` runs dist/, instead of every child loading a
 * TypeScript loader and compiling src again (measured: about twice the CPU of a compiled start).
 *
 * Each file is compiled alone with tsconfig.build.json's options, which the project's `isolatedModules`
 * allows: the output is the same JavaScript `npm run build` writes (compared file by file), without its type
 * check, which `npm test` runs anyway. One test still runs the real `npm start` (test/e2e/process.test.ts).
 */

/** Builds older than this, of sources since changed, are removed; a run lasts minutes. */
const STALE_BUILD_MS = 60 * 60 * 1000;

/**
 * Compiles `root`'s src into test/.tmp/build/<hash of the sources and options>/ unless that build exists, and
 * returns its directory. A build appears whole or not at all (written aside, then renamed), so runs side by
 * side share it safely.
 */
export async function compileSources(root: string): Promise<string> {
  const config = readBuildConfig(root);
  const files = [...config.fileNames].sort();
  const sources = await Promise.all(files.map((file) => readFile(file, 'utf8')));
  // The options name paths under `root`: hashed relative to it, so the hash says which sources and options,
  // not where the checkout is.
  const options = JSON.stringify(config.options).split(JSON.stringify(root).slice(1, -1)).join('<root>');
  const hash = createHash('sha256').update(ts.version).update(options);
  files.forEach((file, index) => {
    hash.update(`\0${path.relative(root, file)}\0${sources[index]}`);
  });
  const builds = path.join(root, 'test/.tmp/build');
  const build = path.join(builds, hash.digest('hex').slice(0, 16));
  if (existsSync(build)) return build;

  await mkdir(builds, { recursive: true });
  const staging = await mkdtemp(path.join(builds, 'staging-'));
  await Promise.all(
    files.map(async (file, index) => {
      const { outputText } = ts.transpileModule(sources[index] ?? '', {
        fileName: file,
        compilerOptions: {
          ...config.options,
          // What NodeNext emits for this package ("type": "module"), which one file alone cannot look up.
          module: ts.ModuleKind.ESNext,
          // Stack traces in a failing test's output name the TypeScript lines.
          sourceMap: false,
          inlineSourceMap: true,
        },
      });
      const output = path.join(staging, path.relative(root, file).replace(/\.ts$/, '.js'));
      await mkdir(path.dirname(output), { recursive: true });
      await writeFile(output, outputText);
    }),
  );
  try {
    await rename(staging, build);
  } catch (error) {
    // Another run finished the same build first.
    await rm(staging, { recursive: true, force: true });
    if (!existsSync(build)) throw error;
  }
  await removeStaleBuilds(builds, build);
  return build;
}

function readBuildConfig(root: string): ts.ParsedCommandLine {
  const config = ts.getParsedCommandLineOfConfigFile(path.join(root, 'tsconfig.build.json'), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    },
  });
  if (!config) throw new Error('tsconfig.build.json could not be read');
  return config;
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
