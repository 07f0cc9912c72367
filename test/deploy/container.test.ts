import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ENV_VARIABLES } from '../../src/config/index.js';
import { runTsc } from '../helpers/typescript.js';
import {
  type Env,
  EXIT_MARGIN_MS,
  type Instruction,
  imageUser,
  LISTENERS,
  type Listener,
  listenerOn,
  listenerPort,
  parseDockerfile,
  ROOT,
  readProjectFile,
  type Stage,
  shutdownTimeoutMs,
  stageEnv,
} from './support.js';

// No Docker engine runs the image here: these tests read the Dockerfile and compose file and check them
// against the project (paths, build output, configuration) instead.

const stages = parseDockerfile(readProjectFile('Dockerfile'));
const runtime = stages.at(-1) as Stage;
const imageEnv = stageEnv(runtime);

function instructions(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((instruction) => instruction.keyword === keyword);
}

function lastArgs(stage: Stage, keyword: string): string | undefined {
  return instructions(stage, keyword).at(-1)?.args;
}

/** `.dockerignore`: which paths of the repository never reach the build context. */
function dockerignored(relative: string): boolean {
  const rules = readProjectFile('.dockerignore')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  let ignored = false;
  for (const rule of rules) {
    const negated = rule.startsWith('!');
    const pattern = (negated ? rule.slice(1) : rule).replace(/^\/+|\/+$/g, '');
    const regex = new RegExp(
      `^${pattern
        .split('**')
        .map((part) => part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*'))
        .join('.*')}(/.*)?$`,
    );
    if (regex.test(relative)) ignored = !negated;
  }
  return ignored;
}

/** The compiled entry point, where tsconfig.build.json puts src/main.ts: as `tsc --showConfig` reads it. */
async function buildOutput() {
  const shown = await runTsc(['-p', 'tsconfig.build.json', '--showConfig'], ROOT);
  if (shown.code !== 0) throw new Error(`tsc --showConfig failed:\n${shown.output}`);
  const { compilerOptions: options } = JSON.parse(shown.stdout) as {
    compilerOptions: { outDir?: string; rootDir?: string; sourceMap?: boolean };
  };
  const outDir = path.resolve(ROOT, options.outDir ?? '.');
  const rootDir = path.resolve(ROOT, options.rootDir ?? '.');
  const compiled = path.join(outDir, path.relative(rootDir, path.join(ROOT, 'src/main.ts')));
  return {
    outDir: path.relative(ROOT, outDir),
    entry: path.relative(ROOT, compiled).replace(/\.ts$/, '.js'),
    sourceMap: options.sourceMap === true,
  };
}

function execForm(args: string | undefined): string[] {
  const parsed: unknown = JSON.parse(args ?? 'null');
  if (!Array.isArray(parsed)) throw new Error(`expected the exec (JSON) form, got ${args}`);
  return parsed.map(String);
}

