import { lexer, type Token } from 'marked';
import { describe, expect, it } from 'vitest';
import { feedbackBlock } from '../../src/slack-out/blocks.js';
import { formatAgentReply, MAX_REPLY_CHARS, type SlackReplyPart } from '../../src/slack-out/format.js';
import { MAX_TEXT_PER_MESSAGE } from '../../src/slack-out/message-packer.js';
import { validateMessageBlocks } from '../fakes/slack-blocks.js';

/** A row of a Slack table block: its cells as raw text. */
const rawRow = (...texts: string[]) => texts.map((text) => ({ type: 'raw_text', text }));

/** The Markdown of each message a reply is posted as, with at most `maxChars` of text in each. */
const messagesOf = (markdown: string, maxChars: number) =>
  formatAgentReply(markdown, maxChars).map((part) => part.markdown);

function fenceBalanced(chunk: string): boolean {
  return (chunk.match(/^\s*```/gm) ?? []).length % 2 === 0;
}

/** The text Slack shows as code in a message: every code block's content, nested ones (in lists) included. */
function codeIn(markdown: string): string {
  const walk = (tokens: Token[]): string[] =>
    tokens.flatMap((token) => {
      if (token.type === 'code') return [token.text as string];
      const nested = [
        ...('tokens' in token && Array.isArray(token.tokens) ? token.tokens : []),
        ...('items' in token && Array.isArray(token.items) ? (token.items as Token[]) : []),
      ];
      return walk(nested);
    });
  return walk(lexer(markdown)).join('\n');
}

/** A numbered list whose items each hold a code block of `lines` lines. */
function listWithCode(items: number, lines: number): { markdown: string; codeLines: string[] } {
  const codeLines: string[] = [];
  const listItems = Array.from({ length: items }, (_, item) => {
    const code = Array.from({ length: lines }, (_, line) => `const step${item}line${line} = ${line}; // x`);
    codeLines.push(...code);
    return [`${item + 1}. Step ${item + 1}:`, '   ```ts', ...code.map((line) => `   ${line}`), '   ```'].join(
      '\n',
    );
  });
  return { markdown: `Here are the steps:\n\n${listItems.join('\n')}\n\nThat is all.`, codeLines };
}

/** Every line arrives in the messages, in order, and as code (none shown as prose). */
function expectCodeKept(messages: string[], codeLines: string[]) {
  let next = 0;
  for (const message of messages) {
    const code = codeIn(message);
    const shown = message.match(/const step\d+line\d+ = \d+; \/\/ x/g) ?? [];
    for (const line of shown) {
      expect(line).toBe(codeLines[next]);
      expect(code, `${line} is shown as code`).toContain(line);
      next += 1;
    }
  }
  expect(next).toBe(codeLines.length);
}

