/** Zero-width space: `@here` followed by it reads the same but notifies nobody. */
const INERT = '\u200B';

/**
 * Broadcasts (`<!here>`, `<!channel>`, `<!everyone>`, the legacy `<!group>`, user-group mentions
 * `<!subteam^…>`, and the plain `@here` forms) become inert text: an agent steered by a crafted prompt must
 * not ping a whole channel. A plain form counts unless a letter or digit of any script is next to it (an
 * email address): emphasis such as `_@here_` still pings. Mentions of single people (`<@U…>`) stay: anyone
 * in the thread could mention them too.
 */
export function neutraliseBroadcasts(text: string): string {
  return text
    .replace(
      /<!(here|channel|everyone|group)(?:\|[^>]*)?>/gi,
      (_m, word: string) => `@${INERT}${word.toLowerCase()}`,
    )
    .replace(
      /<!subteam\^[^>|]*(?:\|@?([^>]*))?>/gi,
      (_m, label: string | undefined) => `@${INERT}${label || 'group'}`,
    )
    .replace(
      /(?<![\p{L}\p{M}\p{N}@])@(here|channel|everyone)(?![\p{L}\p{M}\p{N}])/giu,
      (_m, word: string) => `@${INERT}${word}`,
    );
}
