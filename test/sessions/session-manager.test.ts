import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient } from '../../src/agent/client.js';
import { openDatabase, type SqlDatabase } from '../../src/db/database.js';
import { createSqlKeyv } from '../../src/db/keyv-sql-store.js';
import { migrate, SESSIONS_TABLE } from '../../src/db/schema.js';
import { Inbox } from '../../src/delivery/inbox.js';
import { createLogger } from '../../src/observability/logger.js';
import { SessionDeleter } from '../../src/sessions/session-deleter.js';
import { SessionManager } from '../../src/sessions/session-manager.js';
import { SessionStore } from '../../src/sessions/session-store.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { createTestDatabase, shouldRunPostgresTests, type TestDatabase } from '../helpers/postgres.js';

const runPostgres = await shouldRunPostgresTests();

describe.runIf(runPostgres)('a new thread on PostgreSQL', () => {
  let database: TestDatabase;
  let db: SqlDatabase;
  let agent: AgentServiceEmulator;
  let client: AgentClient;
  let sessions: SessionManager;
  let inbox: Inbox;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = await openDatabase({ kind: 'postgres', databaseUrl: database.url });
    await migrate(db);
    agent = await AgentServiceEmulator.start({ agents: ['agent-1'] });
    client = new AgentClient({ baseUrl: agent.baseUrl, apiKey: agent.apiKey, timeoutMs: 5_000 });
    const logger = createLogger({ level: 'silent', secrets: [] });
    const store = new SessionStore(
      createSqlKeyv(db, { table: SESSIONS_TABLE, namespace: SessionStore.namespace }),
      db,
    );
    const deleter = new SessionDeleter(db, client, logger, { retryBaseMs: 1_000, pollMs: 60_000 });
    sessions = new SessionManager(store, client, deleter, logger);
    inbox = new Inbox(db, 'owner-1', 60_000);
  });
  afterAll(async () => {
    client?.close();
    await agent?.stop();
    await db?.close();
    await database?.drop();
  });

  /** The transaction that last wrote each row: equal ids mean one transaction, hence one round trip. */
  async function writers(jobId: number, threadTs: string): Promise<{ mapping?: string; sentMark?: string }> {
    const [mapping] = await db.query<{ xmin: string }>(
      `SELECT xmin::text FROM ${SESSIONS_TABLE} WHERE key LIKE $1`,
      [`%${threadTs}%`],
    );
    const [job] = await db.query<{ xmin: string }>('SELECT xmin::text FROM inbox WHERE id = $1', [jobId]);
    return { mapping: mapping?.xmin, sentMark: job?.xmin };
  }

  it("writes a new session's mapping and the job's sent mark in one transaction", async () => {
    for (const threadTs of ['1700000001.000100', '1700000002.000100']) {
      const thread = { teamId: 'T1', channelId: 'C1', threadTs };
      const threadKey = `T1:C1:${threadTs}`;
      const { id } = await inbox.enqueue({ threadKey, dedupeKey: threadKey, kind: 'message', payload: {} });
      await inbox.claim(1, threadKey);

      const session = await sessions.sessionFor(thread, 'agent-1', 'U1', (created) =>
        inbox.markSent(id, created.sessionId),
      );

      expect(agent.sessionsOf('agent-1').map((s) => s.sessionId)).toContain(session.sessionId);
      expect(await sessions.existing(thread, 'agent-1')).toMatchObject({ sessionId: session.sessionId });
      const [job] = await db.query<{ session_id: string }>('SELECT session_id FROM inbox WHERE id = $1', [
        id,
      ]);
      expect(job?.session_id).toBe(session.sessionId);
      const { mapping, sentMark } = await writers(id, threadTs);
      expect(mapping).toBeDefined();
      expect(sentMark).toBe(mapping);
    }
  });
});