describe('formatAgentReply', () => {
  it('sends a short reply as one markdown block with a plain fallback', () => {
    const parts = formatAgentReply('**Hello** _world_\n\n- a\n- b');
    expect(parts).toEqual([
      {
        text: '**Hello** _world_\n\n- a\n- b',
        blocks: [{ type: 'markdown', text: '**Hello** _world_\n\n- a\n- b' }],
        markdown: '**Hello** _world_\n\n- a\n- b',
      },
    ]);
  });

  it('makes broadcasts inert in every form it posts, so agent output cannot ping a channel', () => {
    const [part] = formatAgentReply('Hey <!channel> & <!here|here> @everyone <!subteam^S1|@devs> & <@U123>');
    const inert = '\u200B';
    const expected = `Hey @${inert}channel & @${inert}here @${inert}everyone @${inert}devs & <@U123>`;
    expect(part?.markdown).toBe(expected);
    expect(part?.blocks).toEqual([{ type: 'markdown', text: expected }]);
    // The notification text is escaped as well, so a mention of one person shows literally there.
    expect(part?.text).toBe(
      `Hey @${inert}channel &amp; @${inert}here @${inert}everyone @${inert}devs &amp; &lt;@U123&gt;`,
    );
  });

  it('keeps the indentation of nested lists and indented code across paragraphs', () => {
    const [chunk] = messagesOf('- item\n\n    - nested item\n\n    indented code', 1_000);
    expect(chunk).toBe('- item\n\n    - nested item\n\n    indented code');
  });

  it('says so when the agent replied with nothing', () => {
    expect(formatAgentReply('   ')[0]?.text).toMatch(/empty reply/);
  });

  it('splits a long reply between paragraphs and code blocks, never inside a fence, losing nothing', () => {
    const code = [
      '```ts',
      ...Array.from({ length: 120 }, (_, i) => `const line${i} = ${i}; // filler text`),
      '```',
    ];
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Paragraph ${i} ${'word '.repeat(60)}`.trim());
    const markdown = [
      paragraphs.slice(0, 15).join('\n\n'),
      code.join('\n'),
      paragraphs.slice(15).join('\n\n'),
    ].join('\n\n');
    expect(markdown.length).toBeGreaterThan(12_000);
    const chunks = messagesOf(markdown, 3_000);
    expect(chunks.length).toBeGreaterThan(4);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(3_000);
      expect(fenceBalanced(chunk)).toBe(true);
    }
    // Every paragraph and every code line arrives, in order.
    const joined = chunks.join('\n');
    let cursor = 0;
    for (const piece of [...paragraphs.slice(0, 15), ...code.slice(1, -1), ...paragraphs.slice(15)]) {
      const at = joined.indexOf(piece, cursor);
      expect(at, piece).toBeGreaterThanOrEqual(cursor);
      cursor = at + piece.length;
    }
  });

  it('re-opens a code block that is itself over the limit with the same language fence', () => {
    const code = [
      '```python',
      ...Array.from({ length: 400 }, (_, i) => `print(${i})  # ${'x'.repeat(40)}`),
      '```',
    ];
    const chunks = messagesOf(code.join('\n'), 2_000);
    expect(chunks.length).toBeGreaterThan(5);
    for (const chunk of chunks) {
      expect(chunk.startsWith('```python\n')).toBe(true);
      expect(chunk.endsWith('\n```')).toBe(true);
      expect(chunk.length).toBeLessThanOrEqual(2_000);
    }
  });

  it('closes an unterminated fence so the rest of the message is not swallowed as code', () => {
    const [chunk] = messagesOf('Look:\n\n```\nlet x = 1;', 1_000);
    expect(chunk).toBe('Look:\n\n```\nlet x = 1;\n```');
  });

  it('closes a code block the length cap cut, with its own fence, before saying it was cut', () => {
    const code = ['~~~sh', ...Array.from({ length: 200 }, (_, i) => `echo ${i}`), '~~~'].join('\n');
    const [part] = formatAgentReply(code, 11_000, 500);
    const markdown = part?.markdown ?? '';
    expect(markdown).toMatch(/\n~~~\n\n_:scissors: The reply was cut/);
    expect(markdown.startsWith('~~~sh\necho 0\n')).toBe(true);
  });

  it('splits a long list whose items hold code between items, every message with its code as code', () => {
    const { markdown, codeLines } = listWithCode(8, 70);
    expect(markdown.length).toBeGreaterThan(11_000);
    const messages = formatAgentReply(markdown).map((part) => part.markdown);
    expect(messages).toHaveLength(2);
    for (const message of messages) {
      expect(message.length).toBeLessThanOrEqual(11_000);
      expect(fenceBalanced(message)).toBe(true);
    }
    expectCodeKept(messages, codeLines);
    expect(messages.at(-1)?.endsWith('That is all.')).toBe(true);
  });

  it('closes and re-opens a code block inside a list item that is itself over the limit', () => {
    const { markdown, codeLines } = listWithCode(3, 70);
    const messages = messagesOf(markdown, 1_000);
    for (const message of messages) {
      expect(message.length).toBeLessThanOrEqual(1_000);
      expect(fenceBalanced(message)).toBe(true);
    }
    expectCodeKept(messages, codeLines);
  });

  it('re-opens a deeply indented code block at the margin, where a fence still opens one', () => {
    const code = Array.from({ length: 60 }, (_, line) => `const step0line${line} = ${line}; // x`);
    const markdown = [
      '- outer',
      '  - inner',
      '    ```',
      ...code.map((line) => `    ${line}`),
      '    ```',
      '',
      'Done.',
    ];
    const messages = messagesOf(markdown.join('\n'), 800);
    expect(messages.length).toBeGreaterThan(1);
    for (const message of messages) {
      expect(message.length).toBeLessThanOrEqual(800);
      expect(fenceBalanced(message)).toBe(true);
    }
    expectCodeKept(messages, code);
    expect(codeIn(messages.at(-1) ?? '')).not.toContain('Done.');
  });

  it('closes a code block inside a list item that the length cap cut, so the notice is not code', () => {
    const { markdown } = listWithCode(3, 70);
    const [part, ...rest] = formatAgentReply(markdown, 11_000, 2_000);
    expect(rest).toEqual([]);
    const message = part?.markdown ?? '';
    expect(fenceBalanced(message)).toBe(true);
    expect(message).toMatch(/The reply was cut/);
    expect(codeIn(message)).not.toMatch(/The reply was cut/);
  });

  it('cuts a single enormous line at word boundaries', () => {
    const chunks = messagesOf('word '.repeat(5_000).trim(), 1_000);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(1_000);
    expect(chunks.join(' ').split(' ').length).toBe(5_000);
  });
});

