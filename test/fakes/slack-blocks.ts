/**
 * Block Kit checks FakeSlack applies to posted messages, limited to what Slack documents for the blocks the
 * bot uses (table, context_actions with feedback_buttons / icon_button, markdown). Other block types pass
 * unchecked, as before.
 *
 * Sources: https://docs.slack.dev/reference/block-kit/blocks/table-block,
 * https://docs.slack.dev/reference/block-kit/blocks/context-actions-block,
 * https://docs.slack.dev/reference/block-kit/block-elements/feedback-buttons-element,
 * https://docs.slack.dev/reference/block-kit/blocks/markdown-block.
 */

/** Why Slack would refuse a message's blocks: the API error and a detail line in Slack's own format. */
export interface BlockViolation {
  error: 'invalid_blocks' | 'invalid_attachments';
  /** As Slack puts it in `response_metadata.messages`: `[ERROR] <what> [json-pointer:<where>]`. */
  message: string;
}

const MAX_BLOCK_ID = 255;
const MAX_ACTION_ID = 255;
const TABLE_MAX_ROWS = 100;
const TABLE_MAX_CELLS = 20;
const TABLE_MAX_COLUMN_SETTINGS = 20;
/** Per table, and across every table cell of one message. */
const TABLE_MAX_CHARS = 10_000;
const CONTEXT_ACTIONS_MAX_ELEMENTS = 5;
const FEEDBACK_TEXT_MAX = 75;
const FEEDBACK_VALUE_MAX = 2000;
const ACCESSIBILITY_LABEL_MAX = 75;
/** Cumulative over all markdown blocks of one payload. */
const MARKDOWN_MAX_CHARS = 12_000;
const COLUMN_ALIGNMENTS = new Set(['left', 'center', 'right']);

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

class Violation extends Error {
  constructor(
    readonly error: BlockViolation['error'],
    what: string,
    pointer: string,
  ) {
    super(`[ERROR] ${what} [json-pointer:${pointer}]`);
  }
}

function invalid(what: string, pointer: string): never {
  throw new Violation('invalid_blocks', what, pointer);
}

function maxLength(value: unknown, max: number, pointer: string): void {
  if (value !== undefined && (typeof value !== 'string' || value.length > max)) {
    invalid(`must be a string of at most ${max} characters`, pointer);
  }
}

/** Characters a table cell contributes to the 10,000 limit: every text it shows. */
function cellChars(cell: unknown): number {
  if (typeof cell === 'string') return cell.length;
  if (Array.isArray(cell)) return cell.reduce((sum: number, item) => sum + cellChars(item), 0);
  if (!isRecord(cell)) return 0;
  let sum = 0;
  for (const [key, value] of Object.entries(cell)) {
    if (key === 'text' || key === 'elements') sum += cellChars(value);
  }
  return sum;
}

function checkPlainText(text: unknown, max: number, pointer: string): void {
  if (!isRecord(text) || text.type !== 'plain_text') invalid('must be a plain_text object', pointer);
  if (typeof text.text !== 'string' || text.text.length === 0 || text.text.length > max) {
    invalid(`must be between 1 and ${max} characters`, `${pointer}/text`);
  }
}

function checkTableCell(cell: unknown, pointer: string): void {
  if (!isRecord(cell)) invalid('must be a table cell object', pointer);
  switch (cell.type) {
    case 'raw_text':
      if (typeof cell.text !== 'string') invalid('raw_text cell needs a text string', `${pointer}/text`);
      return;
    case 'raw_number':
      if (typeof cell.value !== 'number' || !Number.isFinite(cell.value)) {
        invalid('raw_number cell needs a numeric value', `${pointer}/value`);
      }
      if (typeof cell.text !== 'string' || cell.text.length === 0) {
        invalid('raw_number cell needs a text of at least 1 character', `${pointer}/text`);
      }
      return;
    case 'rich_text':
      if (!Array.isArray(cell.elements)) invalid('rich_text cell needs elements', `${pointer}/elements`);
      return;
    default:
      invalid('cell type must be raw_text, raw_number or rich_text', `${pointer}/type`);
  }
}

/** Returns the characters of the table's cells, for the per-message total. */
function checkTable(block: Json, pointer: string): number {
  const rows = block.rows;
  if (!Array.isArray(rows) || rows.length === 0) invalid('rows must be a non-empty array', `${pointer}/rows`);
  if (rows.length > TABLE_MAX_ROWS) invalid(`must be at most ${TABLE_MAX_ROWS} items`, `${pointer}/rows`);
  let chars = 0;
  rows.forEach((row, r) => {
    const rowPointer = `${pointer}/rows/${r}`;
    if (!Array.isArray(row) || row.length === 0)
      invalid('a row must be a non-empty array of cells', rowPointer);
    if (row.length > TABLE_MAX_CELLS) invalid(`must be at most ${TABLE_MAX_CELLS} items`, rowPointer);
    row.forEach((cell, c) => {
      checkTableCell(cell, `${rowPointer}/${c}`);
      chars += cellChars(cell);
    });
  });
  if (chars > TABLE_MAX_CHARS) {
    invalid(`table cells must total at most ${TABLE_MAX_CHARS} characters`, `${pointer}/rows`);
  }
  const settings = block.column_settings;
  if (settings !== undefined) {
    if (!Array.isArray(settings)) invalid('must be an array', `${pointer}/column_settings`);
    if (settings.length > TABLE_MAX_COLUMN_SETTINGS) {
      invalid(`must be at most ${TABLE_MAX_COLUMN_SETTINGS} items`, `${pointer}/column_settings`);
    }
    settings.forEach((setting, i) => {
      const settingPointer = `${pointer}/column_settings/${i}`;
      // Each item is a settings object (all fields optional, so `{}` keeps a column's defaults); the
      // documented schema has no other kind of item.
      if (!isRecord(setting)) invalid('must be an object', settingPointer);
      if (setting.align !== undefined && !COLUMN_ALIGNMENTS.has(String(setting.align))) {
        invalid('align must be left, center or right', `${settingPointer}/align`);
      }
      if (setting.is_wrapped !== undefined && typeof setting.is_wrapped !== 'boolean') {
        invalid('is_wrapped must be a boolean', `${settingPointer}/is_wrapped`);
      }
    });
  }
  return chars;
}

