import { readFileSync } from 'node:fs';
import { cruise, type IModule } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';

/**
 * The folders of src/ from the top (Slack in) down (what everything uses). A module may import from its own
 * folder and from folders below it, never from one above or beside it: data flows one way, as the README's
 * arrows say (slack-in → inbox → conversation → sessions → agent / slack-out, over the shared
 * installations → store → observability → util → config), and there are no import cycles between folders.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['main.ts'],
  ['app.ts', 'cli'],
  // The composition root's parts: start-up checks, readiness, start and stop order.
  ['app'],
  ['slack-in'],
  ['inbox'],
  ['conversation'],
  ['sessions'],
  ['agent', 'slack-out'],
  // Slack installations (OAuth mode): their tokens sealed, kept in the store.
  ['installations'],
  ['store'],
  ['observability'],
  // Helpers of plain JavaScript (text, timers, backoff): they import nothing of the bot's.
  ['util'],
  ['config'],
];

/** The arrows the docs draw of the folders (the flow, then the shared folders under it), as written. */
const FLOW_ARROW = /slack-in\s*→\s*[a-z][a-z-]*(?:\s*[→/]\s*[a-z][a-z-]*)*/;
const SHARED_ARROW = /installations\s*→\s*[a-z][a-z-]*(?:\s*[→/]\s*[a-z][a-z-]*)*/;

/** An arrow's layers: `a → b / c` is [[a], [b, c]]. The first arrow of `file` that `pattern` finds. */
function arrowIn(file: string, pattern: RegExp): string[][] {
  const arrow = pattern.exec(readFileSync(file, 'utf8'))?.[0];
  if (arrow === undefined) throw new Error(`${file} has no arrow of the folders matching ${pattern}`);
  return arrow.split('→').map((layer) => layer.split('/').map((folder) => folder.trim()));
}

const written = (arrow: string[][]) => arrow.map((layer) => layer.join(' / ')).join(' → ');

/** `src/inbox/worker.ts` → `inbox`; `src/app.ts` → `app.ts`. */
function unitOf(path: string): string | undefined {
  const match = /^src\/([^/]+)/.exec(path);
  return match?.[1];
}

function layerOf(unit: string): number {
  const index = LAYERS.findIndex((layer) => layer.includes(unit));
  if (index === -1)
    throw new Error(`src/${unit} is in no layer of test/architecture.test.ts: add it where it belongs`);
  return index;
}

// dependency-cruiser reads TypeScript through the compiler's JavaScript API, which TypeScript 7 no longer has
// (it supports TypeScript below 7), or through swc: swc it is. Type-only imports count, as they should. Were
// the files not parsed at all, every module would have no imports and the checks below would pass with
// nothing to check: the axios check fails then.
const cruised = await cruise(
  ['src'],
  { parser: 'swc', doNotFollow: { path: 'node_modules' } },
  {},
  {
    tsConfig: { fileName: 'tsconfig.json' },
  },
);
if (typeof cruised.output === 'string') throw new Error('dependency-cruiser returned a report, not a result');
const modules: IModule[] = cruised.output.modules.filter((module) => module.source.startsWith('src/'));

describe('the layout of src/', () => {
  it('is read: every folder and top-level file of src/ is in a layer', () => {
    expect(modules.length).toBeGreaterThan(20);
    for (const module of modules) layerOf(unitOf(module.source) ?? '');
  });

  it('imports only downwards, so no two folders import each other', () => {
    const upwards: string[] = [];
    for (const module of modules) {
      const from = unitOf(module.source) ?? '';
      for (const dependency of module.dependencies) {
        const to = unitOf(dependency.resolved);
        if (to === undefined || to === from) continue;
        if (layerOf(to) <= layerOf(from)) upwards.push(`${module.source} → ${dependency.resolved}`);
      }
    }
    expect(upwards).toEqual([]);
  });

  it("orders the folders as the README's arrows do, '/' joining folders of one layer", () => {
    const flow = arrowIn('README.md', FLOW_ARROW);
    const shared = arrowIn('README.md', SHARED_ARROW);
    expect(written(flow)).toBe('slack-in → inbox → conversation → sessions → agent / slack-out');
    // Every layer from Slack in down to the configuration: what the README says is all there is.
    const first = layerOf('slack-in');
    const layers = LAYERS.slice(first).map((layer) => [...layer].sort());
    expect(layers).toEqual([...flow, ...shared].map((layer) => [...layer].sort()));
  });

  it('is drawn in the development guide as in the README', () => {
    expect(written(arrowIn('docs/development.md', FLOW_ARROW))).toBe(
      written(arrowIn('README.md', FLOW_ARROW)),
    );
    expect(written(arrowIn('docs/development.md', SHARED_ARROW))).toBe(
      written(arrowIn('README.md', SHARED_ARROW)),
    );
  });

  it('has no import cycles between modules', () => {
    const cycles = modules.flatMap((module) =>
      module.dependencies
        .filter((dependency) => dependency.circular)
        .map((dependency) => `${module.source} → ${dependency.resolved}`),
    );
    expect(cycles).toEqual([]);
  });

  it("talks HTTP only through the design card's clients: axios to the agent service and response_url, Bolt's WebClient to Slack's Web API", () => {
    const importers = (name: string) =>
      modules
        .filter((module) => module.dependencies.some((dependency) => dependency.module === name))
        .map((module) => module.source)
        .sort();
    expect(importers('axios')).toEqual(['src/agent/client.ts', 'src/slack-out/writes.ts']);
    for (const other of ['undici', 'node-fetch', 'got', 'ky']) expect(importers(other)).toEqual([]);
    // The global fetch, not a method of that name (lru-cache's `cache.fetch`).
    const withFetch = modules
      .filter((module) => /(?<![.\w$])fetch\(/.test(readFileSync(module.source, 'utf8')))
      .map((module) => module.source);
    expect(withFetch).toEqual([]);
  });
});
