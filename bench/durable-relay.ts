/**
 * The minimal durable relay `npm run bench` measures the bot against: the least a Slack-to-agent relay must do
 * to lose no event. Plain Bolt on its HTTP receiver; each app_mention is committed to PostgreSQL before Slack
 * gets its 200, a redelivery (same channel and ts) is acknowledged and dropped, and the rest is fire and
 * forget: one agent call on a session made at start, one reply in the thread. No ordering, no indicators, no
 * retries, no recovery of recorded events after a crash (the row is there; nothing reads it back).
 */

import http from 'node:http';
import { App } from '@slack/bolt';
import axios from 'axios';
import pg from 'pg';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const agentId = env('AGENT_ID');
const agent = axios.create({
  baseURL: env('AGENT_BASE_URL'),
  headers: { private_key: env('AGENT_API_KEY') },
  httpAgent: new http.Agent({ keepAlive: true }),
  timeout: 30_000,
});

// pg's default pool size (10), the same as the bot's DATABASE_POOL_SIZE default.
const pool = new pg.Pool({ connectionString: env('DATABASE_URL') });
await pool.query(
  `CREATE TABLE IF NOT EXISTS relay_events (
     channel_id TEXT NOT NULL,
     message_ts TEXT NOT NULL,
     event JSONB NOT NULL,
     received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
     PRIMARY KEY (channel_id, message_ts))`,
);

const created = await agent.post<{ data: { session_id: string } }>(`/session/${agentId}`);
const sessionId = created.data.data.session_id;

const app = new App({
  token: env('SLACK_BOT_TOKEN'),
  signingSecret: env('SLACK_SIGNING_SECRET'),
  clientOptions: { slackApiUrl: env('SLACK_API_URL') },
  port: Number(env('PORT')),
  // Bolt acknowledges events before any listener runs; with this, the HTTP response waits until the
  // listeners have returned, so the 200 leaves only after the INSERT below has committed (an INSERT
  // outside a transaction commits on its own). If it fails, the listener throws and Slack gets a 500.
  processBeforeResponse: true,
});

app.event('app_mention', async ({ event, client, context, logger }) => {
  const recorded = await pool.query(
    'INSERT INTO relay_events (channel_id, message_ts, event) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
    [event.channel, event.ts, event],
  );
  if (recorded.rowCount === 0) return; // a redelivery: already recorded, so already being answered
  // Not awaited: the answer must not hold the acknowledgement.
  void (async () => {
    const prompt = event.text.replaceAll(`<@${context.botUserId}>`, '').trim();
    const reply = await agent.post<{ data: { data: string } }>(`/chat/${agentId}`, {
      prompt,
      session_id: sessionId,
    });
    await client.chat.postMessage({
      channel: event.channel,
      thread_ts: event.thread_ts ?? event.ts,
      text: reply.data.data.data,
    });
  })().catch((error: unknown) => logger.error(`answering ${event.channel}/${event.ts} failed: ${error}`));
});

await app.start();
process.stdout.write('durable relay ready\n');
process.on('SIGTERM', () => {
  void app
    .stop()
    .then(() => pool.end())
    .then(() => process.exit(0));
});