describe('Dockerfile', () => {
  it('compiles the TypeScript during the image build, from sources that reach the build context', () => {
    const build = stages.find((stage) =>
      instructions(stage, 'RUN').some((run) => /\bnpm run build\b/.test(run.args)),
    );
    expect(build, 'a stage that runs `npm run build`').toBeDefined();
    expect(JSON.parse(readProjectFile('package.json')).scripts.build).toBe('tsc -p tsconfig.build.json');
    const copied = instructions(build as Stage, 'COPY')
      .filter((copy) => !copy.args.startsWith('--from'))
      .flatMap((copy) => copy.args.split(/\s+/).slice(0, -1));
    expect(copied).toEqual(expect.arrayContaining(['tsconfig.json', 'tsconfig.build.json', 'src']));
    for (const source of copied) {
      expect(existsSync(path.join(ROOT, source)), `${source} exists`).toBe(true);
      expect(dockerignored(source), `${source} is not in .dockerignore`).toBe(false);
    }
  });

  it('keeps secrets and local state out of the build context', () => {
    for (const local of ['.env', 'data', 'node_modules', 'deploy/kubernetes/secret.env']) {
      expect(dockerignored(local), local).toBe(true);
    }
  });

  it('runs the compiled entry point with source maps and Node defaults otherwise', async () => {
    const { outDir, entry, sourceMap } = await buildOutput();
    expect(sourceMap, 'tsconfig.build.json emits source maps').toBe(true);
    // The runtime stage takes the compiled output from the build stage, into its working directory.
    const fromBuild = instructions(runtime, 'COPY').map((copy) => copy.args.split(/\s+/));
    const buildStages = stages.slice(0, -1).map((stage) => `--from=${stage.name}`);
    expect(fromBuild).toContainEqual([
      expect.toBeOneOf(buildStages),
      expect.stringMatching(`/${outDir}$`),
      `./${outDir}`,
    ]);
    expect(lastArgs(runtime, 'ENTRYPOINT')).toBeUndefined();
    const command = execForm(lastArgs(runtime, 'CMD'));
    expect(command).toEqual(['node', '--enable-source-maps', entry]);
    // `npm start` runs the same file.
    expect(JSON.parse(readProjectFile('package.json')).scripts.start).toContain(entry);
    expect(Object.keys(imageEnv)).not.toContain('NODE_OPTIONS');
  });

  it('runs as a numeric non-root user that owns the data volume', () => {
    const { uid, gid } = imageUser();
    expect(Number.isInteger(uid) && uid > 0, 'USER is a non-zero uid').toBe(true);
    const dataDir = imageEnv.DATA_DIR as string;
    expect(dataDir).toMatch(/^\//);
    expect(lastArgs(runtime, 'VOLUME')).toContain(dataDir);
    const chown = instructions(runtime, 'RUN').find((run) => run.args.includes('chown'));
    expect(chown?.args).toMatch(new RegExp(`chown ${uid}(:${gid ?? '\\d+'})? ${dataDir}(\\s|$)`));
  });

  it('sets only variables the bot reads, exposes its two listeners and checks /healthz', () => {
    expect(Object.keys(imageEnv).filter((name) => !ENV_VARIABLES.includes(name))).toEqual([]);
    const exposed = (lastArgs(runtime, 'EXPOSE') ?? '').split(/\s+/).map(Number).sort();
    expect(exposed).toEqual(
      (Object.keys(LISTENERS) as Listener[]).map((listener) => listenerPort(listener, imageEnv)).sort(),
    );
    const healthcheck = lastArgs(runtime, 'HEALTHCHECK') ?? '';
    const probe = execForm(/\bCMD\s+(\[.*\])\s*$/.exec(healthcheck)?.[1]).join(' ');
    const [, variable, fallback] = /process\.env\.([A-Z_]+)\s*\|\|\s*(\d+)/.exec(probe) ?? [];
    expect(variable && variable in LISTENERS, `the health check's port variable (${variable})`).toBe(true);
    const listener = variable as Listener;
    expect(Number(fallback)).toBe(LISTENERS[listener].defaultPort);
    expect(probe).toContain("'/healthz'");
    expect(LISTENERS[listener].paths).toContain('/healthz');
  });

  it('uses one even-numbered (LTS) Node.js image for building and running', () => {
    const images = new Set(stages.map((stage) => stage.image));
    expect(images.size).toBe(1);
    const major = Number(/^node:(\d+)\./.exec(stages[0]?.image ?? '')?.[1]);
    expect(major % 2).toBe(0);
    const engines = /(\d+)/.exec(JSON.parse(readProjectFile('package.json')).engines.node)?.[1];
    expect(major).toBeGreaterThanOrEqual(Number(engines));
  });
});

interface ComposeService {
  build?: string | { context?: string };
  image?: string;
  environment?: Record<string, string> | string[];
  env_file?: string | string[];
  ports?: (string | number)[];
  restart?: string;
  stop_grace_period?: string;
  read_only?: boolean;
  depends_on?: Record<string, { condition?: string }> | string[];
  healthcheck?: unknown;
}

function environmentOf(service: ComposeService): Env {
  if (Array.isArray(service.environment)) {
    return Object.fromEntries(service.environment.map((entry) => entry.split(/=(.*)/s).slice(0, 2)));
  }
  return { ...service.environment };
}

/** `30s`, `1m30s`, `500ms`: compose durations. */
function durationMs(text: string | undefined): number {
  let total = 0;
  for (const [, amount, unit] of (text ?? '').matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) {
    total += Number(amount) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h'];
  }
  return total;
}

function publishedPorts(service: ComposeService) {
  return (service.ports ?? []).map((entry) => {
    const parts = String(entry).split(':');
    const container = Number(parts.pop());
    const host = parts.length > 0 ? Number(parts.pop()) : undefined;
    return { ip: parts.pop(), host, container };
  });
}

describe('docker-compose.yml', () => {
  const compose = parse(readProjectFile('docker-compose.yml'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  const services = Object.entries(compose.services);
  const bots = services.filter(([, service]) => {
    const context = typeof service.build === 'string' ? service.build : service.build?.context;
    return context === '.';
  });
  const postgres = services.find(([, service]) => service.image?.startsWith('postgres'));
  /** What each bot container's process sees: the image's ENV, then compose's `environment`. */
  const botEnv = (service: ComposeService): Env => ({ ...imageEnv, ...environmentOf(service) });

  it('starts PostgreSQL and two bot replicas built from this Dockerfile, sharing it', () => {
    expect(bots.length).toBeGreaterThanOrEqual(2);
    expect(postgres).toBeDefined();
    const [postgresName, postgresService] = postgres as [string, ComposeService];
    const database = environmentOf(postgresService);
    expect(postgresService.healthcheck).toBeDefined();
    for (const [name, service] of bots) {
      const url = new URL(botEnv(service).DATABASE_URL ?? '');
      expect({
        name,
        host: url.hostname,
        user: url.username,
        password: url.password,
        db: url.pathname,
      }).toEqual({
        name,
        host: postgresName,
        user: database.POSTGRES_USER,
        password: database.POSTGRES_PASSWORD,
        db: `/${database.POSTGRES_DB}`,
      });
      const dependsOn = service.depends_on as Record<string, { condition?: string }>;
      expect(dependsOn?.[postgresName]?.condition).toBe('service_healthy');
    }
  });

  it('sets only variables the bot reads, in the file and in .env.example', () => {
    for (const [, service] of bots) {
      expect(Object.keys(environmentOf(service)).filter((name) => !ENV_VARIABLES.includes(name))).toEqual([]);
      expect(service.env_file).toBe('.env');
    }
    // Commented-out settings too: the operator uncomments them as they are.
    const example = [...readProjectFile('.env.example').matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map(
      (m) => m[1],
    );
    expect(example.length).toBeGreaterThan(0);
    expect(example.filter((name) => !ENV_VARIABLES.includes(name as string))).toEqual([]);
  });

  it('publishes the first replica on localhost:3000, each on its own host port, metrics only locally', () => {
    const hostPorts: number[] = [];
    for (const [name, service] of bots) {
      const env = botEnv(service);
      const published = publishedPorts(service);
      for (const { ip, host, container } of published) {
        const listener = listenerOn(container, env);
        expect({ name, container, listener: listener !== undefined }).toEqual({
          name,
          container,
          listener: true,
        });
        expect(host, `${name} publishes ${container} on a fixed host port`).toBeDefined();
        hostPorts.push(host as number);
        if (listener === 'ADMIN_PORT') expect(ip, `${name}'s metrics`).toBe('127.0.0.1');
      }
      expect(published.map(({ container }) => listenerOn(container, env))).toContain('PORT');
    }
    expect(new Set(hostPorts).size).toBe(hostPorts.length);
    const first = bots[0]?.[1] as ComposeService;
    expect(publishedPorts(first)).toContainEqual({
      ip: undefined,
      host: 3000,
      container: listenerPort('PORT', botEnv(first)),
    });
  });

  it('gives up on a replica that keeps failing instead of restarting it forever', () => {
    for (const [name, service] of bots) {
      const [, retries] = /^on-failure:(\d+)$/.exec(service.restart ?? '') ?? [];
      expect(Number(retries), `${name}: restart on-failure:N`).toBeGreaterThan(0);
      // A handful: enough for a database that restarts, few enough that the error stays on screen.
      expect(Number(retries)).toBeLessThanOrEqual(5);
    }
  });

  it('lets the drain finish before Docker kills a replica, on a read-only root filesystem', () => {
    for (const [name, service] of bots) {
      const grace = durationMs(service.stop_grace_period ?? '10s');
      expect(grace, name).toBeGreaterThanOrEqual(shutdownTimeoutMs(botEnv(service)) + EXIT_MARGIN_MS);
      expect(service.read_only, name).toBe(true);
    }
  });
});
