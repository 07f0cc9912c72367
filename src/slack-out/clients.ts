import type { WebClientOptions } from '@slack/web-api';
import type { SlackConfig } from '../config/index.js';
import { boltLogger } from '../observability/bolt-logger.js';
import type { Logger } from '../observability/logger.js';
import type { BotMetrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import { SlackWebClient, type TokenSource } from './client.js';

export interface SlackClients {
  /** What Bolt's own client is built with too. */
  options: WebClientOptions;
  /** Retries calls harmless to repeat: reads, reactions, statuses (best-effort calls retried once). */
  calls: SlackWebClient;
  /** Never repeats a post by itself: a post Slack may have taken is looked up before it is sent again. */
  posts: SlackWebClient;
  /**
   * Reads the bot can do without (a thread's earlier messages, for context): tried once more after a failure,
   * but a rate limit is an answer, not a wait. An app outside the Slack Marketplace may read a thread once a
   * minute, which is not worth a minute of the person's wait.
   */
  optionalReads: SlackWebClient;
}

/**
 * The bot's Web API clients, every call measured and traced; with the one bot token, or in OAuth mode with
 * the served workspace's (`installedTokens`).
 */
export function slackClients(
  config: SlackConfig,
  observers: { metrics: BotMetrics; tracing: Tracing; logger: Logger },
  installedTokens?: TokenSource,
): SlackClients {
  const token = config.auth.mode === 'single' ? config.auth.botToken : installedTokens;
  if (token === undefined) throw new Error("OAuth mode: the Slack clients need the installations' tokens");
  const { metrics, tracing, logger } = observers;
  const observer = {
    onCall: ({ method, status }: { method: string; status: string }) =>
      metrics.slackCalls.inc({ method, status }),
    onRateLimited: () => metrics.slackRateLimited.inc(),
    around: <T>(method: string, call: () => Promise<T>) =>
      tracing.inSpan(`slack ${method}`, 'client', { 'slack.method': method }, call),
  };
  const options: WebClientOptions = {
    slackApiUrl: config.apiUrl,
    logger: boltLogger(logger),
    timeout: config.callTimeoutMs,
    retryConfig: { retries: 3, factor: 2, minTimeout: 500, maxTimeout: 4_000 },
  };
  // Each method on a queue of its own, as Slack limits each on its own (see SlackWebClient); indicators never
  // wait long for Slack: Retry-After is honoured once.
  const calls = new SlackWebClient(token, options, observer, {
    retries: 1,
    factor: 2,
    minTimeout: 500,
    maxTimeout: 2_000,
  });
  const posts = new SlackWebClient(
    token,
    { ...options, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true },
    observer,
  );
  const optionalReads = new SlackWebClient(
    token,
    {
      ...options,
      retryConfig: { retries: 1, minTimeout: 500, maxTimeout: 500 },
      rejectRateLimitedCalls: true,
    },
    observer,
  );
  return { options, calls, posts, optionalReads };
}
