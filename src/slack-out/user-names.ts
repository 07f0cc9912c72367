import type { WebClient } from '@slack/web-api';
import { LRUCache } from 'lru-cache';
import { slackErrorCode } from './client.js';

/** Resolves a Slack user id to a display name; undefined when unknown. */
export type UserNameResolver = (userId: string) => Promise<string | undefined>;

/** users.info calls in flight at once: a burst of mentions must not become a burst of Web API calls. */
const MAX_CONCURRENT_LOOKUPS = 4;

/** A looked-up name, boxed: an unknown id is an answer worth caching too, and the cache holds no undefined. */
interface LookedUp {
  name?: string;
}

/**
 * users.info lookups behind a bounded, expiring cache (least recently used go first), which also joins
 * concurrent lookups of one id into one call. Unknown ids are cached too, so a message repeating a bogus
 * mention costs one call, not one per repetition.
 */
export function cachedUserNameResolver(
  client: Pick<WebClient, 'users'>,
  options: { maxEntries?: number; ttlMs?: number } = {},
): UserNameResolver {
  const ttlMs = options.ttlMs ?? 60 * 60 * 1000;
  /** A failed lookup is remembered briefly only: the name may well be there once Slack answers again. */
  const failureTtlMs = Math.min(ttlMs, 60_000);
  let active = 0;
  const waiting: (() => void)[] = [];

  const cache = new LRUCache<string, LookedUp>({
    max: options.maxEntries ?? 5_000,
    ttl: ttlMs,
    fetchMethod: async (userId, _stale, { options: entry }) => {
      if (active >= MAX_CONCURRENT_LOOKUPS) await new Promise<void>((resolve) => waiting.push(resolve));
      active++;
      try {
        const user = (await client.users.info({ user: userId })).user;
        return { name: user?.profile?.display_name || user?.real_name || user?.name || undefined };
      } catch (error) {
        // Slack says there is no such person: as lasting an answer as a name.
        if (slackErrorCode(error) !== 'user_not_found') entry.ttl = failureTtlMs;
        return {};
      } finally {
        active--;
        waiting.shift()?.();
      }
    },
  });

  return async (userId) => (await cache.fetch(userId))?.name;
}
