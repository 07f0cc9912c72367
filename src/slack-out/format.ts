import type { types } from '@slack/bolt';
import { neutraliseBroadcasts } from './broadcasts.js';
import { fitsTableBlock, monospaceTable, piecesOf, tableBlock } from './tables.js';

/**
 * Slack rejects a message whose markdown blocks add up to more than 12,000 characters; stay below
 * with room for the fence lines that splitting a code block adds.
 */
export const MAX_MARKDOWN_PER_MESSAGE = 11_500;
/** Notification/fallback text; Slack shows the blocks, this only feeds notifications and old clients. */
const FALLBACK_TEXT_CHARS = 3_000;
/**
 * The most of one reply that is posted (about three Slack messages); the rest is cut with a visible line.
 * An agent steered into a huge answer must not flood a thread.
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
 * (Slack allows one per message; a table past its limits becomes a monospace block). Long replies are split
 * between paragraphs or code blocks, never inside a code block's fence pair.
 */
export function formatAgentReply(
  markdown: string,
  maxChars = MAX_MARKDOWN_PER_MESSAGE,
  maxReplyChars = MAX_REPLY_CHARS,
): SlackReplyPart[] {
  const trimmed = markdown.replace(/\r\n/g, '\n').trim();
  const body =
    trimmed === ''
      ? '_(the agent sent an empty reply)_'
      : capped(neutraliseBroadcasts(trimmed), maxReplyChars);
  const parts: SlackReplyPart[] = [];
  let blocks: types.KnownBlock[] = [];
  let source: string[] = [];
  let markdownChars = 0;
  let hasTable = false;
  const flush = () => {
    if (blocks.length === 0) return;
    const whole = source.join('\n\n');
    parts.push({ text: plainText(fallbackText(whole)), blocks, markdown: whole });
    blocks = [];
    source = [];
    markdownChars = 0;
    hasTable = false;
  };
  for (const piece of piecesOf(body)) {
    if (piece.kind === 'table' && fitsTableBlock(piece.table)) {
      if (hasTable) flush();
      blocks.push(tableBlock(piece.table));
      source.push(piece.table.source);
      hasTable = true;
      continue;
    }
    const text = piece.kind === 'table' ? monospaceTable(piece.table) : piece.markdown;
    for (const chunk of splitMarkdown(text, maxChars)) {
      if (markdownChars > 0 && markdownChars + chunk.length + 2 > maxChars) flush();
      const last = blocks.at(-1);
      if (last?.type === 'markdown') last.text = `${last.text}\n\n${chunk}`;
      else blocks.push({ type: 'markdown', text: chunk });
      markdownChars += chunk.length + 2;
      source.push(chunk);
    }
  }
  flush();
  return parts;
}

/** The reply cut at `maxChars` (at a line break when one is near), with a line saying so. */
function capped(markdown: string, maxChars: number): string {
  if (markdown.length <= maxChars) return markdown;
  const cut = markdown.slice(0, maxChars);
  const atLine = cut.lastIndexOf('\n');
  const kept = (atLine > maxChars * 0.9 ? cut.slice(0, atLine) : cut).trimEnd();
  // A cut inside a code block leaves it open; close it so the notice is not shown as code.
  const fences = kept.match(FENCE_LINE)?.length ?? 0;
  const openFence = fences % 2 === 1 ? `\n${FENCE}` : '';
  return `${kept}${openFence}\n\n_:scissors: The reply was cut: it was ${markdown.length.toLocaleString('en-US')} characters long, and at most ${maxChars.toLocaleString('en-US')} are posted._`;
}

const FENCE = '`'.repeat(3);
const FENCE_LINE = /^\s*(?:`{3,}|~{3,})/gm;

/** A plain-text message for bot notices (errors, help), escaped so Slack shows it literally. */
export function plainText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function fallbackText(chunk: string): string {
  return chunk.length <= FALLBACK_TEXT_CHARS ? chunk : `${chunk.slice(0, FALLBACK_TEXT_CHARS - 1)}…`;
}

interface Segment {
  text: string;
  /** The opening fence line (e.g. "```ts") when this segment is a fenced code block. */
  fence?: string;
}

export function splitMarkdown(markdown: string, maxChars: number): string[] {
  const pieces: string[] = [];
  for (const segment of segmentsOf(markdown)) {
    if (segment.text.length <= maxChars) pieces.push(segment.text);
    else
      pieces.push(
        ...(segment.fence ? splitCodeBlock(segment, maxChars) : splitProse(segment.text, maxChars)),
      );
  }
  const chunks: string[] = [];
  let current = '';
  for (const piece of pieces) {
    const joined = current === '' ? piece : `${current}\n\n${piece}`;
    if (joined.length <= maxChars) {
      current = joined;
    } else {
      if (current !== '') chunks.push(current);
      current = piece;
    }
  }
  if (current !== '') chunks.push(current);
  return chunks;
}

/** Paragraphs (blank-line separated) and whole fenced code blocks. */
function segmentsOf(markdown: string): Segment[] {
  const segments: Segment[] = [];
  const lines = markdown.split('\n');
  let paragraph: string[] = [];
  const flushParagraph = () => {
    // Only surrounding blank lines go: leading indentation is meaning (nested lists, indented code).
    const text = paragraph.join('\n').replace(/^\n+|\s+$/g, '');
    if (text !== '') segments.push({ text });
    paragraph = [];
  };
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? '';
    const open = /^\s*(`{3,}|~{3,})/.exec(line);
    if (open) {
      flushParagraph();
      const marker = open[1] ?? '```';
      const block = [line];
      let closed = false;
      while (++index < lines.length) {
        const inner = lines[index] ?? '';
        block.push(inner);
        if (inner.trim().startsWith(marker) && inner.trim().replace(/[`~]/g, '') === '') {
          closed = true;
          break;
        }
      }
      // An unclosed fence is closed here, so a split never leaves Slack rendering the rest as code.
      if (!closed) block.push(marker);
      segments.push({ text: block.join('\n'), fence: line.trim() });
    } else if (line.trim() === '') {
      flushParagraph();
    } else {
      paragraph.push(line);
    }
  }
  flushParagraph();
  return segments;
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

function splitProse(text: string, maxChars: number): string[] {
  const parts: string[] = [];
  let current = '';
  for (const line of text.split('\n').flatMap((line) => hardWrap(line, maxChars))) {
    const joined = current === '' ? line : `${current}\n${line}`;
    if (joined.length <= maxChars) current = joined;
    else {
      parts.push(current);
      current = line;
    }
  }
  if (current !== '') parts.push(current);
  return parts;
}

/** Splits an over-long line at spaces where possible, else at the limit. */
function hardWrap(line: string, maxChars: number): string[] {
  if (line.length <= maxChars) return [line];
  const out: string[] = [];
  let rest = line;
  while (rest.length > maxChars) {
    const space = rest.lastIndexOf(' ', maxChars);
    const cut = space > maxChars / 2 ? space : maxChars;
    out.push(rest.slice(0, cut));
    rest = rest.slice(cut).replace(/^ /, '');
  }
  if (rest !== '') out.push(rest);
  return out;
}
