import type { WebClient } from '@slack/web-api';
import { slackErrorCode } from './client.js';

/** Resolves a Slack user id to a display name; undefined when unknown. */
export type UserNameResolver = (userId: string) => Promise<string | undefined>;

/** users.info calls in flight at once: a burst of mentions must not become a burst of Web API calls. */
const MAX_CONCURRENT_LOOKUPS = 4;

/**
 * users.info lookups behind a bounded, expiring cache. Unknown ids are cached too, so a message repeating a
 * bogus mention costs one call, not one per repetition.
 */
export function cachedUserNameResolver(
  client: WebClient,
  options: { maxEntries?: number; ttlMs?: number } = {},
): UserNameResolver {
  const maxEntries = options.maxEntries ?? 5_000;
  const ttlMs = options.ttlMs ?? 60 * 60 * 1000;
  const cache = new Map<string, { name: string | undefined; expiresAt: number }>();
  const inFlight = new Map<string, Promise<{ name?: string; ttl: number }>>();
  let active = 0;
  const waiting: (() => void)[] = [];

  /** A failed lookup is remembered briefly only: the name may well be there once Slack answers again. */
  const failureTtlMs = Math.min(ttlMs, 60_000);
  const lookUp = async (userId: string): Promise<{ name?: string; ttl: number }> => {
    if (active >= MAX_CONCURRENT_LOOKUPS) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      const user = (await client.users.info({ user: userId })).user;
      return { name: user?.profile?.display_name || user?.real_name || user?.name || undefined, ttl: ttlMs };
    } catch (error) {
      // Slack says there is no such person: as lasting an answer as a name.
      return { ttl: slackErrorCode(error) === 'user_not_found' ? ttlMs : failureTtlMs };
    } finally {
      active--;
      waiting.shift()?.();
    }
  };

  return async (userId) => {
    const hit = cache.get(userId);
    if (hit && hit.expiresAt > Date.now()) return hit.name;
    const pending = inFlight.get(userId) ?? lookUp(userId);
    inFlight.set(userId, pending);
    const { name, ttl } = await pending.finally(() => inFlight.delete(userId));
    cache.delete(userId);
    cache.set(userId, { name, expiresAt: Date.now() + ttl });
    // Map iteration is insertion order, so the first key is the oldest entry.
    if (cache.size > maxEntries) cache.delete(cache.keys().next().value as string);
    return name;
  };
}
