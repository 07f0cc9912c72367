import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { shouldRunPostgresTests, TEST_DATABASE_URL } from '../helpers/postgres.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { TcpProxy } from './tcp-proxy.js';

/**
 * A statement the client gives up on after `ms`, where the test expects it to: the statements around it keep no
 * such bound, so a busy database server does not fail them. pg reads a per-statement `query_timeout`
 * (lib/client.js) that its typings leave out.
 */
function timedOutAfter(text: string, ms: number): pg.QueryConfig {
  const config = { text, query_timeout: ms };
  return config;
}

const runPostgres = await shouldRunPostgresTests();

describe.runIf(runPostgres)('TcpProxy in front of PostgreSQL', () => {
  let proxy: TcpProxy;
  const clients: pg.Client[] = [];

  /** A connected client through the proxy; errors it emits after a fault are collected, not thrown. */
  async function connect(
    config: Partial<pg.ClientConfig> = {},
  ): Promise<{ client: pg.Client; errors: Error[] }> {
    const client = new pg.Client({ connectionString: proxy.url, ...config });
    const errors: Error[] = [];
    client.on('error', (error) => errors.push(error));
    clients.push(client);
    await client.connect();
    return { client, errors };
  }

  beforeEach(async () => {
    proxy = await TcpProxy.start({ target: TEST_DATABASE_URL });
  });

  afterEach(async () => {
    await proxy.stop();
    await Promise.all(clients.splice(0).map((c) => c.end().catch(() => {})));
  });

  it('forwards a query and counts the open connection', async () => {
    expect(proxy.url).toBe(TEST_DATABASE_URL.replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${proxy.port}`));
    const { client } = await connect();

    const result = await client.query<{ answer: number }>('SELECT 41 + 1 AS answer');

    expect(result.rows).toEqual([{ answer: 42 }]);
    expect(proxy.connectionCount).toBe(1);
    await client.end();
    await waitFor(() => proxy.connectionCount === 0, 'the proxy to see the connection close', 2_000);
  });

  it('counts what clients sent on: a statement once per time it was sent, across connections', async () => {
    const { client: first } = await connect();
    const { client: second } = await connect();
    // A simple query as PostgreSQL receives it: 'Q', its length, the text and a zero byte.
    const text = 'SELECT 7 AS counted';
    const message = Buffer.concat([Buffer.from('Q'), Buffer.alloc(4), Buffer.from(`${text}\0`)]);
    message.writeInt32BE(message.length - 1, 1);
    expect(proxy.countSent(message)).toBe(0);

    await first.query(text);
    await second.query(text);
    await second.query(text);
    await first.query('SELECT 8');

    expect(proxy.countSent(message)).toBe(3);
  });

  it('cut() fails the open connection at once, and a new client works afterwards', async () => {
    const { client, errors } = await connect();
    await client.query('SELECT 1');

    proxy.cut();

    await expect(client.query('SELECT 1')).rejects.toThrow();
    expect(proxy.connectionCount).toBe(0);
    await waitFor(() => errors.length > 0, 'the client to report the dropped connection', 2_000);
    const { client: fresh } = await connect();
    await expect(fresh.query('SELECT 2 AS two')).resolves.toMatchObject({ rows: [{ two: 2 }] });
  });

  it('blackhole() lets a query hang until the client gives up, holds new connections, and restore() heals', async () => {
    const { client } = await connect();
    await client.query('SELECT 1');

    proxy.blackhole();
    const started = performance.now();
    await expect(client.query(timedOutAfter('SELECT 1', 300))).rejects.toThrow(/timeout/i);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    // The silent connection is still open.
    expect(proxy.connectionCount).toBe(1);

    // A new connection is accepted but never answered.
    const stranded = new pg.Client({ connectionString: proxy.url, connectionTimeoutMillis: 300 });
    stranded.on('error', () => {});
    await expect(stranded.connect()).rejects.toThrow(/timeout/i);

    proxy.restore();
    const { client: fresh } = await connect();
    await expect(fresh.query('SELECT 3 AS three')).resolves.toMatchObject({ rows: [{ three: 3 }] });
  });

  it('delivers what was sent during a blackhole once restored, as TCP retransmission would', async () => {
    const { client } = await connect();
    proxy.blackhole();
    let settled = false;
    const pending = client.query<{ four: number }>('SELECT 4 AS four').finally(() => {
      settled = true;
    });
    // A connection opened during the blackhole is held, not refused.
    const late = new pg.Client({ connectionString: proxy.url });
    late.on('error', () => {});
    clients.push(late);
    let lateConnected = false;
    const lateConnect = late.connect().then(() => {
      lateConnected = true;
    });
    await sleep(200);
    expect(settled).toBe(false);
    expect(lateConnected).toBe(false);
    expect(proxy.connectionCount).toBe(2);

    proxy.restore();

    await expect(pending).resolves.toMatchObject({ rows: [{ four: 4 }] });
    await lateConnect;
    await expect(late.query('SELECT 5 AS five')).resolves.toMatchObject({ rows: [{ five: 5 }] });
  });

  it('down() resets open and new connections until restore()', async () => {
    const { client } = await connect();
    proxy.down();
    await expect(client.query('SELECT 1')).rejects.toThrow();
    const refused = new pg.Client({ connectionString: proxy.url, connectionTimeoutMillis: 2_000 });
    refused.on('error', () => {});
    const started = performance.now();
    await expect(refused.connect()).rejects.toThrow(/ECONNRESET|terminated|ended/i);
    // Refused at once, not left to time out.
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(proxy.connectionCount).toBe(0);

    proxy.restore();
    const { client: fresh } = await connect();
    await expect(fresh.query('SELECT 6 AS six')).resolves.toMatchObject({ rows: [{ six: 6 }] });
  });

  it('loseReplies() lets statements run and commit while the client hears nothing', async () => {
    const { client } = await connect();
    await client.query('CREATE TEMP TABLE seen (n int)');
    proxy.loseReplies();
    await expect(client.query(timedOutAfter('INSERT INTO seen VALUES (7)', 500))).rejects.toThrow(/timeout/i);

    proxy.restore();
    // The insert ran although its client gave up on it; the late reply does not confuse the next query.
    const { rows } = await client.query<{ n: number }>('SELECT n FROM seen');
    expect(rows).toEqual([{ n: 7 }]);
  });

  it('strand() leaves open connections silent for good while new ones work', async () => {
    const { client } = await connect();
    await client.query('SELECT 1');
    proxy.strand();
    await expect(client.query(timedOutAfter('SELECT 1', 300))).rejects.toThrow(/timeout/i);
    proxy.restore();
    await expect(client.query(timedOutAfter('SELECT 1', 300))).rejects.toThrow(/timeout/i);
    expect(proxy.connectionCount).toBe(0);
    const { client: fresh } = await connect();
    await expect(fresh.query('SELECT 8 AS eight')).resolves.toMatchObject({ rows: [{ eight: 8 }] });
  });
});
