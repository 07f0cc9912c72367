import type { types } from '@slack/bolt';
import { lexer, type Token, type Tokens } from 'marked';
import { cutAt } from '../util/text-cut.js';
import { neutraliseBroadcasts } from './broadcasts.js';
import { closingLine, hardWrap, openFenceAtEnd, splitLines } from './fences.js';
import { MAX_TEXT_PER_MESSAGE, MessagePacker } from './message-packer.js';
import { fitsTableBlock, monospaceTable, piecesOf } from './tables.js';

/** Notification/fallback text; Slack shows the blocks, this only feeds notifications and old clients. */
const FALLBACK_TEXT_CHARS = 3_000;
/**
 * The most of one reply that is posted (about four Slack messages, tables included); the rest is cut with a
 * visible line. An agent steered into a huge answer must not flood a thread.
 */
export const MAX_REPLY_CHARS = 40_000;

export interface SlackReplyPart {
  /** Notification text: the start of the part, escaped so Slack shows it literally. */
  text: string;
  blocks: types.KnownBlock[];
  /** The part's whole Markdown, for a plain-text fallback. */
  markdown: string;
}

/**
 * Renders the agent's Markdown reply as one or more Slack messages using Slack's `markdown` block, which Slack
 * renders itself (bold, italics, links, lists, headings, code), and a `table` block for each Markdown table
 * (Slack allows one per message; a table past its limits becomes a monospace block). `maxChars` is one budget
 * for all the text of a message, Markdown and table cells together. Long replies are split between
 * paragraphs or code blocks, never inside a code block's fence pair, and never inside a table.
 */
export function formatAgentReply(
  markdown: string,
  maxChars = MAX_TEXT_PER_MESSAGE,
  maxReplyChars = MAX_REPLY_CHARS,
): SlackReplyPart[] {
  const trimmed = markdown.replace(/\r\n/g, '\n').trim();
  const body =
    trimmed === ''
      ? '_(the agent sent an empty reply)_'
      : capped(neutraliseBroadcasts(trimmed), maxReplyChars);
  const packer = new MessagePacker(maxChars);
  // As many messages as the longest reply takes: tables past them are monospace, so that an answer of many
  // small tables does not become a message each (Slack takes about one a second in a channel).
  const maxMessages = Math.ceil(maxReplyChars / maxChars);
  for (const piece of piecesOf(body)) {
    if (
      piece.kind === 'table' &&
      fitsTableBlock(piece.table) &&
      packer.takesTable(piece.table, maxMessages)
    ) {
      packer.addTable(piece.table);
      continue;
    }
    const text = piece.kind === 'table' ? monospaceTable(piece.table) : piece.markdown;
    for (const chunk of markdownPieces(text, maxChars)) packer.addMarkdown(chunk);
  }
  return packer.finish().map(({ blocks, source }) => {
    const whole = source.join('\n\n');
    return { text: plainText(fallbackText(whole)), blocks, markdown: whole };
  });
}

/** The reply cut at `maxChars` (at a line break when one is near), with a line saying so. */
function capped(markdown: string, maxChars: number): string {
  if (markdown.length <= maxChars) return markdown;
  const cut = cutAt(markdown, maxChars);
  const atLine = cut.lastIndexOf('\n');
  const kept = (atLine > maxChars * 0.9 ? cut.slice(0, atLine) : cut).trimEnd();
  // A cut inside a code block, a list item's included, leaves it open: close it where it was opened, so the
  // notice is not shown as code.
  const open = openFenceAtEnd(kept);
  const closing = open ? `\n${closingLine(open)}` : '';
  return `${kept}${closing}\n\n_:scissors: The reply was cut: it was ${markdown.length.toLocaleString('en-US')} characters long, and at most ${maxChars.toLocaleString('en-US')} are posted._`;
}

/** A plain-text message for bot notices (errors, help), escaped so Slack shows it literally. */
export function plainText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function fallbackText(chunk: string): string {
  return chunk.length <= FALLBACK_TEXT_CHARS ? chunk : `${cutAt(chunk, FALLBACK_TEXT_CHARS - 1)}…`;
}

