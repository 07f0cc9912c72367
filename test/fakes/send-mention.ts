/**
 * Sends one signed app_mention to a locally running bot, as Slack would, then waits for the bot's answer in
 * the fake Slack that `npm run fakes` runs and prints it (notices too, as they come).
 */
import { appMentionEvent, nextTs, postSignedEvent } from '../helpers/slack-events.js';
import { LOCAL_CHANNEL } from './local-channel.js';

const CHANNEL = LOCAL_CHANNEL.id;
/** After the first part of the answer, a pause this long means the answer is complete. */
const QUIET_MS = 1_000;
const POLL_MS = 200;

const text = process.argv.slice(2).join(' ') || 'hello';
const secret = process.env.SLACK_SIGNING_SECRET ?? 'local-signing-secret';
const url = process.env.BOT_EVENTS_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}/slack/events`;
const fakeSlackUrl = `http://127.0.0.1:${process.env.FAKE_SLACK_PORT ?? 4100}`;
// Above the bot's default AGENT_TIMEOUT_MS (90 s): a slow agent is still waited for.
const timeoutMs = Number(process.env.FAKES_MENTION_TIMEOUT_MS ?? 120_000);
const threadTs = process.env.THREAD_TS;
const ts = nextTs();
const thread = threadTs ?? ts;

interface Post {
  text: string;
  answer: boolean;
}

/** The bot's posts in the thread so far, as the fake Slack recorded them. */
async function postsInThread(): Promise<Post[]> {
  const response = await fetch(
    `${fakeSlackUrl}/fakes/thread?channel=${CHANNEL}&thread_ts=${encodeURIComponent(thread)}`,
  );
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return ((await response.json()) as { posts: Post[] }).posts;
}

function fail(line: string): never {
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

// A reply in a thread the bot has answered before: only what comes after this mention is printed.
const before = await postsInThread().catch((error: unknown) =>
  fail(`cannot reach the fake Slack at ${fakeSlackUrl} (${messageOf(error)}): is \`npm run fakes\` running?`),
);

const mention = appMentionEvent({
  channel: CHANNEL,
  user: 'U0LOCAL',
  text: `<@U0BOT> ${text}`,
  ts,
  threadTs,
});
// The fake Slack has the message before the bot gets its event, as Slack does (serve.ts).
const told = await fetch(`${fakeSlackUrl}/fakes/event`, {
  method: 'POST',
  body: JSON.stringify(mention),
}).catch((error: unknown) => fail(`cannot reach the fake Slack at ${fakeSlackUrl} (${messageOf(error)})`));
if (!told.ok) fail(`the fake Slack at ${fakeSlackUrl} refused the mention: HTTP ${told.status}`);
try {
  const result = await postSignedEvent(url, secret, mention);
  process.stdout.write(`POST ${url} -> ${result.status} in ${Math.round(result.ms)} ms; thread ${thread}\n`);
  if (result.status >= 400) process.exit(1);
} catch (error) {
  fail(`cannot reach the bot at ${url}: ${messageOf(error)}`);
}

const started = Date.now();
let shown = before.length;
let answeredAt: number | undefined;
let lastPostAt = Date.now();
while (answeredAt === undefined || Date.now() - lastPostAt < QUIET_MS) {
  if (Date.now() - started > timeoutMs) fail(`no answer from the bot within ${timeoutMs / 1000} s`);
  await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  const posts = await postsInThread();
  for (const post of posts.slice(shown)) {
    process.stdout.write(`${post.answer ? 'bot' : 'bot (notice)'}: ${post.text}\n`);
    lastPostAt = Date.now();
    if (post.answer) answeredAt ??= lastPostAt;
  }
  shown = posts.length;
}
