import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { access, chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.js';
import { TEST_DATABASE_URL } from './postgres.js';
import { sleep } from './wait.js';

/** Where Debian's pgbouncer package puts the binary (.ci/run installs it). */
const PGBOUNCER_BINARY = process.env.PGBOUNCER_BIN ?? '/usr/sbin/pgbouncer';

/** A real PgBouncer in front of the test PostgreSQL server, started and stopped by the test. */
export interface RunningPgBouncer {
  readonly port: number;
  /** `databaseUrl` (a database on the test server) as reached through this PgBouncer. */
  urlFor(databaseUrl: string): string;
  /** What PgBouncer logged so far (it logs to its standard error). */
  logs(): string;
  /** Its own view of the pools (`SHOW POOLS` on the admin console), one row per database and user. */
  pools(): Promise<Record<string, string>[]>;
  /** Stops the process (SIGTERM: connections are cut at once, as a crash or a pod eviction would). */
  kill(): Promise<void>;
  /** Starts it again on the same port, with the same settings. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  /** Server connections per database and user pair; small, so the bot's clients really share them. */
  defaultPoolSize?: number;
  /** Extra `[pgbouncer]` settings, e.g. `{ pool_mode: 'session' }`. */
  settings?: Record<string, string>;
}

/** Whether PgBouncer is here to start (CI must have it; elsewhere its tests are skipped, with a word why). */
export async function pgBouncerAvailable(): Promise<boolean> {
  if (process.env.CI === 'true' || process.env.CI === '1') return true;
  const available = await access(PGBOUNCER_BINARY).then(
    () => true,
    () => false,
  );
  if (!available) console.warn(`no PgBouncer (${PGBOUNCER_BINARY}): skipping the tests through PgBouncer`);
  return available;
}

/**
 * Starts PgBouncer in transaction pooling mode (the mode that shares server connections between clients,
 * and the one that breaks session state) with trust authentication, every database of the test server
 * reachable through it. Fails when PgBouncer is not installed (see pgBouncerAvailable).
 */
export async function startPgBouncer(options: PgBouncerOptions = {}): Promise<RunningPgBouncer> {
  try {
    await access(PGBOUNCER_BINARY);
  } catch {
    throw new Error(
      `PgBouncer is not installed (${PGBOUNCER_BINARY} is missing): install Debian's pgbouncer package (apt-get install pgbouncer), as .ci/run does`,
    );
  }
  const server = new URL(TEST_DATABASE_URL);
  const user = decodeURIComponent(server.username || 'postgres');
  const port = await freePort();
  const dir = await mkdtemp(path.join(tmpdir(), 'pgbouncer-'));
  const settings: Record<string, string> = {
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    // No Unix socket: parallel test files would fight over the same socket path.
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: path.join(dir, 'userlist.txt'),
    admin_users: user,
    pool_mode: 'transaction',
    default_pool_size: String(options.defaultPoolSize ?? 2),
    max_client_conn: '200',
    // Log to standard error, which the test keeps.
    logfile: '',
    pidfile: '',
    ...options.settings,
  };
  const ini = [
    '[databases]',
    // Any database name is passed through to the test server, so each test can use a fresh database.
    `* = host=${server.hostname} port=${server.port || '5432'}`,
    '[pgbouncer]',
    ...Object.entries(settings).map(([key, value]) => `${key} = ${value}`),
    '',
  ].join('\n');
  const configPath = path.join(dir, 'pgbouncer.ini');
  await writeFile(configPath, ini);
  // With trust authentication the user must still be listed.
  await writeFile(settings.auth_file as string, `"${user}" ""\n`);
  // PgBouncer refuses to run as root; as root it is told to switch to the postgres user, who must read its files.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { uid, gid } = await postgresUser();
    await chmod(dir, 0o755);
    for (const file of [dir, configPath, settings.auth_file as string]) await chown(file, uid, gid);
  }

  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let output = '';
  const admin = (database: string) => {
    const url = new URL(TEST_DATABASE_URL);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    url.pathname = `/${database}`;
    return url.toString();
  };

  async function start(): Promise<void> {
    const proc = spawn(PGBOUNCER_BINARY, [...(asRoot ? ['-u', 'postgres'] : []), configPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    proc.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    proc.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null)
        throw new Error(`PgBouncer exited at start:\n${output}`);
      const client = new pg.Client({ connectionString: admin('pgbouncer'), connectionTimeoutMillis: 1_000 });
      try {
        await client.connect();
        await client.query('SHOW VERSION');
        return;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`PgBouncer did not come up: ${String(error)}\n${output}`);
        await sleep(50);
      } finally {
        await client.end().catch(() => {});
      }
    }
  }

  async function kill(): Promise<void> {
    child?.kill('SIGTERM');
    await exited;
    child = undefined;
  }

  await start();
  return {
    port,
    urlFor(databaseUrl) {
      const url = new URL(databaseUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    logs: () => output,
    async pools() {
      const client = new pg.Client({ connectionString: admin('pgbouncer') });
      await client.connect();
      try {
        return (await client.query<Record<string, string>>('SHOW POOLS')).rows;
      } finally {
        await client.end();
      }
    },
    kill,
    start,
    async stop() {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const id = (flag: string) =>
    new Promise<number>((resolve, reject) =>
      execFile('id', [flag, 'postgres'], (error, stdout) =>
        error
          ? reject(new Error(`no postgres user to run PgBouncer as: ${error.message}`))
          : resolve(Number(stdout.trim())),
      ),
    );
  return { uid: await id('-u'), gid: await id('-g') };
}
