import type { EarlierMessages, ThreadMessage } from '../slack-out/reads.js';
import type { UserNameResolver } from '../slack-out/user-names.js';
import { cutAt } from '../util/text-cut.js';
import { MAX_RESOLVED_MENTIONS, promptFromSlackText } from './prompt.js';

export const CONTEXT_HEADING = '[Context: the earlier messages of this Slack thread, oldest first]';
export const CONTEXT_END = '[End of context. The message for you:]';
/** Marks the thread's first message cut to fit the budget. */
const CUT = '…';

/**
 * The first prompt of a conversation that starts mid-thread, with the thread's earlier messages before it so
 * "what do you think of this?" reaches the agent with "this". Within the character budget (`maxChars` for the
 * whole prompt) the thread's first message (it says what the thread is about) is kept, cut if need be, with at
 * least half the room when it needs that much; the latest messages fill the rest, newest first, each whole.
 */
export async function withThreadContext(
  prompt: string,
  earlier: EarlierMessages,
  options: { botUserId: string; resolveUserName: UserNameResolver; maxChars: number },
): Promise<string> {
  const resolve = budgeted(options.resolveUserName, MAX_RESOLVED_MENTIONS);
  const lineOf = async (message: ThreadMessage): Promise<string | undefined> => {
    const text = (await promptFromSlackText(message.text, options.botUserId, resolve)).replace(
      /\s*\n\s*/g,
      ' ',
    );
    if (text === '') return undefined;
    const author = message.userId
      ? `@${(await resolve(message.userId)) ?? message.userId}`
      : (message.botName ?? 'a bot');
    return `${author}: ${text}`;
  };
  let room = options.maxChars - prompt.length - CONTEXT_HEADING.length - CONTEXT_END.length - 4;
  const opening = earlier.first && (await lineOf(earlier.first));
  // Each line costs its length and a newline.
  const reserved = opening === undefined ? 0 : Math.min(opening.length + 1, Math.floor(room / 2));
  const latest: string[] = [];
  for (const message of [...earlier.latest].reverse()) {
    const line = await lineOf(message);
    if (line === undefined) continue;
    if (line.length + 1 > room - reserved) break;
    room -= line.length + 1;
    latest.unshift(line);
  }
  const first = opening === undefined ? undefined : fitted(opening, room - 1);
  const lines = first === undefined ? latest : [first, ...latest];
  if (lines.length === 0) return prompt;
  return [CONTEXT_HEADING, ...lines, CONTEXT_END, '', prompt].join('\n');
}

/** The line whole if it fits `chars`, else cut with a marker; nothing when too little would be left. */
function fitted(line: string, chars: number): string | undefined {
  if (line.length <= chars) return line;
  // A few words at least, or it says nothing.
  if (chars < 20) return undefined;
  return `${cutAt(line, chars - CUT.length).trimEnd()}${CUT}`;
}

/** A resolver that looks up at most `max` distinct people; later ones stay ids. */
function budgeted(resolve: UserNameResolver, max: number): UserNameResolver {
  const asked = new Set<string>();
  return async (userId) => {
    if (!asked.has(userId)) {
      if (asked.size >= max) return undefined;
      asked.add(userId);
    }
    return resolve(userId);
  };
}