describe('tables in a reply', () => {
  const table = [
    '| Name | Role | Since |',
    '|:-----|:----:|------:|',
    '| **Ada** | `eng` | 2019 |',
    '| Bob \\| Jr | ops | |',
  ].join('\n');

  it('posts a Markdown table as a Slack table block, with the text around it as usual', () => {
    const [part, ...rest] = formatAgentReply(`Here is the team:\n\n${table}\n\nAsk if you need more.`);
    expect(rest).toEqual([]);
    expect(part?.blocks).toEqual([
      { type: 'markdown', text: 'Here is the team:' },
      {
        type: 'table',
        rows: [rawRow('Name', 'Role', 'Since'), rawRow('Ada', 'eng', '2019'), rawRow('Bob | Jr', 'ops', ' ')],
        column_settings: [{ align: 'left' }, { align: 'center' }, { align: 'right' }],
      },
      { type: 'markdown', text: 'Ask if you need more.' },
    ]);
    // The words for notifications and for a workspace refusing blocks keep the table as written.
    expect(part?.markdown).toContain(table);
  });

  it('puts a second table in the next message: Slack takes one per message', () => {
    const parts = formatAgentReply(`${table}\n\nand again:\n\n${table}`);
    expect(parts.map((part) => part.blocks.map((block) => block.type))).toEqual([
      ['table', 'markdown'],
      ['table'],
    ]);
  });

  it('does not flood a thread with one message per table: past the messages a full reply takes, tables are monospace', () => {
    const answer = Array.from(
      { length: 20 },
      (_, i) => `Option ${i}:\n\n| k | v |\n|---|---|\n| a | ${i} |`,
    ).join('\n\n');
    expect(answer.length).toBeLessThan(1_000);
    const parts = formatAgentReply(answer);
    // 40,000 characters at most, 11,000 a message: a reply takes at most four messages, whatever it holds.
    expect(parts.length).toBeLessThanOrEqual(Math.ceil(MAX_REPLY_CHARS / MAX_TEXT_PER_MESSAGE));
    const blocks = parts.flatMap((part) => part.blocks);
    expect(blocks.filter((block) => block.type === 'table').length).toBeGreaterThan(0);
    const shown = JSON.stringify(blocks);
    for (let i = 0; i < 20; i++) expect(shown).toContain(`Option ${i}:`);
    expect(shown).toMatch(/a +\| 19/);
  });

  it('keeps every cell of a table past the limits, as a monospace block', () => {
    const rows = Array.from({ length: 150 }, (_, i) => `| row ${i} | ${'x'.repeat(5)} |`);
    const big = ['| Row | Value |', '|---|---|', ...rows].join('\n');
    const parts = formatAgentReply(big);
    const blocks = parts.flatMap((part) => part.blocks);
    expect(blocks.every((block) => block.type === 'markdown')).toBe(true);
    const text = blocks.map((block) => (block as { text: string }).text).join('\n');
    expect(text).toContain('row 0   | xxxxx');
    expect(text).toContain('row 149 | xxxxx');
    expect(text.startsWith('```')).toBe(true);
  });

  it('ends a table at the first line without a pipe: the text right after it is a paragraph', () => {
    const [part, ...rest] = formatAgentReply('| a | b |\n|---|---|\n| 1 | 2 |\nAfter');
    expect(rest).toEqual([]);
    expect(part?.blocks).toEqual([
      {
        type: 'table',
        rows: [rawRow('a', 'b'), rawRow('1', '2')],
      },
      { type: 'markdown', text: 'After' },
    ]);
  });

  it('leaves a table inside a code block alone, and a lone pipe as text', () => {
    const [part] = formatAgentReply(['```', table, '```', '', 'a | b'].join('\n'));
    expect(part?.blocks.map((block) => block.type)).toEqual(['markdown']);
  });
});

type Block = { type: string; text?: string; rows?: { text: string }[][] };

const blocksOf = (part: SlackReplyPart) => part.blocks as unknown as Block[];

/** The text a message shows: its markdown blocks and table cells together. */
function shownChars(part: SlackReplyPart): number {
  return blocksOf(part).reduce(
    (sum, block) =>
      sum +
      (block.text?.length ?? 0) +
      (block.rows ?? []).flat().reduce((cells, cell) => cells + cell.text.length, 0),
    0,
  );
}

/** What the reply shows, in order: markdown paragraphs, and a table as its first cell's text. */
function shownInOrder(parts: SlackReplyPart[]): string[] {
  return parts.flatMap((part) =>
    blocksOf(part).flatMap((block) =>
      block.type === 'table'
        ? [`[table ${block.rows?.[0]?.[0]?.text}]`]
        : block.type === 'markdown'
          ? (block.text ?? '').split('\n\n')
          : [],
    ),
  );
}

