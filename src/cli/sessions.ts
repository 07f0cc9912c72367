/** Entry point of `npm run sessions`: list the agent's sessions, prune orphans. */
import { AgentClient } from '../agent/client.js';
import { allAgents } from '../agent/routing.js';
import { ConfigError, loadOperatorConfig } from '../config.js';
import { openDatabase } from '../db/database.js';
import { createSqlKeyv } from '../db/keyv-sql-store.js';
import { migrate, SESSIONS_TABLE } from '../db/schema.js';
import { SessionStore, type ThreadSession } from '../sessions/session-store.js';
import { parseSessionsArgs, runSessionsCommand } from './sessions-command.js';

async function main(): Promise<number> {
  let options: ReturnType<typeof parseSessionsArgs>;
  let config: ReturnType<typeof loadOperatorConfig>;
  try {
    options = parseSessionsArgs(process.argv.slice(2));
    config = loadOperatorConfig();
  } catch (error) {
    const message =
      error instanceof ConfigError ? `Configuration error: ${error.message}` : (error as Error).message;
    process.stderr.write(`${message}\n`);
    return 2;
  }
  const db = await openDatabase(config.store);
  const agent = new AgentClient({
    baseUrl: config.agent.baseUrl,
    apiKey: config.agent.apiKey,
    timeoutMs: config.agent.timeoutMs,
  });
  try {
    await migrate(db);
    const store = new SessionStore(
      createSqlKeyv<ThreadSession>(db, { table: SESSIONS_TABLE, namespace: SessionStore.namespace }),
      db,
    );
    return await runSessionsCommand(
      {
        agent,
        store,
        agents: options.agent ? [options.agent] : allAgents(config.agent),
        write: (line) => process.stdout.write(`${line}\n`),
      },
      options,
    );
  } finally {
    agent.close();
    await db.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`sessions: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
