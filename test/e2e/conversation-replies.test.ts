import { describe, expect, it } from 'vitest';
import type { AgentServiceEmulator } from '../fakes/agent-service.js';
import { nextTs } from '../helpers/slack-events.js';
import { mention } from '../helpers/stack.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { CHANNEL, postsIn, promptsSent, textOf, useStack } from './conversation-support.js';

describe('replies', () => {
  const stack = useStack({ SLOW_NOTICE_MS: '300' });

  it('delivers a 12,000-character Markdown reply with code blocks whole, in order and within Slack limits', async () => {
    const { slack, agent, bot } = stack;
    const sections = Array.from({ length: 16 }, (_, i) =>
      [
        `## Section ${i}`,
        `Some **bold** and _italic_ text with a [link](https://example.com/${i}). ${'Filler words. '.repeat(20)}`,
        '```ts',
        ...Array.from(
          { length: 14 },
          (_, line) => `const value${i}_${line} = compute(${line}); // step ${line}`,
        ),
        '```',
      ].join('\n\n'),
    );
    const markdown = sections.join('\n\n');
    expect(markdown.length).toBeGreaterThan(12_000);
    agent.setReplyFn(() => markdown);
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> write a lot', ts: root });
    // The answer's posts: this group's slow notice (after 300 ms) may come first on a busy machine.
    const answerPosts = () =>
      postsIn(slack, CHANNEL, root).filter((post) => !textOf(post).includes('taking a while'));
    await waitFor(
      () => answerPosts().length >= 2 && slack.reactionsOn(CHANNEL, root).length === 0,
      'reply delivered',
    );
    agent.setReplyFn(({ sessionId, turn, prompt }) => `echo[${sessionId}#${turn}]: ${prompt}`);
    const parts = answerPosts();
    let delivered = '';
    for (const part of parts) {
      const all = part.args.blocks as { type: string; text: string }[];
      // The answer's last message ends with its feedback buttons; the rest is Markdown.
      expect(all.filter((b) => b.type === 'context_actions')).toHaveLength(part === parts.at(-1) ? 1 : 0);
      const blocks = all.filter((b) => b.type === 'markdown');
      const blockChars = blocks.reduce((sum, block) => sum + block.text.length, 0);
      expect(blockChars).toBeLessThanOrEqual(12_000);
      expect(blocks.length).toBeLessThanOrEqual(50);
      expect(textOf(part).length).toBeLessThanOrEqual(40_000);
      expect(
        (
          blocks
            .map((b) => b.text)
            .join('\n')
            .match(/^```/gm) ?? []
        ).length % 2,
      ).toBe(0);
      delivered += `${blocks.map((b) => b.text).join('\n')}\n\n`;
    }
    expect(delivered.replace(/\s+/g, ' ').trim()).toBe(markdown.replace(/\s+/g, ' ').trim());
  });

  it('delivers a long answer with a table as Markdown and a real table, every message taken by Slack', async () => {
    const { slack, agent, bot } = stack;
    // A channel of its own: Slack allows a burst of about four posts per channel, and the test before this one
    // posted a long answer in the shared channel moments ago.
    const TABLES = 'C0TABLES';
    const paragraph = (i: number) => `Point ${i} of R&D: ${'the <budget> holds & grows. '.repeat(12)}`.trim();
    const before = Array.from({ length: 24 }, (_, i) => paragraph(i));
    const after = Array.from({ length: 10 }, (_, i) => paragraph(100 + i));
    const header = ['Team', 'Owner', 'Plan for the quarter'];
    const body = Array.from({ length: 40 }, (_, i) => [
      `Team ${i}`,
      `Person ${i}`,
      `Ship part ${i} & ${'review it carefully, '.repeat(5).trim()}`,
    ]);
    const table = [header, header.map(() => '---'), ...body]
      .map((row) => `| ${row.join(' | ')} |`)
      .join('\n');
    const markdown = [...before, table, ...after].join('\n\n');
    agent.setReplyFn(() => markdown);
    const ask = '<@U0BOT> the plan, in full';
    // The question is in the channel, as in Slack, so the thread holds what was posted in it.
    const root = slack.seedMessage(TABLES, { user: 'U0ALICE', text: ask, ts: nextTs() });
    const refusals: unknown[] = [];
    const stopListening = slack.onCall((call, response) => {
      const answer = response.body as { ok?: boolean; error?: unknown };
      if (call.method === 'chat.postMessage' && call.args.thread_ts === root && answer.ok === false) {
        refusals.push(answer.error);
      }
    });
    try {
      await mention(bot, { channel: TABLES, text: ask, ts: root });
      await waitFor(
        () =>
          slack.reactionsOn(TABLES, root).length === 0 &&
          slack.threadMessages(TABLES, root).some((m) => JSON.stringify(m).includes('Point 109')) &&
          !slack.threadMessages(TABLES, root).some((m) => m.text.includes('taking a while')),
        'answer delivered',
      );
    } finally {
      stopListening();
      agent.setReplyFn(({ sessionId, turn, prompt }) => `echo[${sessionId}#${turn}]: ${prompt}`);
    }
    // Slack took every post of the answer: none was refused and sent again as plain text.
    expect(refusals).toEqual([]);
    const shown = slack.threadMessages(TABLES, root).filter((m) => m.bot_id !== undefined);
    expect(shown.length).toBeGreaterThan(1);
    type Block = { type: string; text?: string; rows?: { text: string }[][] };
    const blocks = shown.flatMap((m) => (m.blocks ?? []) as Block[]);
    expect(shown.every((m) => (m.blocks ?? []).length > 0)).toBe(true);
    // The table is one table block with every cell; the prose is in markdown blocks, unescaped.
    const tables = blocks.filter((b) => b.type === 'table');
    expect(tables).toHaveLength(1);
    expect(tables[0]?.rows?.map((row) => row.map((cell) => cell.text))).toEqual([header, ...body]);
    expect(blocks.map((b) => b.type).filter((type) => type !== 'markdown' && type !== 'table')).toEqual([
      'context_actions',
    ]);
    const prose = blocks
      .filter((b) => b.type === 'markdown')
      .map((b) => b.text)
      .join('\n\n');
    expect(prose).not.toContain('&amp;');
    expect(prose).not.toContain('| Team');
    // Everything arrives, in order: the prose before the table, the table, the prose after it.
    const order = blocks.flatMap((b) =>
      b.type === 'table' ? ['[table]'] : b.type === 'markdown' ? (b.text ?? '').split('\n\n') : [],
    );
    expect(order).toEqual([...before, '[table]', ...after]);
  });

  it('cuts a long answer between characters, never inside an emoji: every part is posted, and reads as written', async () => {
    const { slack, agent, bot } = stack;
    // Cut where a message's budget ends (11,000) and where its notification text does (3,000), in a word too
    // long to cut at a space: each cut falls between the two halves of the emoji (two UTF-16 code units).
    const answers = {
      C0EMOJI1: `${'a'.repeat(10_999)}😀`,
      C0EMOJI2: `${'b'.repeat(2_998)}😀 more`,
    };
    agent.setReplyFn(({ prompt }) => answers[prompt as keyof typeof answers] ?? prompt);
    try {
      const roots = Object.fromEntries(
        await Promise.all(
          Object.keys(answers).map(async (channel) => {
            const root = nextTs();
            await mention(bot, { channel, text: `<@U0BOT> ${channel}`, ts: root });
            return [channel, root] as const;
          }),
        ),
      );
      for (const [channel, answer] of Object.entries(answers)) {
        // The answer's posts: this group's slow notice (after 300 ms) may come first on a busy machine.
        const posts = () =>
          postsIn(slack, channel, roots[channel]).filter((post) => !textOf(post).includes('taking a while'));
        const markdownOf = () =>
          posts()
            .flatMap((post) => (post.args.blocks ?? []) as { type: string; text?: string }[])
            .filter((block) => block.type === 'markdown')
            .map((block) => block.text ?? '')
            .join('');
        await waitFor(() => markdownOf() === answer, `the whole answer in ${channel}`, 10_000);
        // Each message's notification text is the start of what it shows, no character made of two halves.
        for (const post of posts()) expect(answer).toContain(textOf(post).replace(/…$/, ''));
      }
    } finally {
      agent.setReplyFn(({ sessionId, turn, prompt }) => `echo[${sessionId}#${turn}]: ${prompt}`);
    }
  });

  it('shows a plain notice in the thread: help for a bare mention, taken by Slack at the first post', async () => {
    const { slack, bot } = stack;
    const root = slack.seedMessage(CHANNEL, { user: 'U0ALICE', text: '<@U0BOT>', ts: nextTs() });
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT>', ts: root });
    const help = await waitFor(
      () => slack.threadMessages(CHANNEL, root).find((m) => m.text.includes('Mention me with a question')),
      'help shown in the thread',
    );
    expect(help.blocks).toBeUndefined();
    expect(postsIn(slack, CHANNEL, root)).toHaveLength(1);
  });

  it('shows it is working at once, says so when the agent is slow, and clears both with the answer', async () => {
    const { slack, agent, bot } = stack;
    // Well past SLOW_NOTICE_MS (300 ms), so the notice comes first even when a busy machine fires it late.
    agent.setLatency(2_000, 'sendMessage');
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> take your time', ts: root });
    const eyes = await slack.waitForCall('reactions.add', (c) => c.args.timestamp === root);
    expect(eyes.args.name).toBe('eyes');
    const slow = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('taking a while'),
    );
    const answer = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('take your time'),
      5_000,
    );
    agent.setLatency(0, 'sendMessage');
    expect(answer.at).toBeGreaterThan(slow.at);
    await waitFor(() => slack.reactionsOn(CHANNEL, root).length === 0, 'working reaction removed');
    await waitFor(
      () => slack.threadMessages(CHANNEL, root).every((m) => !m.text.includes('taking a while')),
      'slow notice deleted',
    );
  });
});

describe('working indicator delay', () => {
  // Long enough that a quick answer is in well within it on a machine the rest of the suite keeps busy.
  const stack = useStack({ WORKING_INDICATOR_DELAY_MS: '1500', SLOW_NOTICE_MS: '0' });

  it('leaves a quick answer without a flickering reaction, and marks a slow one until it lands', async () => {
    const { slack, agent, bot } = stack;
    const quick = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> quick one', ts: quick });
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === quick);
    await sleep(1_700); // past the delay: a timer left running would add the reaction now
    expect(slack.callsOf('reactions.add').filter((c) => c.args.timestamp === quick)).toEqual([]);

    // The slow answer comes once the reaction is there.
    const answerSlow = agent.holdAnswerTo('slow one');
    const slow = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> slow one', ts: slow });
    const eyes = await slack.waitForCall('reactions.add', (c) => c.args.timestamp === slow);
    expect(eyes.args.name).toBe('eyes');
    answerSlow();
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === slow);
    await waitFor(() => slack.reactionsOn(CHANNEL, slow).length === 0, 'working reaction removed');
  });
});

