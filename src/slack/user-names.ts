import type { WebClient } from '@slack/web-api';
import type { UserNameResolver } from './prompt-text.js';

/** users.info lookups behind a bounded, expiring cache (mentions of the same people repeat a lot). */
export function cachedUserNameResolver(
  client: WebClient,
  options: { maxEntries?: number; ttlMs?: number } = {},
): UserNameResolver {
  const maxEntries = options.maxEntries ?? 5_000;
  const ttlMs = options.ttlMs ?? 60 * 60 * 1000;
  const cache = new Map<string, { name: string | undefined; expiresAt: number }>();
  return async (userId) => {
    const hit = cache.get(userId);
    if (hit && hit.expiresAt > Date.now()) return hit.name;
    const response = await client.users.info({ user: userId });
    const user = response.user;
    const name = user?.profile?.display_name || user?.real_name || user?.name || undefined;
    cache.delete(userId);
    cache.set(userId, { name, expiresAt: Date.now() + ttlMs });
    // Map iteration is insertion order, so the first key is the oldest entry.
    if (cache.size > maxEntries) cache.delete(cache.keys().next().value as string);
    return name;
  };
}
