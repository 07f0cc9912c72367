import type { AgentClient } from '../agent/client.js';
import { checkAgentService } from '../agent/startup-check.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import type { BotMetrics } from '../observability/metrics.js';
import { type BotIdentity, checkAppToken, checkSlackIdentity } from '../slack-in/startup-check.js';
import { type Database, openDatabase } from '../store/database.js';
import { checkSessionTable } from '../store/keyv.js';
import { migrate } from '../store/schema.js';
import { checkInstallationKeys } from './installations.js';
import { checkPortsFree } from './port-check.js';

/**
 * The ports, Slack, the agent service and the store (in OAuth mode: that the stored tokens open with the configured keys),
 * each checked whatever the others found: every failure is reported together (an AggregateError of one-line
 * errors), so an operator fixes them all in one round.
 */
export async function runStartupChecks(
  config: Config,
  agent: AgentClient,
  metrics: BotMetrics,
  logger: Logger,
): Promise<{ identity: BotIdentity; db: Database }> {
  const openStore = async () => {
    const db = await openDatabase(config.store, {
      onQuery: (durationMs, ok) =>
        metrics.storeQuerySeconds.observe({ outcome: ok ? 'ok' : 'error' }, durationMs / 1000),
    });
    try {
      await migrate(db);
      await checkSessionTable(db);
      if (auth.mode === 'oauth') await checkInstallationKeys(auth, db);
    } catch (error) {
      await db.close().catch(() => {});
      throw error;
    }
    return db;
  };
  const { auth, connection } = config.slack;
  const [ports, identity, appToken, agentCheck] = await Promise.allSettled([
    checkPortsFree(config),
    // OAuth mode: each workspace's bot is its installation's, known when its events come.
    auth.mode === 'single' ? checkSlackIdentity(config, auth.botToken) : { botUserId: '' },
    connection.mode === 'socket' ? checkAppToken(config, connection.appToken) : undefined,
    checkAgentService(agent, config.agent, logger),
  ]);
  // After the others, whatever they found: opening the embedded store holds the event loop for a while, and
  // would eat into the agent service check's 3 s.
  const [db] = await Promise.allSettled([openStore()]);
  if (
    ports.status === 'fulfilled' &&
    identity.status === 'fulfilled' &&
    appToken.status === 'fulfilled' &&
    agentCheck.status === 'fulfilled' &&
    db.status === 'fulfilled'
  )
    return { identity: identity.value, db: db.value };
  // The store's lock (embedded) and connections are released before the process exits.
  if (db.status === 'fulfilled') await db.value.close().catch(() => {});
  const failures = [identity, appToken, agentCheck, db, ports].flatMap((outcome) =>
    outcome.status === 'rejected' ? [outcome.reason as unknown] : [],
  );
  // Once each: in Socket Mode an unreachable Slack fails both of its checks with the same line.
  const lines = new Set<string>();
  const distinct = failures.filter((failure) => {
    const line = failure instanceof Error ? failure.message : String(failure);
    if (lines.has(line)) return false;
    lines.add(line);
    return true;
  });
  throw new AggregateError(distinct, 'start-up failed');
}
