/**
 * A LIKE pattern matching every text that starts with `prefix`, its `%`, `_` and `\` taken literally (the
 * backslash is LIKE's default escape character in PostgreSQL and PGlite). Keys hold ids chosen by Slack and
 * the agent service, so a prefix is never trusted to be free of wildcards.
 */
export function startsWithPattern(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, '\\$&')}%`;
}
