import type { UserNameResolver } from '../slack-out/user-names.js';

/** People looked up per message; further mentions stay as their ids (`@U123`). */
export const MAX_RESOLVED_MENTIONS = 20;

const SLACK_TOKEN = /<([^<>]+)>/g;

/**
 * Turns Slack's wire text into what the person typed: the bot's own mention removed, other user
 * mentions as @name, links as plain URLs (or "label (url)"), channel links as #name, HTML entities decoded.
 */
export async function promptFromSlackText(
  text: string,
  botUserId: string | undefined,
  resolveUserName: UserNameResolver,
): Promise<string> {
  const userIds = new Set<string>();
  for (const match of text.matchAll(SLACK_TOKEN)) {
    const inner = match[1] ?? '';
    if (inner.startsWith('@')) {
      const id = inner.slice(1).split('|')[0] ?? '';
      if (id !== botUserId) userIds.add(id);
      // One message must not turn into thousands of users.info calls.
      if (userIds.size >= MAX_RESOLVED_MENTIONS) break;
    }
  }
  const names = new Map<string, string | undefined>();
  await Promise.all(
    [...userIds].map(async (id) => {
      names.set(id, await resolveUserName(id).catch(() => undefined));
    }),
  );

  const replaced = text.replace(SLACK_TOKEN, (_whole, inner: string) => {
    const [target = '', label] = splitOnce(inner, '|');
    if (target.startsWith('@')) {
      const id = target.slice(1);
      if (id === botUserId) return '';
      // Slack may send an empty label (<@U1|>); fall through to the id then.
      return `@${names.get(id) || label || id}`;
    }
    if (target.startsWith('#')) return `#${label || target.slice(1)}`;
    if (target.startsWith('!')) {
      // <!here>, <!channel>, <!subteam^ID|@team>, <!date^…|fallback>
      if (label) return label;
      const special = target.slice(1).split('^')[0] ?? '';
      return `@${special}`;
    }
    const url = target.startsWith('mailto:') ? target.slice('mailto:'.length) : target;
    if (!label || label === url || label === target) return url;
    return `${label} (${url})`;
  });
  return decodeEntities(replaced)
    .replace(/[ \t]{2,}/g, ' ')
    .trim();
}

function splitOnce(value: string, separator: string): [string, string | undefined] {
  const index = value.indexOf(separator);
  return index === -1 ? [value, undefined] : [value.slice(0, index), value.slice(index + 1)];
}

/** Slack escapes exactly these three characters in message text. */
function decodeEntities(text: string): string {
  return text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

const TITLE_MAX_CHARS = 60;

/** A conversation title from its first prompt: one line, cut at a word near the limit. */
export function titleFromPrompt(prompt: string, maxChars = TITLE_MAX_CHARS): string {
  // The first line that has words: a pasted table or list below it would make a poor title.
  const first = prompt.split('\n').find((text) => text.trim() !== '') ?? '';
  const line = first.replace(/\s+/g, ' ').trim();
  // By code points, so an emoji is never split in half.
  const chars = Array.from(line);
  if (chars.length <= maxChars) return line;
  const cut = chars.slice(0, maxChars - 1).join('');
  const atWord = cut.lastIndexOf(' ');
  return `${(atWord > maxChars / 2 ? cut.slice(0, atWord) : cut).trimEnd()}…`;
}
