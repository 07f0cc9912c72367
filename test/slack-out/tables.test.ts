import { describe, expect, it } from 'vitest';
import {
  fitsTableBlock,
  type MarkdownTable,
  monospaceTable,
  piecesOf,
  TABLE_LIMITS,
  tableBlock,
  tableChars,
} from '../../src/slack-out/tables.js';

const INERT = '\u200B';

/** A row of a Slack table block: its cells as raw text. */
const rawRow = (...texts: string[]) => texts.map((text) => ({ type: 'raw_text', text }));

/** The one table of a reply that holds only it. */
function onlyTable(markdown: string): MarkdownTable {
  const [piece, ...rest] = piecesOf(markdown);
  expect(rest).toEqual([]);
  if (piece?.kind !== 'table') throw new Error(`not a table: ${JSON.stringify(piece)}`);
  return piece.table;
}

/** A table of `rows` rows (the header included) and `columns` columns, each cell `cell`. */
const grid = (rows: number, columns: number, cell = 'x'): MarkdownTable => ({
  rows: Array.from({ length: rows }, () => Array.from({ length: columns }, () => cell)),
  align: Array.from({ length: columns }, () => undefined),
  source: '',
});

describe('piecesOf', () => {
  it('splits a reply into its text and tables, in order, the text between kept as written', () => {
    const list = '- one\n  - nested, indented as written';
    const pieces = piecesOf(
      `\n\nIntro\n\n${list}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nBetween\n\n| p | q |\n|---|---|\n| r | s |\n\nEnd  \n`,
    );
    expect(pieces.map((piece) => (piece.kind === 'text' ? piece.markdown : piece.table.rows))).toEqual([
      `Intro\n\n${list}`,
      [
        ['a', 'b'],
        ['1', '2'],
      ],
      'Between',
      [
        ['p', 'q'],
        ['r', 's'],
      ],
      'End',
    ]);
  });

  it('ends a table at its first line without a pipe, and still finds a table after that text', () => {
    const pieces = piecesOf(
      '| a | b |\n|---|---|\n| 1 | 2 |\nRight after.\n\n| p | q |\n|---|---|\n| r | s |',
    );
    expect(pieces.map((piece) => piece.kind)).toEqual(['table', 'text', 'table']);
    const [first, text] = pieces;
    expect(first?.kind === 'table' && first.table).toMatchObject({
      rows: [
        ['a', 'b'],
        ['1', '2'],
      ],
      source: '| a | b |\n|---|---|\n| 1 | 2 |',
    });
    expect(text).toEqual({ kind: 'text', markdown: 'Right after.' });
  });

  it('makes every row as wide as the header, reads escaped pipes as pipes, and keeps the alignment', () => {
    const source = '| a | b | c |\n|---|:-:|--:|\n| 1 |\n| 1 | 2 | 3 | 4 |\n| x \\| y | | z |';
    expect(onlyTable(`${source}\n\n`)).toEqual({
      rows: [
        ['a', 'b', 'c'],
        ['1', '', ''],
        ['1', '2', '3'],
        ['x | y', '', 'z'],
      ],
      align: [undefined, 'center', 'right'],
      source,
    });
  });

  it('leaves a table inside a code block as code, and a line with a pipe but no delimiter row as text', () => {
    const fenced = '```\n| a | b |\n|---|---|\n| 1 | 2 |\n```';
    expect(piecesOf(fenced)).toEqual([{ kind: 'text', markdown: fenced }]);
    expect(piecesOf('a | b\nc | d')).toEqual([{ kind: 'text', markdown: 'a | b\nc | d' }]);
  });
});

describe('tableBlock', () => {
  it('sends each cell as raw text, an empty one as a space (Slack needs a character)', () => {
    expect(tableBlock(onlyTable('| a | |\n|---|---|\n| | 2 |'))).toEqual({
      type: 'table',
      rows: [rawRow('a', ' '), rawRow(' ', '2')],
    });
  });

  it('sends column settings up to the last aligned column, spelling out left before it', () => {
    const settings = (delimiter: string) =>
      tableBlock(onlyTable(`| a | b | c |\n${delimiter}\n| 1 | 2 | 3 |`)).column_settings;
    expect(settings('|---|---|---|')).toBeUndefined();
    expect(settings('|---|--:|---|')).toEqual([{ align: 'left' }, { align: 'right' }]);
    expect(settings('|:-:|---|:--|')).toEqual([{ align: 'center' }, { align: 'left' }, { align: 'left' }]);
  });

  it('shows a cell as people read it: no emphasis or code markers, links with their address, no broadcast', () => {
    const table = onlyTable(
      '| **Name** | `code` | Link | Note |\n|---|---|---|---|\n| __Ada__ | a<br>b<BR/>c | [docs](https://e.x/d) | @**here** |',
    );
    expect(tableBlock(table).rows.map((row) => row.map((cell) => (cell as { text: string }).text))).toEqual([
      ['Name', 'code', 'Link', 'Note'],
      ['Ada', 'a b c', 'docs (https://e.x/d)', `@${INERT}here`],
    ]);
  });
});

describe('fitsTableBlock', () => {
  it(`takes up to ${TABLE_LIMITS.rows} rows, the header counted, and ${TABLE_LIMITS.columns} columns`, () => {
    expect(fitsTableBlock(grid(TABLE_LIMITS.rows, 2))).toBe(true);
    expect(fitsTableBlock(grid(TABLE_LIMITS.rows + 1, 2))).toBe(false);
    expect(fitsTableBlock(grid(2, TABLE_LIMITS.columns))).toBe(true);
    expect(fitsTableBlock(grid(2, TABLE_LIMITS.columns + 1))).toBe(false);
  });

  it(`takes up to ${TABLE_LIMITS.chars} characters as the block shows them`, () => {
    // 50 rows of 2 cells of 100 characters: exactly the limit.
    expect(fitsTableBlock(grid(50, 2, 'x'.repeat(100)))).toBe(true);
    const over = grid(50, 2, 'x'.repeat(100));
    over.rows[0] = ['x'.repeat(100), 'x'.repeat(101)];
    expect(fitsTableBlock(over)).toBe(false);
    // Markers the block drops are not counted; an empty cell is, as the space it is sent as.
    expect(tableChars(onlyTable('| **ab** | |\n|---|---|\n| `c` | [d](https://e.x) |'))).toBe(
      'ab'.length + 1 + 'c'.length + 'd (https://e.x)'.length,
    );
  });
});

describe('monospaceTable', () => {
  it('lines the columns up under a rule, in a code block, every cell kept as shown', () => {
    const long = 'a much longer cell than the header';
    expect(
      monospaceTable(
        onlyTable(`| Name | Value |\n|---|---|\n| **Ada** | ${long} |\n| [x](https://e.x) | @here |`),
      ),
    ).toBe(
      [
        '```',
        'Name            | Value',
        `----------------+-${'-'.repeat(long.length)}`,
        `Ada             | ${long}`,
        `x (https://e.x) | @${INERT}here`,
        '```',
      ].join('\n'),
    );
  });

  it('draws at least one dash over an empty column, and leaves no spaces at the ends of lines', () => {
    expect(monospaceTable(onlyTable('| a | |\n|---|---|\n| long | |'))).toBe(
      ['```', 'a    |', '-----+--', 'long |', '```'].join('\n'),
    );
  });
});
