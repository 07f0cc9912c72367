import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FakeSlack } from '../test/fakes/slack.js';
import {
  appHomeOpenedEvent,
  appMentionEvent,
  blockActionsPayload,
  channelArchiveEvent,
  messageEvent,
  messageShortcutPayload,
  nextTs,
  postSignedEvent,
  postSignedForm,
  postSignedInteraction,
  type SignedPostResult,
  slashCommandFields,
} from '../test/helpers/slack-events.js';
import type { AgentTrafficProxy, TrafficEntry } from './agent-traffic.js';

const PUBLIC_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'public');
const MARKED_MODULE = createRequire(import.meta.url).resolve('marked');

const STATIC_FILES: Record<string, { file: string; type: string }> = {
  '/': { file: path.join(PUBLIC_DIR, 'index.html'), type: 'text/html; charset=utf-8' },
  '/app.js': { file: path.join(PUBLIC_DIR, 'app.js'), type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: path.join(PUBLIC_DIR, 'style.css'), type: 'text/css; charset=utf-8' },
  '/vendor/marked.esm.js': { file: MARKED_MODULE, type: 'text/javascript; charset=utf-8' },
};

/** The shortcut's callback id, as declared in manifest.yml. */
const RESET_SHORTCUT_CALLBACK = 'reset_conversation';
const MAX_REQUEST_BYTES = 100_000;

export interface WebUiOptions {
  slack: FakeSlack;
  traffic: AgentTrafficProxy;
  /** The bot's Events API URL (`http://127.0.0.1:<port>/slack/events`). */
  botEventsUrl: string;
  signingSecret: string;
  /** The person using the page. */
  me: { id: string; name: string };
  /** The slash command's name, with its slash. */
  command: string;
  /**
   * Restarts the bot without waiting for answers in progress (as a crash or a hurried deploy would), so the
   * page can show what the bot does about an answer it lost.
   */
  restartBot?: () => Promise<void>;
}

interface UiEphemeral {
  id: string;
  channel: string;
  threadTs?: string;
  text?: string;
  blocks?: unknown[];
  at: number;
}

class UiError extends Error {}

/**
 * The demo's Slack-like page and the small API behind it, served by the fake Slack. What the person does
 * on the page becomes what Slack would send the bot (signed Events API, slash command, shortcut and
 * button-click requests); what the bot does through the Web API shows up on the page, pushed over Server-Sent Events.
 * The fake Slack must refuse requests from other sites (`acceptRequest: isLocalRequest`): this API acts
 * as the signed-in person.
 */
