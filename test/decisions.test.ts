import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Each decision is made in one place (issue 26): a second copy drifts from the first. This keeps the cheap
 * ones so: the rule written anywhere but its home fails here, naming the file.
 */
const SRC = new URL('../src/', import.meta.url).pathname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const sources = sourceFiles(SRC).map((path) => ({
  file: relative(SRC, path),
  text: readFileSync(path, 'utf8'),
}));

/** Files outside `home` (a path, or a folder and the file of that name) whose text matches `rule`. */
function copiesOf(rule: RegExp, home: RegExp): string[] {
  return sources.filter(({ file, text }) => !home.test(file) && rule.test(text)).map(({ file }) => file);
}

describe('each decision has one home in src/', () => {
  it.each([
    // By channel id (the rule) or by channel_type (which message events alone carry).
    [
      '"is this a DM?"',
      /startsWith\(\s*['"]D['"]\s*\)|channel_type\s*===?\s*['"]im['"]/,
      /^sessions\/conversation-of\.ts$/,
    ],
    // A classic DM's main line has no thread: whether a conversation is a thread is asked, not compared (nor
    // guessed from the shape of a ts).
    [
      '"is this conversation a Slack thread?"',
      /\bDM_MAIN_THREAD\b|\/\^\\d\+\\\.\\d\+\$\//,
      /^sessions\/(thread-key|conversation-of)\.ts$/,
    ],
    // A power of two, or a delay doubled by hand.
    ['the back-off formula', /\b2\s*\*\*|Math\.pow\(\s*2|\*=?\s*2\b/, /^util\/backoff\.ts$/],
    // Whether a server's Retry-After or the back-off wins, and what caps them: a back-off and a Retry-After in
    // one file, or a Retry-After in a min or max.
    [
      'how a Retry-After combines with the back-off',
      /\b(backoffMs|withJitter)\([\s\S]*\bretryAfter|\bretryAfter[\s\S]*\b(backoffMs|withJitter)\(|Math\.(min|max)\([^;]*\bretryAfter/,
      /^util\/backoff\.ts$/,
    ],
    // A character class of LIKE's wildcards (in any order), or a wildcard replaced on its own.
    [
      'LIKE escaping',
      /\[(?=[^\]]*%)(?=[^\]]*_)[\\%_]+\]|\.replace(?:All)?\(\s*(?:['"`][%_]['"`]|\/[%_]\/)/,
      /^store\/like\.ts$/,
    ],
    // The units as alternatives or a character class (in any order), or a table of their lengths. The
    // configuration may be one file or a folder.
    [
      'duration parsing',
      /\((?:\?:)?[smhd](?:\|[smhd]){2,}\)|\[[smhd]{3,4}\]|\b[smhd]:\s*[\d_]+\s*,\s*[smhd]:\s*[\d_]+/i,
      /^config(\.ts$|\/)/,
    ],
    // The call, or the wording it returns written out again.
    [
      'the wording of a refusal',
      /\brefusalText\(|did not pass your message|not enabled in this channel|not on the list of people/,
      /^(conversation\/notices|slack-in\/refusals)\.ts$/,
    ],
    // Where the bot replies: a message's thread, else its own ts, except a classic DM's top level.
    [
      'where a reply goes',
      /\b(?:threadTs|thread_ts)\s*(?:\?\?|\|\|)\s*(?:[\w?]+\??\.)*(?:event_)?ts\b/,
      /^sessions\/conversation-of\.ts$/,
    ],
    // Whether a conversation shows in the agent view is decided, never set by hand.
    [
      '"is this an agent-view conversation?"',
      /\bagentView(?:Dm)?\s*:\s*true\b/,
      /^sessions\/conversation-of\.ts$/,
    ],
  ])('%s: one home', (_decision, rule, home) => {
    const homes = sources.filter(({ file, text }) => home.test(file) && rule.test(text));
    expect(homes.length, 'the rule is found in its home (else this check guards nothing)').toBeGreaterThan(0);
    expect(copiesOf(rule, home)).toEqual([]);
  });
});
