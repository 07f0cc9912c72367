import type { AgentConfig } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import type { BotMetrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import { AgentClient } from './client.js';

/** The agent service's client with every call measured and traced. */
export function observedAgentClient(
  config: AgentConfig,
  maxSockets: number,
  observers: { metrics: BotMetrics; tracing: Tracing; logger: Logger },
): AgentClient {
  const { metrics, tracing, logger } = observers;
  return new AgentClient({
    baseUrl: config.baseUrl,
    apiKey: config.apiKey,
    timeoutMs: config.timeoutMs,
    maxSockets,
    // A span per call, and its trace context to the agent service so the service's own traces join.
    around: (operation, attempt) =>
      tracing.inSpan(`agent ${operation}`, 'client', { 'agent.operation': operation }, attempt),
    headers: () => tracing.headers(),
    onCall: ({ operation, attempt, durationMs, outcome, serviceMessage }) => {
      // The service's words may quote the prompt: debug only, like every message text.
      if (serviceMessage !== undefined)
        logger.debug({ operation, attempt, outcome, serviceMessage }, 'the agent service said');
      metrics.agentCallSeconds.observe({ operation, outcome }, durationMs / 1000);
      if (outcome !== 'ok') metrics.agentFailures.inc({ operation, kind: outcome });
      if (operation === 'sendMessage' && outcome === 'ok') metrics.promptsRelayed.inc();
      if (operation === 'createSession' && outcome === 'ok') metrics.sessionsCreated.inc();
    },
  });
}
