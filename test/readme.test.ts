import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { lexer, type Token, type Tokens, walkTokens } from 'marked';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ENV_VARIABLES } from '../src/config/index.js';

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

const README = readFileSync('README.md', 'utf8');
const TOKENS = lexer(README);

function tokensOf<T extends Token>(type: T['type']): T[] {
  const found: T[] = [];
  walkTokens(TOKENS, (token) => {
    if (token.type === type) found.push(token as T);
  });
  return found;
}

/** The files git tracks: what a clone holds (not what happens to lie in this working directory). */
const TRACKED = execFileSync('git', ['ls-files', '-z'], { encoding: 'utf8' }).split('\0').filter(Boolean);
const TOP_LEVEL = new Set(TRACKED.map((file) => file.split('/')[0] as string));

/** A glob with `*` (within one path segment) as a regular expression. */
function globPattern(glob: string): RegExp {
  const parts = glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('[^/]*')}$`);
}

/** Whether a path relative to the root is a tracked file or a directory holding one (`*` as in a glob). */
function inRepo(path: string): boolean {
  const wanted = path.replace(/^\.\//, '');
  if (wanted.includes('*')) return TRACKED.some((file) => globPattern(wanted).test(file));
  if (wanted.endsWith('/')) return TRACKED.some((file) => file.startsWith(wanted));
  return TRACKED.includes(wanted) || TRACKED.some((file) => file.startsWith(`${wanted}/`));
}

/** Paths git ignores are output (bench results, a filled-in .env): named, not kept in the repository. */
function ignoredByGit(paths: string[]): Set<string> {
  if (paths.length === 0) return new Set();
  try {
    const out = execFileSync('git', ['check-ignore', '--no-index', '--stdin'], {
      input: paths.join('\n'),
      encoding: 'utf8',
    });
    return new Set(out.split('\n').filter(Boolean));
  } catch {
    // Exit status 1: none of them is ignored.
    return new Set();
  }
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading
    .replace(/`/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

describe('README.md', () => {
  it('links only to files and directories the repository holds, and to headings it has', () => {
    const hrefs = [...tokensOf<Tokens.Link>('link'), ...tokensOf<Tokens.Image>('image')].map(
      (token) => token.href,
    );
    const relative = hrefs.filter((href) => !/^[a-z][a-z+.-]*:/i.test(href) && !href.startsWith('#'));
    const anchors = hrefs.filter((href) => href.startsWith('#'));
    expect(relative).toContain('docs/demo.png');
    expect(relative.filter((href) => !inRepo(href.split('#')[0] ?? ''))).toEqual([]);

    const headings = new Set(tokensOf<Tokens.Heading>('heading').map((heading) => anchor(heading.text)));
    expect(anchors.length).toBeGreaterThan(0);
    expect(anchors.filter((href) => !headings.has(href.slice(1)))).toEqual([]);
  });

  it('names only paths the repository holds, or output git ignores', () => {
    // A code span is a path when it starts with one of the repository's top-level files or directories.
    const paths = tokensOf<Tokens.Codespan>('codespan')
      .map((span) => span.text)
      .filter((text) => /^(\.\/)?[\w.*-]+(\/[\w.*-]*)*$/.test(text))
      .filter((text) => {
        const top = globPattern(text.replace(/^\.\//, '').split('/')[0] as string);
        return [...TOP_LEVEL].some((entry) => top.test(entry));
      });
    expect(paths).toEqual(expect.arrayContaining(['src/main.ts', 'test/e2e/', '.ci/run', 'manifest*.yml']));
    const missing = paths.filter((path) => !inRepo(path));
    const ignored = ignoredByGit(missing);
    expect(missing.filter((path) => !ignored.has(path))).toEqual([]);
  });

  it('keeps the order a newcomer reads in: run it, try it, set it up, then behaviour, operations, structure, help', () => {
    const sections = tokensOf<Tokens.Heading>('heading')
      .filter((heading) => heading.depth === 2)
      .map((heading) => heading.text.replace(/:.*$/, ''));
    const expected = [
      'Try it',
      'Create the Slack app',
      'Configuration',
      'How it behaves',
      'Operations',
      'Project structure',
      'Troubleshooting',
    ];
    expect(sections.filter((section) => expected.includes(section))).toEqual(expected);
    expect(sections[0]).toBe('Try it');
  });

  it("counts Docker Compose's restarts as docker-compose.yml sets them", () => {
    const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as {
      services: Record<string, { restart?: string }>;
    };
    const limits = Object.entries(compose.services)
      .filter(([name]) => name.startsWith('bot'))
      .map(([, service]) => /^on-failure:(\d+)$/.exec(service.restart ?? '')?.[1]);
    expect(new Set(limits).size).toBe(1);
    const restarts = Number(limits[0]);
    const words = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];
    const sentence =
      /restarted (\w+) times and then left\s+stopped \(`restart: on-failure:(\d+)`: (\w+) runs in all\)/.exec(
        README,
      );
    expect(sentence?.slice(1)).toEqual([words[restarts], String(restarts), words[restarts + 1]]);
  });

  it('starts with the two commands: run the bot, and test it', () => {
    const first = TOKENS.find((token): token is Tokens.Code => token.type === 'code');
    const commands = (first?.text ?? '').split('\n').map((line) => line.replace(/#.*$/, '').trim());
    expect(commands).toEqual(['npm ci && npm start', 'npm test']);
  });
});

describe('.ci/run', () => {
  it("runs exactly the README's test command, on each Node it tests", () => {
    const first = TOKENS.find((token): token is Tokens.Code => token.type === 'code');
    const readmeTest = (first?.text ?? '')
      .split('\n')
      .map((line) => line.replace(/#.*$/, '').trim())
      .find((line) => /\btest\b/.test(line));
    expect(readmeTest).toBe('npm test');

    // Its commands, without comments, echoes, and the variables set for one command (PATH=… npm test).
    const commands = readFileSync('.ci/run', 'utf8')
      .split('\n')
      .map((line) => line.replace(/(^|\s)#.*$/, '').trim())
      .filter((line) => line !== '' && !line.startsWith('echo '))
      .map((line) => line.replace(/^([A-Z_]+=("[^"]*"|\S*)\s+)+/, ''));
    const tests = commands.filter((line) => /\b(test|vitest|biome|tsc)\b/.test(line));
    expect(tests).toEqual([readmeTest, readmeTest]);
  });
});
