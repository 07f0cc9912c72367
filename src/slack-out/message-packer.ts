import type { types } from '@slack/bolt';
import { type MarkdownTable, tableBlock, tableChars } from './tables.js';

/**
 * The text one message may carry, across all its blocks: Markdown, table cells and the feedback buttons added
 * under the last message. Slack refuses a message whose blocks hold more than about 12,000 characters of text
 * in all, whatever their types (`msg_blocks_too_long`; the markdown block page states 12,000, and Slack also
 * charges for the block containers: slackapi/bolt-js#2509, #2867, where 11,341 characters were refused). The
 * 1,000 left over is for those containers and the feedback buttons.
 */
export const MAX_TEXT_PER_MESSAGE = 11_000;

/** One Slack message of a reply: its blocks, and the Markdown they came from. */
export interface PackedMessage {
  blocks: types.KnownBlock[];
  /** The pieces of the agent's Markdown in this message, in order. */
  source: string[];
}

/**
 * Fills messages in reply order under ONE text budget for all their blocks, and at most one table each
 * (Slack's rule). Consecutive Markdown pieces share a markdown block; a piece or table that does not fit what
 * is left starts the next message, so a table stays a table block and prose stays Markdown.
 */
export class MessagePacker {
  private readonly messages: PackedMessage[] = [];
  private current: PackedMessage = { blocks: [], source: [] };
  private used = 0;
  private hasTable = false;

  constructor(private readonly maxChars = MAX_TEXT_PER_MESSAGE) {}

  /**
   * Whether a table can be a table block here: within a message's budget on its own, and with the reply still
   * at most `maxMessages` messages, the table in the message being filled or in one started for it (Slack
   * takes one table per message).
   */
  takesTable(table: MarkdownTable, maxMessages: number): boolean {
    const chars = tableChars(table);
    if (chars > this.maxChars) return false;
    if (!this.tableStartsMessage(chars)) return true;
    // The message being filled, then the table's own.
    return this.messages.length + 2 <= maxMessages;
  }

  addTable(table: MarkdownTable): void {
    const chars = tableChars(table);
    if (this.tableStartsMessage(chars)) this.flush();
    this.current.blocks.push(tableBlock(table));
    this.current.source.push(table.source);
    this.used += chars;
    this.hasTable = true;
  }

  /** A piece of Markdown of at most the budget (split before, between paragraphs or code blocks). */
  addMarkdown(piece: string): void {
    const joined = () => this.current.blocks.at(-1)?.type === 'markdown';
    // Pieces in one markdown block are joined by a blank line, which counts as text too.
    if (this.used > 0 && this.used + piece.length + (joined() ? 2 : 0) > this.maxChars) this.flush();
    const last = this.current.blocks.at(-1);
    if (last?.type === 'markdown') {
      last.text = `${last.text}\n\n${piece}`;
      this.used += piece.length + 2;
    } else {
      this.current.blocks.push({ type: 'markdown', text: piece });
      this.used += piece.length;
    }
    this.current.source.push(piece);
  }

  /** The messages, in order; never one without blocks. */
  finish(): PackedMessage[] {
    this.flush();
    return this.messages;
  }

  private tableStartsMessage(chars: number): boolean {
    return this.hasTable || this.used + chars > this.maxChars;
  }

  private flush(): void {
    if (this.current.blocks.length > 0) this.messages.push(this.current);
    this.current = { blocks: [], source: [] };
    this.used = 0;
    this.hasTable = false;
  }
}
