import { describe, expect, it } from 'vitest';
import { botPerSuite } from '../helpers/bot-per-suite.js';
import {
  appMentionEvent,
  eventEnvelope,
  messageShortcutPayload,
  nextTs,
  postSignedEvent,
  postSignedForm,
  postSignedInteraction,
  slashCommandFields,
} from '../helpers/slack-events.js';
import { SIGNING_SECRET } from '../helpers/stack.js';

/**
 * Every request Slack (or anyone) sends to /slack/events gets an HTTP answer well within Slack's 3 s: 200 when it
 * is acknowledged and ignored, 4xx when it is refused. A request left unanswered would be retried by Slack and,
 * on a public port, hold a connection until the client gives up.
 */
describe('every request to /slack/events is answered', () => {
  const stack = botPerSuite();

  const within3s = (result: { status: number; ms: number }) => {
    expect(result.ms).toBeLessThan(3_000);
    return result.status;
  };

  it('an event_callback without an event: acknowledged and ignored', async () => {
    const { event: _event, ...envelope } = eventEnvelope({ type: 'app_mention' });
    expect(
      within3s(
        await postSignedEvent(stack.bot.eventsUrl, SIGNING_SECRET, envelope, { via: stack.bot.slack }),
      ),
    ).toBe(200);
  });

  it('an envelope of an unknown type: acknowledged and ignored', async () => {
    const body = { type: 'something_new', team_id: 'T0TEAM', token: 'x' };
    expect(
      within3s(await postSignedEvent(stack.bot.eventsUrl, SIGNING_SECRET, body, { via: stack.bot.slack })),
    ).toBe(200);
  });

  it('a form without a payload: acknowledged and ignored', async () => {
    const result = await postSignedForm(stack.bot.eventsUrl, SIGNING_SECRET, {
      team_id: 'T0TEAM',
      text: 'hello',
    });
    expect(within3s(result)).toBe(200);
  });

  it('a click on a button nobody handles: acknowledged and ignored', async () => {
    const click = {
      type: 'block_actions',
      user: { id: 'U0ALICE', team_id: 'T0TEAM' },
      team: { id: 'T0TEAM' },
      channel: { id: 'C0REQ' },
      container: { type: 'message', message_ts: nextTs(), channel_id: 'C0REQ' },
      actions: [{ type: 'button', action_id: 'not_ours', block_id: 'b', value: 'x', action_ts: nextTs() }],
      response_url: stack.slack.responseUrl('unhandled-click'),
      trigger_id: 'trigger',
    };
    expect(within3s(await postSignedInteraction(stack.bot.eventsUrl, SIGNING_SECRET, click))).toBe(200);
  });

  it('a message shortcut that is not ours: acknowledged and ignored', async () => {
    const shortcut = messageShortcutPayload({
      callbackId: 'someone_elses_shortcut',
      channel: 'C0REQ',
      user: 'U0ALICE',
      messageTs: nextTs(),
      responseUrl: stack.slack.responseUrl('other-shortcut'),
    });
    expect(within3s(await postSignedInteraction(stack.bot.eventsUrl, SIGNING_SECRET, shortcut))).toBe(200);
  });

  /** The bot's warnings (pino level 40) logged since `from` lines. */
  const warningsSince = (from: number) =>
    stack.bot.logs.lines
      .slice(from)
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .filter((line) => line.level === 40)
      .map((line) => line.msg);

  it("Slack's app_rate_limited: acknowledged, with a warning that Slack is dropping the app's events", async () => {
    const from = stack.bot.logs.lines.length;
    // Its payload on docs.slack.dev/apis/events-api (rate limiting): no event, the minute it began.
    const body = {
      token: 'x',
      type: 'app_rate_limited',
      team_id: 'T0TEAM',
      minute_rate_limited: Math.floor(Date.now() / 60_000) * 60,
      api_app_id: 'A0APP',
    };
    expect(
      within3s(await postSignedEvent(stack.bot.eventsUrl, SIGNING_SECRET, body, { via: stack.bot.slack })),
    ).toBe(200);
    expect(warningsSince(from)).toEqual([
      "Slack is dropping this app's events in a workspace: it sent more than Slack's limit (30,000 an hour)",
    ]);
  });

  it('a slash command other than SLASH_COMMAND: acknowledged, with a warning naming it', async () => {
    const from = stack.bot.logs.lines.length;
    const result = await postSignedForm(
      stack.bot.eventsUrl,
      SIGNING_SECRET,
      slashCommandFields({
        command: '/ask',
        text: 'help',
        channel: 'C0CMD',
        user: 'U0ALICE',
        responseUrl: 'x',
      }),
    );
    expect(within3s(result)).toBe(200);
    expect(warningsSince(from)).toEqual([
      'a slash command this bot does not answer (set SLASH_COMMAND to the command in the manifest)',
    ]);
  });

  it('signed bodies that are not an object: refused with 400', async () => {
    for (const rawBody of ['null', '[]', '42', '"text"']) {
      const result = await postSignedEvent(stack.bot.eventsUrl, SIGNING_SECRET, undefined, { rawBody });
      expect(within3s(result)).toBe(400);
    }
    const form = await postSignedForm(stack.bot.eventsUrl, SIGNING_SECRET, { payload: 'null' });
    expect(within3s(form)).toBe(400);
  });

  it('keeps answering real events after all of the above', async () => {
    const root = nextTs();
    const result = await postSignedEvent(
      stack.bot.eventsUrl,
      SIGNING_SECRET,
      appMentionEvent({ channel: 'C0REQ', user: 'U0ALICE', text: '<@U0BOT> still here?', ts: root }),
      { via: stack.slack },
    );
    expect(within3s(result)).toBe(200);
    await stack.slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
  });
});
