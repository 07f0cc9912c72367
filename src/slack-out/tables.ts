import type { types } from '@slack/bolt';
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

const FENCE = /^\s*(`{3,}|~{3,})/;
const DELIMITER_CELL = /^\s*:?-{1,}:?\s*$/;

/** Splits a reply into text and tables, in order; code blocks are text (a table in one stays code). */
export function piecesOf(markdown: string): ReplyPiece[] {
  const lines = markdown.split('\n');
  const pieces: ReplyPiece[] = [];
  let text: string[] = [];
  const flushText = () => {
    const joined = text.join('\n').replace(/^\n+|\s+$/g, '');
    if (joined !== '') pieces.push({ kind: 'text', markdown: joined });
    text = [];
  };
  let fence: string | undefined;
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? '';
    const marker = FENCE.exec(line)?.[1];
    if (fence) {
      if (marker && line.trim().startsWith(fence) && line.trim().replace(/[`~]/g, '') === '')
        fence = undefined;
      text.push(line);
      continue;
    }
    if (marker) {
      fence = marker;
      text.push(line);
      continue;
    }
    const header = isPipeRow(line) ? cellsOf(line) : undefined;
    const delimiter = lines[index + 1];
    if (header && delimiter !== undefined && isDelimiterRow(delimiter, header.length)) {
      const rows = [header];
      const sourceLines = [line, delimiter];
      index += 2;
      while (index < lines.length && isPipeRow(lines[index] ?? '')) {
        sourceLines.push(lines[index] ?? '');
        rows.push(cellsOf(lines[index] ?? ''));
        index++;
      }
      index--;
      flushText();
      const columns = header.length;
      pieces.push({
        kind: 'table',
        table: {
          rows: rows.map((row) => Array.from({ length: columns }, (_, column) => row[column] ?? '')),
          align: cellsOf(delimiter).map(alignmentOf),
          source: sourceLines.join('\n'),
        },
      });
      continue;
    }
    text.push(line);
  }
  flushText();
  return pieces;
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

function isPipeRow(line: string): boolean {
  const trimmed = line.trim();
  return trimmed.includes('|') && !FENCE.test(line) && trimmed !== '|';
}

function isDelimiterRow(line: string, columns: number): boolean {
  if (!isPipeRow(line)) return false;
  const cells = cellsOf(line);
  return cells.length === columns && cells.every((cell) => DELIMITER_CELL.test(cell));
}

/** A row's cells: outer pipes dropped, split on pipes not escaped with a backslash. */
function cellsOf(line: string): string[] {
  let trimmed = line.trim();
  if (trimmed.startsWith('|')) trimmed = trimmed.slice(1);
  if (trimmed.endsWith('|') && !trimmed.endsWith('\\|')) trimmed = trimmed.slice(0, -1);
  return trimmed.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, '|'));
}

function alignmentOf(delimiter: string): 'left' | 'center' | 'right' | undefined {
  const cell = delimiter.trim();
  if (cell.startsWith(':') && cell.endsWith(':')) return 'center';
  if (cell.endsWith(':')) return 'right';
  if (cell.startsWith(':')) return 'left';
  return undefined;
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
