import type { types } from '@slack/bolt';
import { lexer, type Tokens } from 'marked';
import { neutraliseBroadcasts } from './broadcasts.js';

/**
 * Markdown tables (GitHub's pipe syntax) in an agent's reply. Slack's `markdown` block does not render them, so
 * each becomes a Slack `table` block, or, past the block's limits, a monospace code block that keeps every cell.
 */

/** Slack's limits on a `table` block (docs.slack.dev, table block). */
export const TABLE_LIMITS = { rows: 100, columns: 20, chars: 10_000 } as const;

export interface MarkdownTable {
  /** The header row first. */
  rows: string[][];
  align: ('left' | 'center' | 'right' | undefined)[];
  /** The table as the agent wrote it, for a plain-text fallback. */
  source: string;
}

/** A stretch of a reply: Markdown text, or a table. */
export type ReplyPiece = { kind: 'text'; markdown: string } | { kind: 'table'; table: MarkdownTable };

/**
 * Splits a reply into text and tables, in order, as marked's lexer reads GitHub's Markdown: a table inside a
 * code block stays code, and the text between tables is kept exactly as written. A table ends at its first
 * line without a pipe: GitHub would read text right after it as one more row, where an agent means a paragraph.
 */
export function piecesOf(markdown: string): ReplyPiece[] {
  const pieces: ReplyPiece[] = [];
  let text = '';
  const flushText = () => {
    const trimmed = text.replace(/^\n+|\s+$/g, '');
    if (trimmed !== '') pieces.push({ kind: 'text', markdown: trimmed });
    text = '';
  };
  const tokens = lexer(markdown);
  for (const [index, token] of tokens.entries()) {
    if (token.type !== 'table') {
      text += token.raw;
      continue;
    }
    flushText();
    const table = token as Tokens.Table;
    const lines = table.raw.replace(/\n+$/, '').split('\n');
    // The header and delimiter lines hold pipes (the lexer needs them to see a table): look from the rows on.
    const end = lines.findIndex((line, at) => at >= 2 && !line.includes('|'));
    if (end === -1) {
      pieces.push({ kind: 'table', table: tableOf(table) });
      continue;
    }
    pieces.push({
      kind: 'table',
      table: tableOf({ ...table, rows: table.rows.slice(0, end - 2), raw: lines.slice(0, end).join('\n') }),
    });
    // What follows is read again from where the table ends: the rest of the table's lines, then the reply.
    const rest = [lines.slice(end).join('\n'), table.raw.slice(lines.join('\n').length)]
      .concat(tokens.slice(index + 1).map((next) => next.raw))
      .join('');
    pieces.push(...piecesOf(rest));
    return pieces;
  }
  flushText();
  return pieces;
}

/** A table token's cells as written (escaped pipes already read as pipes), every row as wide as the header. */
function tableOf(token: Tokens.Table): MarkdownTable {
  const columns = token.header.length;
  return {
    rows: [token.header, ...token.rows].map((row) =>
      Array.from({ length: columns }, (_, column) => row[column]?.text.trim() ?? ''),
    ),
    align: token.align.map((align) => align ?? undefined),
    source: token.raw.replace(/\s+$/, ''),
  };
}

/** Whether the table fits one Slack `table` block. */
export function fitsTableBlock(table: MarkdownTable): boolean {
  return (
    table.rows.length <= TABLE_LIMITS.rows &&
    (table.rows[0]?.length ?? 0) <= TABLE_LIMITS.columns &&
    tableChars(table) <= TABLE_LIMITS.chars
  );
}

/** The characters the table's block shows: the text of every cell, as `tableBlock` writes it. */
export function tableChars(table: MarkdownTable): number {
  return table.rows.flat().reduce((sum, cell) => sum + cellText(cell).length, 0);
}

/** The table as a Slack `table` block, each cell as text. */
export function tableBlock(table: MarkdownTable): types.TableBlock {
  // One settings object per column up to the last aligned one; Slack applies its defaults to the columns
  // after the list (docs: table block, column_settings). A column without alignment before an aligned one
  // spells Slack's default out (`left`) rather than sending `{}` (not in the documented schema) or `null`
  // (shown on the page to skip a column, but not in @slack/types): taken under every reading.
  const aligned = table.align.findLastIndex((align) => align !== undefined) + 1;
  return {
    type: 'table',
    rows: table.rows.map((row) => row.map((cell) => ({ type: 'raw_text', text: cellText(cell) }))),
    ...(aligned > 0
      ? { column_settings: table.align.slice(0, aligned).map((align) => ({ align: align ?? 'left' })) }
      : {}),
  };
}

/** The table as a monospace code block with its columns lined up: every cell kept, whatever its size. */
export function monospaceTable(table: MarkdownTable): string {
  const rows = table.rows.map((row) => row.map(displayText));
  const widths = (rows[0] ?? []).map((_, column) =>
    Math.max(...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (row: string[]) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join(' | ')
      .trimEnd();
  const [header = [], ...body] = rows;
  const rule = widths.map((width) => '-'.repeat(Math.max(1, width))).join('-+-');
  return ['```', line(header), rule, ...body.map(line), '```'].join('\n');
}

/** A cell's text in the block: Slack needs at least one character. */
function cellText(cell: string): string {
  return displayText(cell) || ' ';
}

/**
 * A cell as people should read it: emphasis and code markers dropped, links as "label (url)". Broadcasts are
 * made inert again: dropping markers can make one (`@**here**`).
 */
function displayText(cell: string): string {
  return neutraliseBroadcasts(
    cell
      .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, '$1 ($2)')
      .replace(/(\*\*|__)(.+?)\1/g, '$2')
      .replace(/`([^`]+)`/g, '$1')
      .replace(/<br\s*\/?>/gi, ' '),
  );
}