function checkFeedbackButton(button: unknown, pointer: string): void {
  if (!isRecord(button)) invalid('must be a button object', pointer);
  checkPlainText(button.text, FEEDBACK_TEXT_MAX, `${pointer}/text`);
  if (
    typeof button.value !== 'string' ||
    button.value.length === 0 ||
    button.value.length > FEEDBACK_VALUE_MAX
  ) {
    invalid(`value must be between 1 and ${FEEDBACK_VALUE_MAX} characters`, `${pointer}/value`);
  }
  maxLength(button.accessibility_label, ACCESSIBILITY_LABEL_MAX, `${pointer}/accessibility_label`);
}

function checkContextActions(block: Json, pointer: string): void {
  const elements = block.elements;
  if (!Array.isArray(elements) || elements.length === 0) {
    invalid('elements must be a non-empty array', `${pointer}/elements`);
  }
  if (elements.length > CONTEXT_ACTIONS_MAX_ELEMENTS) {
    invalid(`must be at most ${CONTEXT_ACTIONS_MAX_ELEMENTS} items`, `${pointer}/elements`);
  }
  elements.forEach((element, i) => {
    const elementPointer = `${pointer}/elements/${i}`;
    if (!isRecord(element)) invalid('must be an element object', elementPointer);
    maxLength(element.action_id, MAX_ACTION_ID, `${elementPointer}/action_id`);
    if (element.type === 'feedback_buttons') {
      checkFeedbackButton(element.positive_button, `${elementPointer}/positive_button`);
      checkFeedbackButton(element.negative_button, `${elementPointer}/negative_button`);
    } else if (element.type === 'icon_button') {
      if (typeof element.icon !== 'string' || element.icon === '')
        invalid('icon is required', `${elementPointer}/icon`);
      checkPlainText(element.text, FEEDBACK_TEXT_MAX, `${elementPointer}/text`);
      maxLength(
        element.accessibility_label,
        ACCESSIBILITY_LABEL_MAX,
        `${elementPointer}/accessibility_label`,
      );
    } else {
      invalid('context_actions accepts only feedback_buttons and icon_button', `${elementPointer}/type`);
    }
  });
}

interface Tally {
  tables: number;
  tableChars: number;
  markdownChars: number;
}

function checkBlock(block: unknown, pointer: string, tally: Tally): void {
  if (!isRecord(block) || typeof block.type !== 'string') invalid('a block needs a type', pointer);
  maxLength(block.block_id, MAX_BLOCK_ID, `${pointer}/block_id`);
  switch (block.type) {
    case 'table':
      tally.tables += 1;
      // The documented one-table rule; Slack reports it on attachments even for top-level blocks.
      if (tally.tables > 1) throw new Violation('invalid_attachments', 'only_one_table_allowed', pointer);
      tally.tableChars += checkTable(block, pointer);
      if (tally.tableChars > TABLE_MAX_CHARS) {
        invalid(`table cells of a message must total at most ${TABLE_MAX_CHARS} characters`, pointer);
      }
      return;
    case 'context_actions':
      checkContextActions(block, pointer);
      return;
    case 'actions':
      // feedback_buttons and icon_button live only in context_actions.
      if (Array.isArray(block.elements)) {
        block.elements.forEach((element, i) => {
          if (isRecord(element) && (element.type === 'feedback_buttons' || element.type === 'icon_button')) {
            invalid(
              `${element.type} must be inside a context_actions block`,
              `${pointer}/elements/${i}/type`,
            );
          }
        });
      }
      return;
    case 'markdown':
      if (typeof block.text !== 'string') invalid('markdown block needs a text string', `${pointer}/text`);
      tally.markdownChars += block.text.length;
      if (tally.markdownChars > MARKDOWN_MAX_CHARS) {
        invalid(
          `markdown blocks of a payload must total at most ${MARKDOWN_MAX_CHARS} characters`,
          `${pointer}/text`,
        );
      }
      return;
    default:
      return;
  }
}

/**
 * Checks a message's top-level blocks and the blocks inside its attachments (tables may sit in either, and
 * the table limits count both). Returns the first breach, or undefined when Slack would accept them.
 */
export function validateMessageBlocks(blocks: unknown, attachments: unknown): BlockViolation | undefined {
  const tally: Tally = { tables: 0, tableChars: 0, markdownChars: 0 };
  try {
    if (Array.isArray(blocks)) {
      for (const [i, block] of blocks.entries()) checkBlock(block, `/blocks/${i}`, tally);
    }
    if (Array.isArray(attachments)) {
      for (const [a, attachment] of attachments.entries()) {
        if (!isRecord(attachment) || !Array.isArray(attachment.blocks)) continue;
        for (const [i, block] of attachment.blocks.entries()) {
          checkBlock(block, `/attachments/${a}/blocks/${i}`, tally);
        }
      }
    }
    return undefined;
  } catch (error) {
    if (error instanceof Violation) return { error: error.error, message: error.message };
    throw error;
  }
}
