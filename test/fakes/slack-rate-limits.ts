import type { MethodContract } from './slack-contracts.js';

/**
 * Slack's Web API rate limits, per method and workspace (https://docs.slack.dev/apis/web-api/rate-limits):
 * Tier 1 1+ per minute, Tier 2 20+, Tier 3 50+, Tier 4 100+, each tolerating some burst; over the limit
 * Slack answers HTTP 429 with `Retry-After` (seconds) and `ratelimited`. chat.postMessage's special limit is
 * about one message per second per channel, short bursts allowed.
 *
 * The 2025 limits for apps that are not on the Marketplace (conversations.history and conversations.replies
 * at 1 per minute, 15 messages a page) are an option (FakeSlackOptions.outsideMarketplace), not the default:
 * Slack's wording leaves open whether an internal app in one workspace is one, and a multi-workspace install
 * with public distribution may well be.
 */

/** A token bucket: `burst` calls at once, refilled at `perMinute` (Infinity: never refused). */
export interface RateLimit {
  perMinute: number;
  /** Calls allowed at once (default: one minute's worth). */
  burst?: number;
}

const TIER_PER_MINUTE: Record<Exclude<MethodContract['tier'], 'special'>, number> = {
  t1: 1,
  t2: 20,
  t3: 50,
  t4: 100,
};

/** conversations.history and .replies for an app outside the Marketplace (FakeSlackOptions.outsideMarketplace). */
export const OUTSIDE_MARKETPLACE_READS: Readonly<Record<string, RateLimit>> = {
  'conversations.history': { perMinute: 1, burst: 1 },
  'conversations.replies': { perMinute: 1, burst: 1 },
};
export const OUTSIDE_MARKETPLACE_PAGE_MAX = 15;

/** chat.postMessage per channel: one a second; Slack allows "short bursts" without a figure, so a few. */
export const POST_MESSAGE_PER_CHANNEL: Required<RateLimit> = { perMinute: 60, burst: 4 };

/**
 * Special-tier methods other than chat.postMessage (auth.test, chat.getPermalink, assistant.threads.setStatus)
 * have no published figure; Tier 4's stands in.
 */
const SPECIAL_PER_MINUTE = TIER_PER_MINUTE.t4;

interface Bucket {
  tokens: number;
  at: number;
}

/** Overrides that let every named method through, for a load test that measures the bot, not Slack's throttling. */
export function unthrottled(methods: readonly string[]): Record<string, RateLimit> {
  return Object.fromEntries(methods.map((method) => [method, { perMinute: Number.POSITIVE_INFINITY }]));
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  /** `overrides`: per-method limits replacing Slack's, for a test that must exceed them (see FakeSlackOptions). */
  constructor(private readonly overrides: Readonly<Record<string, RateLimit>> = {}) {}

  /**
   * Takes one call's allowance; returns the seconds to wait (Retry-After) when the call is over the limit.
   * `workspace`: whose allowance it is, the installation the token belongs to (limits are per app and
   * workspace; an org-wide install's calls share its org's, the stricter reading where Slack says less).
   */
  take(
    method: string,
    tier: MethodContract['tier'],
    channel: string | undefined,
    workspace = '',
    now = Date.now(),
  ): number | undefined {
    const perChannel = method === 'chat.postMessage';
    const limit = this.limitOf(method, tier);
    if (limit.perMinute === Number.POSITIVE_INFINITY) return undefined;
    const capacity = limit.burst ?? limit.perMinute;
    // chat.postMessage: about one message a second per channel (docs.slack.dev/apis/web-api/rate-limits). A
    // channel shared between workspaces has one bucket whichever workspace's token posts: the stricter reading,
    // as Slack does not say. Its workspace-wide limit for the method has no published figure: not modelled.
    const key = perChannel ? `${method}:${channel ?? ''}` : `${workspace}|${method}`;
    const perMs = limit.perMinute / 60_000;
    const bucket = this.buckets.get(key) ?? { tokens: capacity, at: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + (now - bucket.at) * perMs);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
  }

  /** Gives every method (and channel) its full allowance again, as after a quiet minute. */
  reset(): void {
    this.buckets.clear();
  }

  private limitOf(method: string, tier: MethodContract['tier']): RateLimit {
    const override = this.overrides[method];
    if (override) return override;
    if (method === 'chat.postMessage') return POST_MESSAGE_PER_CHANNEL;
    return { perMinute: tier === 'special' ? SPECIAL_PER_MINUTE : TIER_PER_MINUTE[tier] };
  }
}