const paragraph = (label: string, chars: number) => `${label} ${'w'.repeat(chars - label.length - 1)}`;

/** A Markdown table whose cells hold about `chars` characters, its first cell naming it. */
function sizedTable(name: string, chars: number): string {
  const rowChars = 100;
  const rows = Array.from({ length: Math.max(1, Math.round(chars / rowChars) - 1) }, (_, i) => [
    `r${i}`,
    'x'.repeat(rowChars - `r${i}`.length),
  ]);
  return [`| ${name} | value |`, '|---|---|', ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

describe('one text budget per message', () => {
  it('moves a table that does not fit beside long prose to the next message, where the prose goes on', () => {
    // The reply that made Slack refuse the message: 8,400 characters of prose, a 5,400-character table
    // and 3,500 more characters of prose, which the old separate budgets put in one message.
    const before = Array.from({ length: 24 }, (_, i) => paragraph(`before-${i}`, 350));
    const after = Array.from({ length: 10 }, (_, i) => paragraph(`after-${i}`, 350));
    const parts = formatAgentReply([...before, sizedTable('T', 5_400), ...after].join('\n\n'));

    expect(parts.map((part) => blocksOf(part).map((block) => block.type))).toEqual([
      ['markdown'],
      ['table', 'markdown'],
    ]);
    for (const part of parts) expect(shownChars(part)).toBeLessThanOrEqual(MAX_TEXT_PER_MESSAGE);
    expect(shownInOrder(parts)).toEqual([...before, '[table T]', ...after]);
  });

  it('fills the rest of a table message with the paragraphs after it, one paragraph at a time', () => {
    const after = Array.from({ length: 10 }, (_, i) => paragraph(`p${i}`, 100));
    const parts = formatAgentReply([sizedTable('T', 400), ...after].join('\n\n'), 1_000);
    const cells = (blocksOf(parts[0] as SlackReplyPart)[0]?.rows ?? []).flat();
    const tableChars = cells.reduce((sum, cell) => sum + cell.text.length, 0);
    // As many 100-character paragraphs (joined by a blank line) as fit beside the table, then the next message.
    const fit = Math.floor((1_000 - tableChars + 2) / 102);
    expect(fit).toBeGreaterThan(0);
    expect(blocksOf(parts[0] as SlackReplyPart).map((block) => block.type)).toEqual(['table', 'markdown']);
    expect(blocksOf(parts[0] as SlackReplyPart)[1]?.text?.split('\n\n')).toEqual(after.slice(0, fit));
    for (const part of parts) expect(shownChars(part)).toBeLessThanOrEqual(1_000);
    expect(shownInOrder(parts)).toEqual(['[table T]', ...after]);
  });

  it('keeps a table over the budget whole as a monospace block rather than splitting it', () => {
    const parts = formatAgentReply(`Intro.\n\n${sizedTable('Big', 1_500)}`, 1_000);
    const blocks = parts.flatMap(blocksOf);
    expect(blocks.every((block) => block.type === 'markdown')).toBe(true);
    for (const part of parts) expect(shownChars(part)).toBeLessThanOrEqual(1_000);
    expect(blocks.map((block) => block.text).join('\n')).toContain('r13');
  });

  it('gives Slack only messages its block rules take, with the feedback buttons under the last', () => {
    // Many shapes of replies: tables of many sizes between prose and code of many sizes.
    for (let seed = 1; seed <= 40; seed++) {
      const pieces: string[] = [];
      const expected: string[] = [];
      let state = seed;
      const next = (max: number) => {
        state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
        return state % max;
      };
      for (let i = 0; i < 6; i++) {
        const prose = Array.from({ length: 1 + next(20) }, (_, p) =>
          paragraph(`s${seed}-${i}-${p}`, 40 + next(1_500)),
        );
        pieces.push(...prose);
        expected.push(...prose);
        if (next(3) > 0) {
          const name = `T${seed}-${i}`;
          pieces.push(sizedTable(name, 200 + next(9_600)));
          expected.push(`[table ${name}]`);
        }
      }
      const parts = formatAgentReply(pieces.join('\n\n'), MAX_TEXT_PER_MESSAGE, Number.POSITIVE_INFINITY);
      const last = parts.at(-1);
      if (last) last.blocks = [...last.blocks, feedbackBlock({ agentId: 'agent', sessionId: 'session' })];
      for (const part of parts) {
        expect(shownChars(part)).toBeLessThanOrEqual(MAX_TEXT_PER_MESSAGE);
        expect(blocksOf(part).filter((block) => block.type === 'table').length).toBeLessThanOrEqual(1);
        expect(validateMessageBlocks(part.blocks, undefined), `seed ${seed}`).toBeUndefined();
      }
      expect(shownInOrder(parts), `seed ${seed}`).toEqual(expected);
    }
  });
});
