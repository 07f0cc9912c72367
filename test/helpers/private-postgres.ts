import { execFile } from 'node:child_process';
import { chown, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.js';

/**
 * A throwaway PostgreSQL cluster of one test file, which the test may stop and start for real (a restart,
 * an upgrade, a crash) without touching the server other test files share.
 */
export interface PrivatePostgres {
  readonly port: number;
  /** A connection URL for `database` in this cluster. */
  url(database?: string): string;
  /** A new empty database; returns its URL. */
  createDatabase(): Promise<string>;
  /** `fast`: a clean shutdown (connections are told and closed); `immediate`: as a crash. */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again, on the same port (nothing if it runs). */
  start(): Promise<void>;
  /** Whatever the server logged. */
  log(): Promise<string>;
  /** Stops it and deletes its files. */
  remove(): Promise<void>;
}

const SETTINGS: Record<string, string> = {
  listen_addresses: "'127.0.0.1'",
  // A test cluster: losing its data to a power cut does not matter, speed does. A crash of PostgreSQL
  // itself must lose nothing committed, as in production: commits stay synchronous (to the OS's cache).
  fsync: 'off',
  shared_buffers: "'16MB'",
  max_connections: '60',
};

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = await postgresBinaries();
  const dir = await mkdtemp(path.join(tmpdir(), 'private-pg-'));
  const data = path.join(dir, 'data');
  const logFile = path.join(dir, 'server.log');
  const port = await freePort();
  // PostgreSQL refuses to run as root: as root, everything runs as the postgres user, who owns the files.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { uid, gid } = await postgresUser();
    await chown(dir, uid, gid);
  }
  const run = (tool: string, args: string[]) =>
    asRoot
      ? command('runuser', ['-u', 'postgres', '--', path.join(bin, tool), ...args])
      : command(path.join(bin, tool), args);

  await run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const settings = { ...SETTINGS, port: String(port), unix_socket_directories: `'${dir}'` };
  await writeFile(
    path.join(data, 'postgresql.auto.conf'),
    Object.entries(settings)
      .map(([key, value]) => `${key} = ${value}\n`)
      .join(''),
  );
  if (asRoot) {
    const { uid, gid } = await postgresUser();
    await chown(path.join(data, 'postgresql.auto.conf'), uid, gid);
  }

  let running = false;
  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const start = async () => {
    if (running) return;
    await run('pg_ctl', ['-D', data, '-l', logFile, '-w', '-t', '30', 'start']);
    running = true;
  };
  const stop = async (mode: 'fast' | 'immediate') => {
    if (!running) return;
    await run('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '30', 'stop']);
    running = false;
  };
  await start();

  return {
    port,
    url,
    async createDatabase() {
      const name = `bridge_${Math.random().toString(36).slice(2, 10)}`;
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    stop,
    start,
    log: () => readFile(logFile, 'utf8').catch(() => ''),
    async remove() {
      if (running) await stop('immediate').catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Whether PostgreSQL's server programs are here to run a private cluster (CI must have them). */
export async function privatePostgresAvailable(): Promise<boolean> {
  if (process.env.CI === 'true' || process.env.CI === '1') return true;
  const available = await postgresBinaries().then(
    () => true,
    () => false,
  );
  if (!available) console.warn('no PostgreSQL server programs: skipping the tests that restart PostgreSQL');
  return available;
}

/** The newest installed PostgreSQL's programs (Debian's layout), or PG_BIN_DIR. */
async function postgresBinaries(): Promise<string> {
  if (process.env.PG_BIN_DIR) return process.env.PG_BIN_DIR;
  const root = '/usr/lib/postgresql';
  const versions = (await readdir(root).catch(() => [] as string[]))
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  const newest = versions[0];
  if (newest === undefined)
    throw new Error(`no PostgreSQL server programs under ${root}; set PG_BIN_DIR to their directory`);
  return path.join(root, newest, 'bin');
}

function command(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(file, args, { timeout: 60_000 }, (error, stdout, stderr) =>
      error
        ? reject(new Error(`${path.basename(file)} ${args.join(' ')} failed: ${error.message}\n${stderr}`))
        : resolve(stdout),
    ),
  );
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const id = async (flag: string) => Number((await command('id', [flag, 'postgres'])).trim());
  return { uid: await id('-u'), gid: await id('-g') };
}
