/**
 * How long the inbox remembers a Slack message it was given (its job, its claims) once it is done: the key that
 * makes a second delivery of it a duplicate. Slack retries an event for about an hour; an edit of a mention
 * sends it again at any age.
 */
export const MESSAGE_MEMORY_DAYS = 7;

const DAY_MS = 86_400_000;

/**
 * Whether a message posted at Slack `ts` may be forgotten already, so a delivery of it cannot be told from its
 * first. One younger than the memory is remembered: it is forgotten that long after it was done, never before
 * it was posted.
 */
export function mayBeForgotten(ts: string, now = Date.now()): boolean {
  const postedMs = Number(ts) * 1000;
  return Number.isFinite(postedMs) && now - postedMs > MESSAGE_MEMORY_DAYS * DAY_MS;
}
