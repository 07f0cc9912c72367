import { type AgentConfig, StartupError } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import type { AgentClient } from './client.js';
import { isAgentServiceError } from './errors.js';
import { configuredAgents } from './routing.js';

/** The check never holds start-up longer than this: a slow or unreachable service is reported, not waited on. */
const CHECK_BOUND_MS = 3_000;

/**
 * One harmless call per configured agent (listing its sessions, one page) before the bot says it is ready.
 * A definite misconfiguration (the key refused, the agent or the path unknown) stops the bot with one line
 * naming the variable to fix; an unreachable, hanging or failing service is logged and the bot starts anyway
 * (the service may come back).
 */
export async function checkAgentService(
  agent: AgentClient,
  config: AgentConfig,
  logger: Logger,
): Promise<void> {
  const agents = configuredAgents(config);
  const checks = [...agents].map(async ([agentId, variable]) => {
    try {
      await agent.listSessions(agentId, 1);
    } catch (error) {
      if (!isAgentServiceError(error)) throw error;
      if (error.kind === 'unauthorized') {
        throw new StartupError(
          `AGENT_API_KEY was refused by the agent service (HTTP ${error.httpStatus ?? '401/403'} for agent "${agentId}"); set the agent service's API key`,
        );
      }
      if (error.kind === 'redirected') {
        throw new StartupError(
          `the agent service redirects its requests elsewhere (HTTP ${error.httpStatus} for agent "${agentId}"): set AGENT_BASE_URL to the address it redirects to`,
        );
      }
      if (error.kind === 'not_found') {
        const hint = /\/v\d+$/.test(new URL(config.baseUrl).pathname)
          ? `check ${variable} ("${agentId}") and AGENT_BASE_URL`
          : 'AGENT_BASE_URL must include the version, e.g. https://host/v1';
        throw new StartupError(`the agent service answered 404 for agent "${agentId}": ${hint}`);
      }
      logger.error(
        { err: error, agentId },
        'the agent service could not be checked at start-up; starting anyway (users are told if it stays down)',
      );
    }
  });
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(resolve, CHECK_BOUND_MS, 'timeout');
  });
  const all = Promise.all(checks);
  // A check that fails after the bound has passed must not become an unhandled rejection.
  all.catch(() => {});
  try {
    const outcome = await Promise.race([all, bound]);
    if (outcome === 'timeout') {
      logger.error(
        { timeoutMs: CHECK_BOUND_MS, baseUrl: config.baseUrl },
        'the agent service did not answer the start-up check in time; starting anyway',
      );
    }
  } finally {
    clearTimeout(timer);
  }
}
