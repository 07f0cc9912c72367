/**
 * Block Kit checks FakeSlack applies to posted messages, limited to what Slack documents for the blocks the
 * bot uses (table, context_actions with feedback_buttons / icon_button, markdown, and the section, actions
 * and button of its notices). Other block types pass unchecked.
 *
 * Sources: https://docs.slack.dev/reference/block-kit/blocks/table-block,
 * https://docs.slack.dev/reference/block-kit/blocks/context-actions-block,
 * https://docs.slack.dev/reference/block-kit/block-elements/feedback-buttons-element,
 * https://docs.slack.dev/reference/block-kit/blocks/markdown-block; the section and button limits as
 * @slack/types declares them (SectionBlock.text, Button.text and Button.value); the error codes are those of
 * chat.postMessage (slack-ruby/slack-api-ref, docs.slack.dev/methods/chat.postMessage.json, f4837c0c).
 * The message-wide text budget is what Slack enforces rather than documents:
 * https://github.com/slackapi/bolt-js/issues/2509 and https://github.com/slackapi/bolt-js/issues/2867.
 */

/** Why Slack would refuse a message's blocks: the API error and a detail line in Slack's own format. */
export interface BlockViolation {
  error: 'invalid_blocks' | 'invalid_attachments' | 'msg_blocks_too_long';
  /**
   * As Slack puts it in `response_metadata.messages`: `[ERROR] <what> [json-pointer:<where>]`. None for
   * `msg_blocks_too_long`, which Slack answers without saying what was too long (bolt-js#2867).
   */
  message?: string;
}

const MAX_BLOCK_ID = 255;
const SECTION_TEXT_MAX = 3000;
const BUTTON_TEXT_MAX = 75;
const BUTTON_VALUE_MAX = 2000;
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
/**
 * The text of all blocks of one message together. The markdown block page states 12,000 across the markdown
 * blocks of a payload; Slack applies a budget of about that size to the text of every block type together and
 * answers `msg_blocks_too_long` (bolt-js#2509: markdown, section, header and divider blocks refused at ~13,200
 * characters in all; #2867: rich_text, section and header blocks refused with 11,341 characters of text, as
 * Slack also charges for the block containers). The fake charges 12,000 of text and nothing for containers:
 * strict on the documented figure, and a sender must keep its own margin below it for the containers.
 */
const MESSAGE_TEXT_MAX_CHARS = 12_000;
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

/**
 * Characters of what a person reads in a block: every string under a `text` key at any depth. That covers
 * markdown block text, text objects (section text and fields, header, context elements, button labels),
 * rich_text elements and table cells (raw_text, and raw_number's shown text). Ids, values, URLs and
 * settings are not shown as text and do not count.
 */
function shownChars(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + shownChars(item), 0);
  if (!isRecord(value)) return 0;
  let sum = 0;
  for (const [key, child] of Object.entries(value)) {
    if (key === 'text' && typeof child === 'string') sum += child.length;
    else sum += shownChars(child);
  }
  return sum;
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
      // `null` skips a column (it keeps the defaults), as the table block page shows. Otherwise an item is a
      // settings object that sets something: the page never shows `{}`, so the fake refuses it (a sender
      // wanting the defaults can skip the column with null or spell the default out, `align: 'left'`).
      if (setting === null) return;
      if (!isRecord(setting)) invalid('must be an object or null', settingPointer);
      if (setting.align === undefined && setting.is_wrapped === undefined) {
        invalid('a column setting must set align or is_wrapped (null skips a column)', settingPointer);
      }
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
    case 'section':
      if (block.text !== undefined) {
        if (!isRecord(block.text)) invalid('must be a text object', `${pointer}/text`);
        const text = block.text.text;
        if (typeof text !== 'string' || text.length === 0 || text.length > SECTION_TEXT_MAX) {
          invalid(`must be between 1 and ${SECTION_TEXT_MAX} characters`, `${pointer}/text/text`);
        }
      }
      return;
    case 'actions':
      if (Array.isArray(block.elements)) {
        block.elements.forEach((element, i) => {
          const elementPointer = `${pointer}/elements/${i}`;
          // feedback_buttons and icon_button live only in context_actions.
          if (isRecord(element) && (element.type === 'feedback_buttons' || element.type === 'icon_button')) {
            invalid(`${element.type} must be inside a context_actions block`, `${elementPointer}/type`);
          }
          if (isRecord(element) && element.type === 'button') {
            checkPlainText(element.text, BUTTON_TEXT_MAX, `${elementPointer}/text`);
            maxLength(element.value, BUTTON_VALUE_MAX, `${elementPointer}/value`);
            maxLength(element.action_id, MAX_ACTION_ID, `${elementPointer}/action_id`);
          }
        });
      }
      return;
    case 'markdown':
      // Its 12,000-character cumulative limit is the message-wide text budget (validateMessageBlocks).
      if (typeof block.text !== 'string') invalid('markdown block needs a text string', `${pointer}/text`);
      return;
    default:
      return;
  }
}

/**
 * Checks a message's top-level blocks and the blocks inside its attachments (tables may sit in either, and
 * the table limits and the text budget count both). Returns the first breach, or undefined when Slack would
 * accept them.
 */
export function validateMessageBlocks(blocks: unknown, attachments: unknown): BlockViolation | undefined {
  const tally: Tally = { tables: 0, tableChars: 0 };
  let shown = 0;
  try {
    if (Array.isArray(blocks)) {
      // Slack's pages do not say what an empty `blocks` array means (no blocks, or "keep the text only"), and
      // chat.update does not say it clears them: the fake refuses it, so a sender that omits the argument
      // instead works under every reading.
      if (blocks.length === 0)
        invalid('blocks must be a non-empty array (omit it for a text-only message)', '/blocks');
      for (const [i, block] of blocks.entries()) checkBlock(block, `/blocks/${i}`, tally);
      shown += shownChars(blocks);
    }
    if (Array.isArray(attachments)) {
      for (const [a, attachment] of attachments.entries()) {
        if (!isRecord(attachment) || !Array.isArray(attachment.blocks)) continue;
        for (const [i, block] of attachment.blocks.entries()) {
          checkBlock(block, `/attachments/${a}/blocks/${i}`, tally);
        }
        shown += shownChars(attachment.blocks);
      }
    }
    // After the per-block checks: a block Slack refuses on its own is named first, as `invalid_blocks`.
    if (shown > MESSAGE_TEXT_MAX_CHARS) return { error: 'msg_blocks_too_long' };
    return undefined;
  } catch (error) {
    if (error instanceof Violation) return { error: error.error, message: error.message };
    throw error;
  }
}