export function mountWebUi(options: WebUiOptions): { close(): void } {
  const { slack, traffic } = options;
  const streams = new Set<ServerResponse>();
  const ephemerals: UiEphemeral[] = [];

  const broadcast = (event: string, data: unknown) => {
    const frame = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    for (const stream of streams) stream.write(frame);
  };
  const changed = () => broadcast('change', {});

  const stopCalls = slack.onCall((call) => {
    if (call.method !== 'auth.test') changed();
  });
  const stopTraffic = traffic.onEntry((entry: TrafficEntry) => broadcast('traffic', entry));

  const state = () => ({
    team: { id: slack.teamId, name: slack.teamName },
    me: options.me,
    bot: { userId: slack.botUserId, name: slack.userList().find((u) => u.id === slack.botUserId)?.name },
    users: Object.fromEntries(
      slack.userList().map((user) => [user.id, { name: user.name, realName: user.realName }]),
    ),
    channels: slack.channelList().map(({ id, name, type, archived }) => ({
      id,
      name,
      type: type === 'im' ? 'im' : 'channel',
      archived,
    })),
    messages: Object.fromEntries(slack.channelList().map(({ id }) => [id, slack.channelMessages(id)])),
    ephemerals: [
      ...ephemerals,
      ...slack.visibleEphemerals(options.me.id).map((message) => ({
        id: message.messageTs,
        channel: message.channel,
        threadTs: message.threadTs,
        text: message.text,
        blocks: message.blocks,
        at: Number(message.messageTs) * 1000,
      })),
    ].sort((a, b) => a.at - b.at),
    assistant: assistantStates(slack),
    sessions: agentSessionStates(slack),
  });

  const channelOf = (id: unknown) => {
    const channel = slack.channelList().find((known) => known.id === id);
    if (!channel) throw new UiError('unknown channel');
    return channel;
  };

  /** Whatever the bot answered must be a 2xx, as Slack would require; anything else is shown as an error. */
  const expectAck = (result: SignedPostResult, what: string) => {
    if (result.status < 200 || result.status >= 300)
      throw new UiError(`the bot answered ${what} with HTTP ${result.status}`);
  };

  const actions: Record<string, (body: Record<string, unknown>) => Promise<Record<string, unknown>>> = {
    async message(body) {
      const channel = channelOf(body.channel);
      if (channel.archived) throw new UiError('this channel is archived');
      const typed = typeof body.text === 'string' ? body.text.trim() : '';
      if (typed === '') throw new UiError('nothing to send');
      const text = toSlackText(typed, slack);
      const threadTs = typeof body.threadTs === 'string' && body.threadTs !== '' ? body.threadTs : undefined;
      const ts = nextTs();
      const base = { channel: channel.id, user: options.me.id, text, ts, threadTs };
      const message = messageEvent({ ...base, channelType: channel.type === 'im' ? 'im' : 'channel' });
      slack.ingestEvent(message);
      changed();
      // Slack sends both for a mention in a channel: the bot must answer once.
      const mentionsBot = text.includes(`<@${slack.botUserId}>`);
      const deliveries = [postSignedEvent(options.botEventsUrl, options.signingSecret, message)];
      if (mentionsBot && channel.type !== 'im')
        deliveries.push(postSignedEvent(options.botEventsUrl, options.signingSecret, appMentionEvent(base)));
      for (const result of await Promise.all(deliveries)) expectAck(result, 'the message event');
      return { ts };
    },

    async command(body) {
      const channel = channelOf(body.channel);
      const line = typeof body.text === 'string' ? body.text.trim() : '';
      const [command = '', ...rest] = line.split(/\s+/);
      if (command !== options.command)
        throw new UiError(`unknown command ${command}; try ${options.command} help`);
      const threadTs = typeof body.threadTs === 'string' && body.threadTs !== '' ? body.threadTs : undefined;
      const result = await postSignedForm(
        options.botEventsUrl,
        options.signingSecret,
        slashCommandFields({
          command,
          text: rest.join(' '),
          channel: channel.id,
          channelName: channel.name,
          user: options.me.id,
          // The fake shows the bot's answers as Slack would: to the person, where they typed the command.
          responseUrl: slack.responseUrl(nextTs(), { channel: channel.id, user: options.me.id, threadTs }),
        }),
      );
      expectAck(result, 'the slash command');
      const immediate = parseJsonObject(result.body);
      if (typeof immediate?.text === 'string') {
        ephemerals.push({
          id: nextTs(),
          channel: channel.id,
          threadTs,
          text: immediate.text,
          at: Date.now(),
        });
        changed();
      }
      return {};
    },

    async shortcut(body) {
      const channel = channelOf(body.channel);
      const messageTs = typeof body.ts === 'string' ? body.ts : '';
      const message = slack.channelMessages(channel.id).find((known) => known.ts === messageTs);
      if (!message) throw new UiError('unknown message');
      const threadTs = message.thread_ts ?? message.ts;
      const result = await postSignedInteraction(
        options.botEventsUrl,
        options.signingSecret,
        messageShortcutPayload({
          callbackId: RESET_SHORTCUT_CALLBACK,
          channel: channel.id,
          user: options.me.id,
          messageTs,
          threadTs: message.thread_ts,
          responseUrl: slack.responseUrl(nextTs(), { channel: channel.id, user: options.me.id, threadTs }),
        }),
      );
      expectAck(result, 'the shortcut');
      return {};
    },

    /** A DM opened on the page is the bot's Messages tab opened in Slack. */
    async open(body) {
      const channel = channelOf(body.channel);
      if (channel.type !== 'im') return {};
      const result = await postSignedEvent(
        options.botEventsUrl,
        options.signingSecret,
        appHomeOpenedEvent({ channel: channel.id, user: options.me.id, tab: 'messages' }),
      );
      expectAck(result, 'the app_home_opened event');
      return {};
    },

    /** Slack's stop button on an agent session that is `processing`. */
    async stop(body) {
      const channel = channelOf(body.channel);
      const threadTs = typeof body.threadTs === 'string' ? body.threadTs : '';
      if (!slack.agentSession(channel.id, threadTs)?.stopButtonVisible)
        throw new UiError('there is nothing to stop in this conversation');
      const event = slack.pressStopButton(channel.id, threadTs, options.me.id);
      changed();
      const result = await postSignedEvent(options.botEventsUrl, options.signingSecret, event);
      expectAck(result, 'the agent_session_stopped event');
      return {};
    },

    /** A click on a button of one of the bot's messages (feedback, Send again): a block_actions request. */
    async action(body) {
      const channel = channelOf(body.channel);
      const ts = typeof body.ts === 'string' ? body.ts : '';
      const message = slack.channelMessages(channel.id).find((known) => known.ts === ts);
      if (!message) throw new UiError('unknown message');
      const actionId = typeof body.actionId === 'string' ? body.actionId : '';
      const feedback =
        body.feedback === 'positive' || body.feedback === 'negative' ? body.feedback : undefined;
      let payload: ReturnType<typeof blockActionsPayload>;
      try {
        payload = blockActionsPayload({
          user: options.me.id,
          channel: channel.id,
          channelName: channel.name,
          message,
          actionId,
          feedback,
          // With where the click happened, the bot's answers land as Slack would put them (ephemeral to
          // the person, in the message's thread).
          responseUrl: slack.responseUrl(nextTs(), {
            channel: channel.id,
            user: options.me.id,
            messageTs: message.ts,
            threadTs: message.thread_ts,
          }),
        });
      } catch {
        throw new UiError('that message has no such button');
      }
      const result = await postSignedInteraction(options.botEventsUrl, options.signingSecret, payload);
      expectAck(result, 'the button click');
      return {};
    },

    async restart() {
      if (!options.restartBot) throw new UiError('this demo cannot restart its bot');
      await options.restartBot();
      changed();
      return {};
    },

    async archive(body) {
      const channel = channelOf(body.channel);
      if (channel.type === 'im') throw new UiError('a DM cannot be archived');
      slack.archiveChannel(channel.id);
      changed();
      const result = await postSignedEvent(
        options.botEventsUrl,
        options.signingSecret,
        channelArchiveEvent({ channel: channel.id, user: options.me.id }),
      );
      expectAck(result, 'the archive event');
      return {};
    },
  };

  slack.mount('/', async (req, res, url) => {
    if (req.method === 'GET' && url.pathname === '/ui/state') return sendJson(res, 200, state());
    if (req.method === 'GET' && url.pathname === '/ui/stream') {
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-store',
        connection: 'keep-alive',
      });
      // Headers are only sent with the first bytes: without these the page would wait for the first event
      // (the first agent call) to learn it is connected.
      res.write(': connected\n\n');
      for (const entry of traffic.entries) res.write(`event: traffic\ndata: ${JSON.stringify(entry)}\n\n`);
      streams.add(res);
      req.on('close', () => streams.delete(res));
      return;
    }
    const name = url.pathname.startsWith('/ui/') ? url.pathname.slice('/ui/'.length) : '';
    const action = Object.hasOwn(actions, name) ? actions[name] : undefined;
    if (req.method === 'POST' && action) {
      // A JSON body needs a CORS preflight, which this server never grants to another site.
      if (!(req.headers['content-type'] ?? '').startsWith('application/json'))
        return sendJson(res, 403, { ok: false, error: 'requests must come from the demo page' });
      try {
        const body = parseJsonObject(await readText(req)) ?? {};
        return sendJson(res, 200, { ok: true, ...(await action(body)) });
      } catch (error) {
        const message = error instanceof UiError ? error.message : `failed: ${String(error)}`;
        return sendJson(res, error instanceof UiError ? 400 : 502, { ok: false, error: message });
      }
    }
    const asset =
      req.method === 'GET' && Object.hasOwn(STATIC_FILES, url.pathname)
        ? STATIC_FILES[url.pathname]
        : undefined;
    // The page names its icon inline; a browser that asks for the conventional one anyway gets nothing, not a 404.
    if (req.method === 'GET' && url.pathname === '/favicon.ico') {
      res.writeHead(204).end();
      return;
    }
    if (!asset) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found');
      return;
    }
    res.writeHead(200, { 'content-type': asset.type, 'cache-control': 'no-store' });
    res.end(await readFile(asset.file));
  });

  return {
    close() {
      stopCalls();
      stopTraffic();
      for (const stream of streams) stream.end();
      streams.clear();
    },
  };
}

