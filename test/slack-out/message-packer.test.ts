import { describe, expect, it } from 'vitest';
import { MessagePacker } from '../../src/slack-out/message-packer.js';
import type { MarkdownTable } from '../../src/slack-out/tables.js';

const table = (name: string, cellChars = 10): MarkdownTable => ({
  rows: [
    [name, 'x'.repeat(cellChars)],
    ['a', 'b'],
  ],
  align: [undefined, undefined],
  source: `| ${name} | ${'x'.repeat(cellChars)} |\n|---|---|\n| a | b |`,
});

describe('packing a reply into messages', () => {
  it('joins consecutive Markdown into one block, a blank line between, and keeps the source of each', () => {
    const packer = new MessagePacker(100);
    packer.addMarkdown('one');
    packer.addMarkdown('two');
    expect(packer.finish()).toEqual([
      { blocks: [{ type: 'markdown', text: 'one\n\ntwo' }], source: ['one', 'two'] },
    ]);
  });

  it('starts a new message when the next piece would pass the budget, the joining blank line counted', () => {
    const packer = new MessagePacker(10);
    packer.addMarkdown('12345');
    packer.addMarkdown('1234'); // 5 + 2 + 4 = 11
    expect(packer.finish().map((message) => message.source)).toEqual([['12345'], ['1234']]);
  });

  it('puts at most one table in a message, with the Markdown around it', () => {
    const packer = new MessagePacker(1_000);
    packer.addMarkdown('before');
    packer.addTable(table('first'));
    packer.addMarkdown('between');
    packer.addTable(table('second'));
    const messages = packer.finish();
    expect(messages.map((message) => message.blocks.map((block) => block.type))).toEqual([
      ['markdown', 'table', 'markdown'],
      ['table'],
    ]);
    expect(messages[1]?.source).toEqual([table('second').source]);
  });

  it('counts a table by the text of its cells, and says whether one fits a message of its own', () => {
    const packer = new MessagePacker(50);
    expect(packer.takesTable(table('t', 40), 1)).toBe(true);
    expect(packer.takesTable(table('t', 60), 1)).toBe(false);
    packer.addMarkdown('x'.repeat(20));
    // It would start a second message: only where the reply may have two.
    expect(packer.takesTable(table('t', 40), 1)).toBe(false);
    expect(packer.takesTable(table('t', 40), 2)).toBe(true);
    packer.addTable(table('t', 40));
    expect(packer.finish()).toHaveLength(2);
  });

  it('finishes with no message when nothing was added', () => {
    expect(new MessagePacker().finish()).toEqual([]);
  });
});
