import { describe, expect, it } from 'vitest';
import { feedbackBlock } from '../../src/slack-out/blocks.js';
import { formatAgentReply, type SlackReplyPart } from '../../src/slack-out/format.js';
import { MAX_TEXT_PER_MESSAGE } from '../../src/slack-out/message-packer.js';
import { validateMessageBlocks } from '../fakes/slack-blocks.js';

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
function table(name: string, chars: number): string {
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
    const parts = formatAgentReply([...before, table('T', 5_400), ...after].join('\n\n'));

    expect(parts.map((part) => blocksOf(part).map((block) => block.type))).toEqual([
      ['markdown'],
      ['table', 'markdown'],
    ]);
    for (const part of parts) expect(shownChars(part)).toBeLessThanOrEqual(MAX_TEXT_PER_MESSAGE);
    expect(shownInOrder(parts)).toEqual([...before, '[table T]', ...after]);
  });

  it('fills the rest of a table message with the paragraphs after it, one paragraph at a time', () => {
    const after = Array.from({ length: 10 }, (_, i) => paragraph(`p${i}`, 100));
    const parts = formatAgentReply([table('T', 400), ...after].join('\n\n'), 1_000);
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
    const parts = formatAgentReply(`Intro.\n\n${table('Big', 1_500)}`, 1_000);
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
          pieces.push(table(name, 200 + next(9_600)));
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