/** What the page shows of Slack's agent threads (status, title, suggested prompts). */
function assistantStates(slack: FakeSlack): Record<string, unknown> {
  const states: Record<string, unknown> = {};
  for (const { id } of slack.channelList()) {
    // Set without a thread: the Messages tab's suggested prompts.
    const tab = slack.assistantThread(id, undefined);
    if (tab) states[`${id}:`] = tab;
    for (const message of slack.channelMessages(id)) {
      const threadTs = message.thread_ts ?? message.ts;
      const state = slack.assistantThread(id, threadTs);
      if (state) states[`${id}:${threadTs}`] = state;
    }
  }
  return states;
}

/** What the page shows of each thread's agent session: Slack's title, status and stop button. */
function agentSessionStates(slack: FakeSlack): Record<string, unknown> {
  return Object.fromEntries(
    slack
      .agentSessionList()
      .map(({ channel, threadTs, status, title, stopButtonVisible }) => [
        `${channel}:${threadTs}`,
        { status, title, stopButtonVisible },
      ]),
  );
}

/**
 * Turns what a person typed into Slack's wire text: `@agent` / `@bot` / `@<name>` become user mentions and
 * `& < >` are escaped, as Slack's clients do.
 */
export function toSlackText(typed: string, slack: FakeSlack): string {
  const escaped = typed.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const users = slack.userList();
  return escaped.replace(/(^|[\s(])@([\w.-]+)/g, (whole, before: string, name: string) => {
    const lower = name.toLowerCase();
    const user =
      lower === 'agent' || lower === 'bot'
        ? users.find((known) => known.id === slack.botUserId)
        : users.find((known) => known.name.toLowerCase() === lower);
    return user ? `${before}<@${user.id}>` : whole;
  });
}

async function readText(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_REQUEST_BYTES) throw new UiError('request too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}
