/**
 * The baseline for `npm run bench`: the least a Slack-to-agent relay can do with plain Bolt. On a mention
 * it calls the agent with one fixed session and posts the reply in the thread. No store, no ordering,
 * no deduplication, no indicators. The bench runs it under the same load as the bot.
 */

import http from 'node:http';
import { App } from '@slack/bolt';
import axios from 'axios';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const agentBaseUrl = env('AGENT_BASE_URL');
const agentId = env('AGENT_ID');
const agent = axios.create({
  baseURL: agentBaseUrl,
  headers: { private_key: env('AGENT_API_KEY') },
  httpAgent: new http.Agent({ keepAlive: true, maxSockets: 2048 }),
  timeout: 30_000,
});

const app = new App({
  token: env('SLACK_BOT_TOKEN'),
  signingSecret: env('SLACK_SIGNING_SECRET'),
  clientOptions: { slackApiUrl: env('SLACK_API_URL') },
  port: Number(env('PORT')),
});

const created = await agent.post(`/session/${agentId}`);
const sessionId = String(created.data.data.session_id);

app.event('app_mention', async ({ event, client }) => {
  const prompt = event.text.replace(/<@[A-Z0-9]+>/g, '').trim();
  const reply = await agent.post(`/chat/${agentId}`, { prompt, session_id: sessionId });
  await client.chat.postMessage({
    channel: event.channel,
    thread_ts: event.thread_ts ?? event.ts,
    text: String(reply.data.data.data),
  });
});

await app.start();
process.stdout.write('baseline relay ready\n');
process.on('SIGTERM', () => {
  void app.stop().then(() => process.exit(0));
});