interface Segment {
  text: string;
  /** The opening fence line (e.g. "```ts") when this segment is a fenced code block. */
  fence?: string;
}

/**
 * Markdown as its paragraphs and code blocks, in order, each of at most `maxChars`: a longer one is split
 * between lines (a code block re-opened with its fence in each piece), a longer line between words.
 */
function markdownPieces(markdown: string, maxChars: number): string[] {
  const pieces: string[] = [];
  for (const segment of segmentsOf(markdown, maxChars)) {
    if (segment.text.length <= maxChars) pieces.push(segment.text);
    else
      pieces.push(
        ...(segment.fence ? splitCodeBlock(segment, maxChars) : splitLines(segment.text, maxChars)),
      );
  }
  return pieces;
}

/**
 * Paragraphs (blank-line separated, as marked's lexer reads them: a list or quote with blank lines in it is
 * one) and whole fenced code blocks, each exactly as written. A list over `maxChars` is one segment per item,
 * so a long list is split between its items, with the code blocks in them whole where they fit.
 */
function segmentsOf(markdown: string, maxChars: number): Segment[] {
  const segments: Segment[] = [];
  let paragraph = '';
  const flushParagraph = () => {
    // Only surrounding blank lines go: leading indentation is meaning (nested lists, indented code).
    const text = paragraph.replace(/^\n+|\s+$/g, '');
    if (text !== '') segments.push({ text });
    paragraph = '';
  };
  for (const token of lexer(markdown)) {
    const code = fencedCode(token);
    if (code) {
      flushParagraph();
      // An unclosed fence is closed here, so a split never leaves Slack rendering the rest as code.
      segments.push({ text: code.closed ? code.text : `${code.text}\n${code.marker}`, fence: code.opening });
    } else if (token.type === 'space') {
      flushParagraph();
    } else if (token.type === 'list' && token.raw.trimEnd().length > maxChars) {
      flushParagraph();
      for (const item of (token as Tokens.List).items) {
        paragraph = item.raw;
        flushParagraph();
      }
    } else {
      paragraph += token.raw;
    }
  }
  flushParagraph();
  return segments;
}

/** A fenced code block as written: its opening line, its fence marker, and whether a fence closes it. */
interface FencedCode {
  text: string;
  opening: string;
  marker: string;
  closed: boolean;
}

/** The token as a fenced code block, or undefined when it is something else (indented code included). */
function fencedCode(token: Token): FencedCode | undefined {
  if (token.type !== 'code' || (token as Tokens.Code).codeBlockStyle === 'indented') return undefined;
  const text = token.raw.replace(/\s+$/, '');
  const lines = text.split('\n');
  const opening = lines[0]?.trim() ?? '';
  const marker = /^(`{3,}|~{3,})/.exec(opening)?.[1] ?? '```';
  const last = lines.length > 1 ? (lines.at(-1)?.trim() ?? '') : '';
  const closed = last.startsWith(marker) && last.replace(/[`~]/g, '') === '';
  return { text, opening, marker, closed };
}

function splitCodeBlock(segment: Segment, maxChars: number): string[] {
  const fenceOpen = segment.fence ?? '```';
  const marker = /^(`{3,}|~{3,})/.exec(fenceOpen)?.[1] ?? '```';
  const lines = segment.text.split('\n').slice(1, -1);
  const room = maxChars - fenceOpen.length - marker.length - 2;
  const parts: string[] = [];
  let current: string[] = [];
  let size = 0;
  for (const rawLine of lines) {
    for (const line of hardWrap(rawLine, room)) {
      if (size + line.length + 1 > room && current.length > 0) {
        parts.push([fenceOpen, ...current, marker].join('\n'));
        current = [];
        size = 0;
      }
      current.push(line);
      size += line.length + 1;
    }
  }
  if (current.length > 0) parts.push([fenceOpen, ...current, marker].join('\n'));
  return parts;
}
