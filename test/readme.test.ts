import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENV_VARIABLES } from '../src/config.js';

/** The first-column names of the README's configuration table, in order, repeats kept. */
function readmeTableVariables(): string[] {
  const readme = readFileSync('README.md', 'utf8');
  const section = /^## Configuration\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? '';
  return [...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((match) => match[1] as string);
}

/** The names `.env.example` sets, commented-out optional ones included. */
function envExampleVariables(): string[] {
  const example = readFileSync('.env.example', 'utf8');
  return [...example.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((match) => match[1] as string);
}

describe.each([
  { file: "README.md's configuration table", names: readmeTableVariables() },
  { file: '.env.example', names: envExampleVariables() },
])('$file', ({ names }) => {
  it('names every variable the bot reads, once', () => {
    expect([...names].sort()).toEqual([...ENV_VARIABLES].sort());
  });

  it('names no variable the bot does not read', () => {
    expect(names.filter((name) => !ENV_VARIABLES.includes(name))).toEqual([]);
  });
});
