import type { AgentCallInfo } from '../agent/client.js';
import type { SqlDatabase } from '../db/database.js';
import type { WebApiFetch } from '../slack/web-api-transport.js';
import type { BotMetrics } from './metrics.js';

/** Agent client hook: latency per attempt, failures by kind, prompts relayed. */
export function agentCallObserver(metrics: BotMetrics): (info: AgentCallInfo) => void {
  return ({ operation, durationMs, outcome }) => {
    metrics.agentCallSeconds.observe({ operation, outcome }, durationMs / 1000);
    if (outcome !== 'ok') metrics.agentFailures.inc({ operation, kind: outcome });
    if (operation === 'sendMessage' && outcome === 'ok') metrics.promptsRelayed.inc();
    if (operation === 'createSession' && outcome === 'ok') metrics.sessionsCreated.inc();
  };
}

/** Times every store query; the database object is otherwise unchanged. */
export function instrumentDatabase(db: SqlDatabase, metrics: BotMetrics): SqlDatabase {
  const timed =
    (run: SqlDatabase['query']) =>
    async <Row extends object>(sql: string, params?: readonly unknown[]): Promise<Row[]> => {
      const end = metrics.storeQuerySeconds.startTimer();
      try {
        const rows = await run<Row>(sql, params);
        end({ outcome: 'ok' });
        return rows;
      } catch (error) {
        end({ outcome: 'error' });
        throw error;
      }
    };
  return {
    kind: db.kind,
    query: timed((sql, params) => db.query(sql, params)),
    checkpoint: timed((sql, params) => db.checkpoint(sql, params)),
    transaction: (work) => db.transaction(work),
    close: () => db.close(),
  };
}

/**
 * A fetch for Bolt's WebClient that counts Slack Web API calls by method and HTTP status, and HTTP 429s.
 * (WebClient binds its methods at construction, so wrapping the transport is the one place that sees all.
 * Slack's own `ok: false` errors arrive with status 200; they are logged where they matter.)
 */
export function instrumentedSlackFetch(metrics: BotMetrics, transport: WebApiFetch): WebApiFetch {
  return async (input, init) => {
    const response = await transport(input, init);
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = url.slice(url.lastIndexOf('/') + 1) || 'unknown';
    if (response.status === 429) metrics.slackRateLimited.inc();
    metrics.slackCalls.inc({ method, status: String(response.status) });
    return response;
  };
}
