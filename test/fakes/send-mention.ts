/** Sends one signed app_mention to a locally running bot, as Slack would. */
import { appMentionEvent, nextTs, postSignedEvent } from '../helpers/slack-events.js';

const text = process.argv.slice(2).join(' ') || 'hello';
const secret = process.env.SLACK_SIGNING_SECRET ?? 'local-signing-secret';
const url = process.env.BOT_EVENTS_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}/slack/events`;
const threadTs = process.env.THREAD_TS;
const ts = nextTs();

try {
  const result = await postSignedEvent(
    url,
    secret,
    appMentionEvent({ channel: 'C0LOCAL', user: 'U0LOCAL', text: `<@U0BOT> ${text}`, ts, threadTs }),
  );
  process.stdout.write(
    `POST ${url} -> ${result.status} in ${Math.round(result.ms)} ms; thread ${threadTs ?? ts}\n`,
  );
} catch (error) {
  process.stderr.write(
    `cannot reach the bot at ${url}: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exitCode = 1;
}
