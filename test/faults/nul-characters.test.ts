import { afterAll, beforeAll, describe, expect } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { nextTs } from '../helpers/slack-events.js';
import { mention, type RunningBot, startBot } from '../helpers/stack.js';
import { forEachStore, type PrepareStore, type StoreCases } from '../helpers/stores.js';
import { sleep } from '../helpers/wait.js';

const runPostgres = await shouldRunPostgresTests();

const CHANNEL = 'C0NUL';
const NUL = '\u0000';

/**
 * U+0000 is legal in JSON, so the agent service may send it and a Slack event may carry it; neither
 * PostgreSQL nor the embedded store can keep it in a text column. Such words must still reach the thread.
 */
function nulSuite(name: string, prepare: PrepareStore, cases: StoreCases) {
  describe(name, () => {
    let slack: FakeSlack;
    let agent: AgentServiceEmulator;
    let bot: RunningBot;
    let cleanup: () => Promise<void>;

    beforeAll(async () => {
      const prepared = await prepare();
      cleanup = prepared.cleanup;
      slack = await FakeSlack.start();
      agent = await AgentServiceEmulator.start();
      bot = await startBot({ slack, agent, store: prepared.store, env: { AGENT_TIMEOUT_MS: '2000' } });
    });
    afterAll(async () => {
      await bot?.stop();
      await Promise.all([slack?.stop(), agent?.stop()]);
      await cleanup?.();
    });

    cases.onEveryStore(
      'posts an answer holding NULs, without them, and no false "restarted" notice',
      async () => {
        agent.setReplyFn(() => `first${NUL}part${NUL}${NUL} of the answer${NUL}`);
        try {
          const root = nextTs();
          await mention(bot, { channel: CHANNEL, text: '<@U0BOT> answer with NULs', ts: root });
          const answer = await slack.waitForCall(
            'chat.postMessage',
            (call) => call.args.thread_ts === root,
            8_000,
          );
          expect(String(answer.args.text)).toBe('firstpart of the answer');
          // Nothing else follows: no notice that the answer was lost.
          await sleep(1_000);
          const posts = slack.callsOf('chat.postMessage').filter((call) => call.args.thread_ts === root);
          expect(posts.map((post) => post.args.text)).toEqual(['firstpart of the answer']);
          expect(
            agent.requestsFor('sendMessage').filter((r) => r.prompt === 'answer with NULs'),
          ).toHaveLength(1);
        } finally {
          agent.setReplyFn(({ sessionId, turn, prompt }) => `echo[${sessionId}#${turn}]: ${prompt}`);
        }
      },
    );

    cases.onEveryStore('admits a Slack message holding a NUL and relays it without the NUL', async () => {
      const root = nextTs();
      const delivered = await mention(bot, { channel: CHANNEL, text: `<@U0BOT> hello${NUL}world`, ts: root });
      expect(delivered.status).toBe(200);
      const answer = await slack.waitForCall(
        'chat.postMessage',
        (call) => call.args.thread_ts === root,
        8_000,
      );
      expect(String(answer.args.text)).toMatch(/^echo\[s-\d+#1\]: helloworld$/);
      const prompts = agent.requestsFor('sendMessage').map((request) => request.prompt ?? '');
      expect(prompts).toContain('helloworld');
      expect(prompts.filter((prompt) => prompt.includes(NUL))).toEqual([]);
    });
  });
}

forEachStore(runPostgres, (kind, prepare, cases) =>
  nulSuite(
    `NUL characters with the ${kind === 'embedded' ? 'embedded' : 'PostgreSQL'} store`,
    prepare,
    cases,
  ),
);
