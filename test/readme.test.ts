import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { lexer, type Token, type Tokens, walkTokens } from 'marked';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigError, ENV_VARIABLES, loadConfig } from '../src/config/index.js';

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

/** The README's configuration table: each variable with its second column (required, a default, …). */
function readmeTableRows(): { name: string; need: string }[] {
  const readme = readFileSync('README.md', 'utf8');
  const section = /^## Configuration\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? '';
  return [...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \| ([^|]*) \|/gm)].map((match) => ({
    name: match[1] as string,
    need: (match[2] as string).trim(),
  }));
}

describe("README.md's configuration table", () => {
  it('calls a variable plainly "required" only if the bot refuses to start without it in either mode', () => {
    // A complete multi-workspace (OAuth) configuration: it has no SLACK_BOT_TOKEN, and must not have one.
    const oauth: Record<string, string> = {
      SLACK_SIGNING_SECRET: 'shh-signing',
      AGENT_BASE_URL: 'https://agent-service.internal/v1/',
      AGENT_API_KEY: 'key-123',
      AGENT_ID: 'agent-1',
      SLACK_CLIENT_ID: '1111111111.2222222222',
      SLACK_CLIENT_SECRET: 'client-secret-value',
      SLACK_STATE_SECRET: 'state-secret-0123456789',
      TOKEN_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
    };
    expect(() => loadConfig(oauth)).not.toThrow();
    const plainlyRequired = readmeTableRows().filter((row) => row.need === 'required');
    expect(plainlyRequired.length).toBeGreaterThan(0);
    for (const { name } of plainlyRequired) {
      const { [name]: _left, ...without } = oauth;
      expect(() => loadConfig(without), `${name} is marked "required"`).toThrow(ConfigError);
    }
  });
});

const README = readFileSync('README.md', 'utf8');
const TOKENS = lexer(README);

/** The README and every page of docs/: what their links, paths and anchors must hold to. */
const DOCUMENTS = [
  'README.md',
  ...readdirSync('docs')
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

function tokensIn<T extends Token>(tokens: Token[], type: T['type']): T[] {
  const found: T[] = [];
  walkTokens(tokens, (token) => {
    if (token.type === type) found.push(token as T);
  });
  return found;
}

function tokensOf<T extends Token>(type: T['type']): T[] {
  return tokensIn<T>(TOKENS, type);
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

/** The anchors of a Markdown file's headings. */
function anchorsOf(file: string): Set<string> {
  const tokens = lexer(readFileSync(file, 'utf8'));
  return new Set(tokensIn<Tokens.Heading>(tokens, 'heading').map((heading) => anchor(heading.text)));
}

/** `docs/x.md` + `../README.md#a` → `README.md#a`: a link as a path from the repository's root. */
function fromRoot(file: string, href: string): string {
  return posix.normalize(posix.join(posix.dirname(file), href));
}

/** Code spans that are paths: they start with one of the repository's top-level files or directories. */
function pathsIn(spans: string[]): string[] {
  return spans
    .filter((text) => /^(\.\/)?[\w.*-]+(\/[\w.*-]*)*$/.test(text))
    .filter((text) => {
      const top = globPattern(text.replace(/^\.\//, '').split('/')[0] as string);
      return [...TOP_LEVEL].some((entry) => top.test(entry));
    });
}

describe.each(DOCUMENTS)('%s', (file) => {
  const tokens = lexer(readFileSync(file, 'utf8'));

  it('links only to files and directories the repository holds, and to headings they have', () => {
    const hrefs = [...tokensIn<Tokens.Link>(tokens, 'link'), ...tokensIn<Tokens.Image>(tokens, 'image')].map(
      (token) => token.href,
    );
    const local = hrefs.filter((href) => !/^[a-z][a-z+.-]*:/i.test(href));
    const targets = local.map((href) => {
      const [path = '', hash] = href.split('#');
      return { href, path: path === '' ? file : fromRoot(file, path), hash };
    });
    expect(targets.filter((target) => !inRepo(target.path)).map((target) => target.href)).toEqual([]);
    const badAnchors = targets.filter(
      (target) =>
        target.hash !== undefined && target.path.endsWith('.md') && !anchorsOf(target.path).has(target.hash),
    );
    expect(badAnchors.map((target) => target.href)).toEqual([]);
  });

  it('names only paths the repository holds, or output git ignores', () => {
    const spans = tokensIn<Tokens.Codespan>(tokens, 'codespan').map((span) => span.text);
    // File names in code blocks (the flow diagram, commands) too.
    const inBlocks = tokensIn<Tokens.Code>(tokens, 'code').flatMap(
      (block) => block.text.match(/\b(?:src|test|demo|bench|deploy|docs)\/[\w./*-]*[\w*/]/g) ?? [],
    );
    const paths = [...pathsIn(spans), ...inBlocks];
    const missing = paths.filter((path) => !inRepo(path));
    const ignored = ignoredByGit(missing);
    expect(missing.filter((path) => !ignored.has(path))).toEqual([]);
  });
});

describe('README.md', () => {
  it('is at most 200 lines, with the rest in docs/', () => {
    expect(README.split('\n').length).toBeLessThanOrEqual(200);
    const linked = tokensOf<Tokens.Link>('link').map((token) => token.href);
    for (const page of DOCUMENTS.filter((document) => document.startsWith('docs/')))
      expect(linked).toContain(page);
  });

  it('links the demo picture and names the main paths', () => {
    const images = tokensOf<Tokens.Image>('image').map((token) => token.href);
    expect(images).toContain('docs/demo.png');
    const paths = pathsIn(tokensOf<Tokens.Codespan>('codespan').map((span) => span.text));
    expect(paths).toEqual(expect.arrayContaining(['src/main.ts', 'test/e2e/', '.ci/run', 'manifest*.yml']));
  });

  it('states the direction data flows in, as the architecture test checks it', () => {
    expect(tokensOf<Tokens.Codespan>('codespan').map((span) => span.text)).toContain(
      'slack-in → inbox → conversation → sessions → agent / slack-out',
    );
  });

  it('keeps the order a newcomer reads in: run it, try it, set it up, how it works, structure, help', () => {
    const sections = tokensOf<Tokens.Heading>('heading')
      .filter((heading) => heading.depth === 2)
      .map((heading) => heading.text.replace(/:.*$/, ''));
    expect(sections).toEqual([
      'Try it',
      'Create the Slack app',
      'Configuration',
      'How a message flows',
      'Project structure',
      'Troubleshooting',
      'More',
    ]);
  });

  it("counts Docker Compose's restarts as docker-compose.yml sets them (docs/deployment.md)", () => {
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
        readFileSync('docs/deployment.md', 'utf8'),
      );
    expect(sentence?.slice(1)).toEqual([words[restarts], String(restarts), words[restarts + 1]]);
  });

  it('starts with the two commands that work on a fresh machine: the demo, and the tests', () => {
    const first = TOKENS.find((token): token is Tokens.Code => token.type === 'code');
    const commands = (first?.text ?? '').split('\n').map((line) => line.replace(/#.*$/, '').trim());
    expect(commands).toEqual(['npm ci && npm run demo', 'npm test']);
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
