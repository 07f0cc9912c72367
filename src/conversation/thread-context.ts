import type { ThreadMessage } from '../slack-out/replies.js';
import type { UserNameResolver } from '../slack-out/user-names.js';
import { MAX_RESOLVED_MENTIONS, promptFromSlackText } from './prompt.js';

export const CONTEXT_HEADING = '[Context: the earlier messages of this Slack thread, oldest first]';
export const CONTEXT_END = '[End of context. The message for you:]';

/**
 * The first prompt of a conversation that starts mid-thread, with the thread's earlier messages before it so
 * "what do you think of this?" reaches the agent with "this". Newest messages are kept first when the
 * character budget (`maxChars` for the whole prompt) does not fit them all; nothing is cut mid-message.
 */
export async function withThreadContext(
  prompt: string,
  earlier: readonly ThreadMessage[],
  options: { botUserId: string; resolveUserName: UserNameResolver; maxChars: number },
): Promise<string> {
  const resolve = budgeted(options.resolveUserName, MAX_RESOLVED_MENTIONS);
  const lines: string[] = [];
  let room = options.maxChars - prompt.length - CONTEXT_HEADING.length - CONTEXT_END.length - 4;
  for (const message of [...earlier].reverse()) {
    const text = (await promptFromSlackText(message.text, options.botUserId, resolve)).replace(
      /\s*\n\s*/g,
      ' ',
    );
    if (text === '') continue;
    const author = message.userId
      ? `@${(await resolve(message.userId)) ?? message.userId}`
      : (message.botName ?? 'a bot');
    const line = `${author}: ${text}`;
    if (line.length + 1 > room) break;
    room -= line.length + 1;
    lines.unshift(line);
  }
  if (lines.length === 0) return prompt;
  return [CONTEXT_HEADING, ...lines, CONTEXT_END, '', prompt].join('\n');
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
