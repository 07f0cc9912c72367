import { openDatabase } from '../../src/store/database.js';
import type { SlackApiCall } from '../fakes/slack.js';
import { waitFor } from '../helpers/wait.js';
import type { PerTestFakes } from './support.js';

// What the two files on Slack refusing the answer share: slack-outage.test.ts (refused for a while, then
// taken) and slack-outage-notices.test.ts (rate_limited, giving up, stops and restarts), run side by side.

export const CHANNEL = 'C0OUTAGE';
export const ENV = { JOB_LEASE_MS: '3000', SLOW_NOTICE_MS: '0' };
export const SLACK_REFUSED = /Slack did not take the answer to this message for too long/;

/** Only the answer's post: other calls (the notice saying Slack refused it, indicators) go through. */
export const isAnswerPost = (args: Record<string, unknown>) => String(args.text).startsWith('echo');

/** Views of the fakes the cases read, and the outage they set up. */
export function outageViews(fakes: PerTestFakes) {
  /** Slack refuses the answers' posts (HTTP 503: not taken in) from now on; other posts go through. */
  const refuseAnswers = () =>
    fakes.slack.failFor('chat.postMessage', { type: 'http', status: 503 }, 60_000, isAnswerPost);
  /** The job ended: its working reaction was taken off the message. */
  const finished = (root: string) =>
    fakes.slack.waitForCall('reactions.remove', (c) => c.args.timestamp === root, 30_000);
  return {
    refuseAnswers,
    /** A new thread whose answer Slack refuses: returned once the job is put back to wait for Slack. */
    askRefused: async (eventsUrl: string, text: string) => {
      refuseAnswers();
      const root = await fakes.ask(eventsUrl, CHANNEL, text);
      await waitFor(
        async () => await waitingForSlack(fakes.database.url),
        'the job put back to wait for Slack',
      );
      return root;
    },
    prompts: () => fakes.prompts(),
    threadTexts: (root: string) => fakes.slack.threadMessages(CHANNEL, root).map((m) => m.text),
    answerPosts: (root: string): SlackApiCall[] =>
      fakes.slack
        .callsOf('chat.postMessage')
        .filter((c) => c.args.thread_ts === root && isAnswerPost(c.args)),
    /** A new thread the user opens by mentioning the bot. */
    ask: (eventsUrl: string, text: string) => fakes.ask(eventsUrl, CHANNEL, text),
    /**
     * A new thread whose answer is held at the agent while `meanwhile` changes Slack (an admin's setting, a
     * limit reached); returned once its job has ended.
     */
    askWhile: async (eventsUrl: string, text: string, meanwhile: (root: string) => void) => {
      const release = fakes.agent.holdAnswerTo(text);
      const root = await fakes.ask(eventsUrl, CHANNEL, text);
      await waitFor(() => fakes.prompts().includes(text), 'the prompt at the agent');
      meanwhile(root);
      release();
      await finished(root);
      return root;
    },
    finished,
  };
}

/** Whether the one job is put back to wait for Slack (deferred in the store, not in a process). */
async function waitingForSlack(databaseUrl: string): Promise<boolean> {
  const rows = await queryOnce<{ waiting: boolean }>(
    databaseUrl,
    `SELECT state = 'pending' AND slack_failing_since IS NOT NULL AS waiting FROM inbox WHERE kind = 'message'`,
  );
  return rows[0]?.waiting === true;
}

/** One statement on the bot's database, on a connection of its own (the tests poll with it). */
export async function queryOnce<Row extends object>(databaseUrl: string, sql: string): Promise<Row[]> {
  const db = await openDatabase({ kind: 'postgres', databaseUrl, poolSize: 1 });
  try {
    return await db.query<Row>(sql);
  } finally {
    await db.close();
  }
}