type FailureCase = [string, (agent: AgentServiceEmulator) => Promise<void> | void, RegExp];

/**
 * Each failure's sentence to the author, a group of cases to a bot of its own: each case clears an indicator
 * or two, and Slack takes 20 reactions.remove a minute (Tier 2), beyond which a case waits for Slack.
 */
function failureSentences(title: string, cases: FailureCase[]): void {
  describe(title, () => {
    const stack = useStack({ AGENT_TIMEOUT_MS: '1000' });

    it.each(cases)(
      '%s: one readable sentence with a reference, indicator cleared, next message works',
      async (_kind, inject, sentence) => {
        const { slack, bot } = stack;
        const agent = stack.agent;
        const root = nextTs();
        await mention(bot, { channel: CHANNEL, text: '<@U0BOT> warm up', ts: root });
        await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
        await inject(agent);
        const failingTs = nextTs();
        await mention(bot, {
          channel: CHANNEL,
          text: '<@U0BOT> this one fails',
          ts: failingTs,
          threadTs: root,
        });
        await slack.waitForCall(
          'reactions.add',
          (c) => c.args.timestamp === failingTs && c.args.name === 'eyes',
        );
        const notice = await slack.waitForCall(
          'chat.postMessage',
          (c) => c.args.thread_ts === root && textOf(c).startsWith(':warning:'),
          5_000,
        );
        expect(textOf(notice)).toMatch(sentence);
        expect(textOf(notice)).toMatch(/\(ref [0-9A-F]{8}\)$/);
        expect(textOf(notice)).not.toMatch(/Error|at \w+ \(|status code|test-agent-key/);
        await waitFor(
          () => slack.reactionsOn(CHANNEL, failingTs).length === 0,
          'indicator of the failed message cleared',
        );
        await mention(bot, { channel: CHANNEL, text: '<@U0BOT> and after?', threadTs: root });
        await slack.waitForCall(
          'chat.postMessage',
          (c) => c.args.thread_ts === root && textOf(c).endsWith('and after?'),
          5_000,
        );
      },
    );
  });
}

failureSentences('failures the agent did not run', [
  [
    'unavailable',
    (agent) => agent.injectFailure('sendMessage', { type: 'http', status: 503 }),
    /agent service is unavailable/,
  ],
  [
    'rejected',
    (agent) => agent.injectFailure('sendMessage', { type: 'status-false', message: 'quota exceeded' }),
    /refused this request/,
  ],
]);

failureSentences('failures after the prompt left: the agent may have run it', [
  [
    'timed out',
    (agent) => agent.injectFailure('sendMessage', { type: 'hang' }),
    /took too long to answer.* It may have received your message/,
  ],
  [
    'cut off',
    (agent) => agent.injectFailure('sendMessage', { type: 'reset' }),
    /connection to the agent service broke after your message was sent/,
  ],
  [
    'failed',
    (agent) => agent.injectFailure('sendMessage', { type: 'http', status: 500 }),
    /agent service failed while handling your message, .* It may have received it and acted on it/,
  ],
  [
    // Not a lost session (which would send the prompt again in a new one): a server error may come after it ran.
    'failed with words about the session',
    (agent) =>
      agent.injectFailure('sendMessage', {
        type: 'http',
        status: 500,
        body: { status: false, message: 'session store returned an invalid response' },
      }),
    /agent service failed while handling your message/,
  ],
  [
    'gateway timeout',
    (agent) => agent.injectFailure('sendMessage', { type: 'http', status: 504, rawBody: '<h1>504</h1>' }),
    /broke after your message was sent, .* may have received it and acted on it/,
  ],
  [
    'bad response',
    (agent) => agent.injectFailure('sendMessage', { type: 'malformed' }),
    /reply I could not read, .* It received your message and may have acted on it/,
  ],
]);

describe('failures', () => {
  const stack = useStack({ AGENT_TIMEOUT_MS: '1000' });

  it('starts the conversation again when creating it failed once, and sends the prompt once', async () => {
    const { slack, agent, bot } = stack;
    agent.injectFailure('createSession', { type: 'http', status: 500 });
    const creates = agent.requestsFor('createSession').length;
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> first words', ts: root });
    const answer = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root, 8_000);
    expect(textOf(answer)).toMatch(/^echo\[s-\d+#1\]: first words$/);
    expect(agent.requestsFor('createSession').length - creates).toBe(2);
    expect(promptsSent(agent).filter((prompt) => prompt === 'first words')).toHaveLength(1);
    expect(postsIn(slack, CHANNEL, root)).toHaveLength(1);
  });

  it('says the agent service could not start a conversation when creating it keeps failing', async () => {
    const { slack, agent, bot } = stack;
    agent.injectFailure('createSession', { type: 'http', status: 500 }, 10);
    try {
      const root = nextTs();
      await mention(bot, { channel: CHANNEL, text: '<@U0BOT> never sent', ts: root });
      const notice = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root, 8_000);
      expect(textOf(notice)).toMatch(
        /^:warning: The agent service could not start a conversation, so your message was not sent to the agent\. .*\(ref [0-9A-F]{8}\)$/,
      );
      expect(textOf(notice)).not.toMatch(/rephras/);
      expect(promptsSent(agent)).not.toContain('never sent');
      // What the service said is for debug lines only (this bot logs at debug).
      const said = bot.logs.lines.filter((line) => line.includes('the agent service said'));
      expect(said.map((line) => JSON.parse(line))).toContainEqual(
        expect.objectContaining({
          level: 20,
          operation: 'createSession',
          serviceMessage: 'Internal Server Error',
        }),
      );
    } finally {
      agent.clearFailures();
    }
  });

  it('says so when the agent service cannot be reached at all', async () => {
    const { slack, agent, bot } = stack;
    await agent.down();
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> anyone?', ts: root });
    const notice = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root, 8_000);
    await agent.up();
    expect(textOf(notice)).toMatch(/agent service is unavailable/);
  });
});

describe('WORKER_CONCURRENCY', () => {
  const stack = useStack({ WORKER_CONCURRENCY: '3' });

  it('bounds the threads answered at once, and so the prompts in flight to the agent', async () => {
    const { slack, agent, bot } = stack;
    agent.setLatency(300, 'sendMessage');
    const roots = Array.from({ length: 12 }, () => nextTs());
    try {
      await Promise.all(
        // A channel each: Slack takes about one post a second per channel, which twelve answers in one channel
        // would wait out for longer than the bound being tested.
        roots.map((ts, i) => mention(bot, { channel: `C0BOUND${i}`, text: `<@U0BOT> bounded ${i}`, ts })),
      );
      await Promise.all(
        roots.map((ts) => slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === ts, 15_000)),
      );
    } finally {
      agent.setLatency(0, 'sendMessage');
    }
    // Every thread was answered, never more than three at a time, and the bound was used.
    expect(agent.maxInFlight).toBe(3);
  });
});
