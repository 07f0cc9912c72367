/** Entry point of `npm run sessions`: list the agent's sessions, prune orphans. */
import { AgentClient } from '../agent/client.js';
import { allAgents } from '../agent/routing.js';
import { ConfigError, loadDotEnv, loadOperatorConfig } from '../config/index.js';
import { SessionStore, type ThreadSession } from '../sessions/store.js';
import { openDatabase } from '../store/database.js';
import { createSessionKeyv } from '../store/keyv.js';
import { migrate } from '../store/schema.js';
import { parseSessionsArgs, runSessionsCommand } from './sessions-command.js';

async function main(): Promise<number> {
  let options: ReturnType<typeof parseSessionsArgs>;
  let config: ReturnType<typeof loadOperatorConfig>;
  try {
    options = parseSessionsArgs(process.argv.slice(2));
    // The same settings as `npm start`, `.env` included.
    loadDotEnv();
    config = loadOperatorConfig();
  } catch (error) {
    const message = error instanceof ConfigError ? error.lines.join('\n') : (error as Error).message;
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
    const store = new SessionStore(createSessionKeyv<ThreadSession>(db, SessionStore.namespace), db);
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
