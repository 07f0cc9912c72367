import { readFileSync } from 'node:fs';
import { cruise, type IModule } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';

/**
 * The folders of src/ from the top (Slack in) down (what everything uses). A module may import from its own
 * folder and from folders below it, never from one above or beside it: data flows one way, as the README's
 * arrow says (slack-in → inbox → conversation → sessions → agent / slack-out), and there are no import
 * cycles between folders.
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
  ['observability', 'util'],
  ['config'],
];

/**
 * The README's arrow of the folders, as layers: `a → b / c` is [[a], [b, c]]. The arrow is the first one in
 * the README that starts at `slack-in`.
 */
function readmeArrow(): string[][] {
  const readme = readFileSync('README.md', 'utf8');
  const arrow = /slack-in\s*→\s*[a-z][a-z-]*(?:\s*[→/]\s*[a-z][a-z-]*)*/.exec(readme)?.[0];
  if (arrow === undefined) throw new Error('README.md has no arrow of the folders starting at slack-in');
  return arrow.split('→').map((layer) => layer.split('/').map((folder) => folder.trim()));
}

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

const cruised = await cruise(
  ['src'],
  { tsPreCompilationDeps: true, doNotFollow: { path: 'node_modules' } },
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

  it("orders the folders as the README's arrow does, '/' joining folders of one layer", () => {
    const arrow = readmeArrow();
    expect(arrow.map((layer) => layer.join(' / ')).join(' → ')).toBe(
      'slack-in → inbox → conversation → sessions → agent / slack-out',
    );
    const first = layerOf(arrow[0]?.[0] ?? '');
    const layers = LAYERS.slice(first, first + arrow.length).map((layer) => [...layer].sort());
    expect(layers).toEqual(arrow.map((layer) => [...layer].sort()));
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
