import { WebClient } from '@slack/web-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentSlackLogger } from '../helpers/slack-logger.js';
import { refusal } from '../helpers/slack-refusal.js';
import { FakeSlack } from './slack.js';

/**
 * The message-wide rules of FakeSlack's block checks: one text budget for all blocks of a message, table
 * column settings, and no empty `blocks` array. Each test has its control: the same message just within the
 * rule is taken.
 */
describe('FakeSlack message-wide block rules', () => {
  let slack: FakeSlack;
  let client: WebClient;

  beforeEach(async () => {
    slack = await FakeSlack.start({ channels: { C1: { name: 'general' } } });
    client = new WebClient(slack.botToken, {
      slackApiUrl: slack.apiUrl,
      logger: silentSlackLogger(),
      retryConfig: { retries: 0 },
    });
  });

  afterEach(async () => {
    await slack.stop();
  });

  const post = (blocks: unknown[], attachments?: unknown[]) =>
    client.chat.postMessage({
      channel: 'C1',
      text: 'fallback',
      blocks: blocks as never,
      ...(attachments ? { attachments: attachments as never } : {}),
    });

  const markdown = (chars: number, fill = 'm') => ({ type: 'markdown', text: fill.repeat(chars) });
  const table = (cellChars: number, extra: Record<string, unknown> = {}) => ({
    type: 'table',
    rows: [
      [
        { type: 'raw_text', text: 'h' },
        { type: 'raw_text', text: 'x'.repeat(cellChars - 1) },
      ],
    ],
    ...extra,
  });

  /**
   * `total` characters of shown text spread over every kind of text a block carries: section text and fields,
   * header, context elements, a button label, rich_text, a raw_number cell. Plus text nobody reads (values,
   * urls, ids), which must not count.
   */
  function everyKindOfText(total: number): unknown[] {
    const fixed = 1_000 + 2 * 500 + 100 + 2 * 200 + 5 + 1_000 + 3;
    return [
      { type: 'header', text: { type: 'plain_text', text: 'h'.repeat(100) } },
      {
        type: 'section',
        block_id: 'b'.repeat(255),
        text: { type: 'mrkdwn', text: 's'.repeat(1_000) },
        fields: [
          { type: 'mrkdwn', text: 'f'.repeat(500) },
          { type: 'plain_text', text: 'g'.repeat(500) },
        ],
      },
      {
        type: 'context',
        elements: [
          { type: 'mrkdwn', text: 'c'.repeat(200) },
          { type: 'plain_text', text: 'd'.repeat(200) },
        ],
      },
      {
        type: 'actions',
        elements: [
          {
            type: 'button',
            action_id: 'a'.repeat(255),
            text: { type: 'plain_text', text: 'Press' },
            value: 'v'.repeat(2_000),
            url: `https://example.com/${'u'.repeat(2_000)}`,
          },
        ],
      },
      {
        type: 'rich_text',
        elements: [
          {
            type: 'rich_text_section',
            elements: [
              { type: 'text', text: 'r'.repeat(1_000) },
              { type: 'link', url: `https://example.com/${'l'.repeat(500)}` },
            ],
          },
        ],
      },
      {
        type: 'table',
        rows: [[{ type: 'raw_number', value: 123_456_789, text: '1.2' }]],
        column_settings: [{ align: 'right' }],
      },
      markdown(total - fixed),
    ];
  }

  it('takes a message whose blocks hold 12,000 characters of text in all, of every kind', async () => {
    await expect(post(everyKindOfText(12_000))).resolves.toMatchObject({ ok: true });
  });

  it('refuses 12,001 characters of text across block types with msg_blocks_too_long, saying nothing more', async () => {
    const refused = await refusal(post(everyKindOfText(12_001)));
    expect(refused).toEqual({ error: 'msg_blocks_too_long', messages: undefined });
    expect(slack.channelMessages('C1')).toEqual([]);
  });

  it('charges a table and the Markdown around it to one budget, each within its own limit', async () => {
    await expect(post([markdown(6_000), table(6_000)])).resolves.toMatchObject({ ok: true });
    expect((await refusal(post([markdown(6_000), table(6_001)]))).error).toBe('msg_blocks_too_long');
    expect((await refusal(post([markdown(6_001), table(6_000)]))).error).toBe('msg_blocks_too_long');
    expect((await refusal(post([markdown(6_000), markdown(6_001)]))).error).toBe('msg_blocks_too_long');
    expect(slack.channelMessages('C1')).toHaveLength(1);
  });

  it('charges the blocks of attachments to the same budget', async () => {
    await expect(post([markdown(6_000)], [{ blocks: [markdown(6_000)] }])).resolves.toMatchObject({
      ok: true,
    });
    const refused = await refusal(post([markdown(6_000)], [{ blocks: [markdown(6_001)] }]));
    expect(refused.error).toBe('msg_blocks_too_long');
  });

  it('applies the budget to chat.update and chat.postEphemeral too', async () => {
    const posted = await post([markdown(10)]);
    const update = client.chat.update({
      channel: 'C1',
      ts: posted.ts ?? '',
      text: 'x',
      blocks: [markdown(12_001)] as never,
    });
    // chat.update and chat.postEphemeral document msg_too_long, not msg_blocks_too_long.
    expect((await refusal(update)).error).toBe('msg_too_long');
    expect(slack.channelMessages('C1')[0]?.blocks).toEqual([markdown(10)]);
    const ephemeral = client.chat.postEphemeral({
      channel: 'C1',
      user: 'U0ALICE',
      text: 'x',
      blocks: [markdown(12_001)] as never,
    });
    expect((await refusal(ephemeral)).error).toBe('msg_too_long');
    expect(slack.ephemeralMessages).toEqual([]);
  });

  it('takes null to skip a table column, and refuses a settings object that sets nothing', async () => {
    const skipped = table(10, { column_settings: [null, { align: 'right' }] });
    await post([skipped]);
    expect(slack.channelMessages('C1')[0]?.blocks).toEqual([skipped]);

    const refused = await refusal(post([table(10, { column_settings: [{}, { align: 'right' }] })]));
    expect(refused.error).toBe('invalid_blocks');
    expect(refused.messages).toEqual([expect.stringContaining('/blocks/0/column_settings/0]')]);
    // A setting spelled out is a setting.
    await expect(post([table(10, { column_settings: [{ is_wrapped: false }] })])).resolves.toMatchObject({
      ok: true,
    });
  });

  it("holds a notice's section and buttons to the limits @slack/types declares", async () => {
    const section = (chars: number) => ({
      type: 'section',
      text: { type: 'mrkdwn', text: 's'.repeat(chars) },
    });
    const button = (label: number, value: number) => ({
      type: 'actions',
      elements: [
        {
          type: 'button',
          action_id: 'send_again',
          text: { type: 'plain_text', text: 'b'.repeat(label) },
          value: 'v'.repeat(value),
        },
      ],
    });
    await expect(post([section(3_000), button(75, 2_000)])).resolves.toMatchObject({ ok: true });

    const longSection = await refusal(post([section(3_001)]));
    expect(longSection.error).toBe('invalid_blocks');
    expect(longSection.messages).toEqual([expect.stringContaining('[json-pointer:/blocks/0/text/text]')]);
    const longLabel = await refusal(post([button(76, 10)]));
    expect(longLabel.messages).toEqual([
      expect.stringContaining('[json-pointer:/blocks/0/elements/0/text/text]'),
    ]);
    const longValue = await refusal(post([button(10, 2_001)]));
    expect(longValue.messages).toEqual([
      expect.stringContaining('[json-pointer:/blocks/0/elements/0/value]'),
    ]);
    expect(slack.channelMessages('C1')).toHaveLength(1);
  });

  it('refuses an empty blocks array on every method that takes blocks, and a message without it is fine', async () => {
    const refused = await refusal(client.chat.postMessage({ channel: 'C1', text: 'words', blocks: [] }));
    expect(refused.error).toBe('invalid_blocks');
    expect(refused.messages).toEqual([expect.stringContaining('[json-pointer:/blocks]')]);
    expect(slack.channelMessages('C1')).toEqual([]);

    const posted = await client.chat.postMessage({ channel: 'C1', text: 'words' });
    expect(slack.channelMessages('C1').map((m) => m.text)).toEqual(['words']);

    const update = client.chat.update({ channel: 'C1', ts: posted.ts ?? '', text: 'changed', blocks: [] });
    expect((await refusal(update)).error).toBe('invalid_blocks');
    expect(slack.channelMessages('C1').map((m) => m.text)).toEqual(['words']);

    const ephemeral = client.chat.postEphemeral({ channel: 'C1', user: 'U0ALICE', text: 'psst', blocks: [] });
    expect((await refusal(ephemeral)).error).toBe('invalid_blocks');
    expect(slack.ephemeralMessages).toEqual([]);
  });
});
