/**
 * Runs the fake Slack Web API and the agent service emulator on fixed local ports, so `npm start`
 * can be tried without a Slack workspace or an agent service. Prints the environment to use.
 */
import type { ServerResponse } from 'node:http';
import { AgentServiceEmulator } from './agent-service.js';
import { LOCAL_CHANNEL } from './local-channel.js';
import { FakeSlack, type SlackApiCall } from './slack.js';

const slackPort = Number(process.env.FAKE_SLACK_PORT ?? 4100);
const agentPort = Number(process.env.FAKE_AGENT_PORT ?? 4200);
const agentLatencyMs = Number(process.env.FAKE_AGENT_LATENCY_MS ?? 300);
const botPort = Number(process.env.PORT ?? 3000);
const adminPort = Number(process.env.ADMIN_PORT ?? 9090);

const slack = await FakeSlack.start({
  port: slackPort,
  channels: { [LOCAL_CHANNEL.id]: { name: LOCAL_CHANNEL.name } },
});
// Events may come from anyone here: a call about what the fake never heard of is refused and logged below.
slack.allowUnknownTargets();
const agent = await AgentServiceEmulator.start({ port: agentPort, latencyMs: agentLatencyMs });
agent.onRequest(({ phase, request }) => {
  if (phase !== 'end') return;
  const session = request.sessionId ? ` session=${request.sessionId}` : '';
  process.stdout.write(
    `agent: ${request.operation}${session} -> ${request.status} in ${Math.round(request.durationMs ?? 0)} ms\n`,
  );
});
/** The posts Slack took (a refused one is not in the thread). */
const posted: SlackApiCall[] = [];
slack.onCall((call, response) => {
  const body = response.body as { ok?: unknown; error?: unknown } | undefined;
  // A response_url answers a plain-text "ok" with HTTP 200; the Web API, `ok: true`.
  const taken = call.method === 'response_url' ? response.status === 200 : body?.ok === true;
  // A refused call says why, as the bot's log would.
  const refusal = taken ? '' : ` -> ${String(body?.error ?? `HTTP ${response.status}`)}`;
  if (call.method !== 'auth.test')
    process.stdout.write(`slack: ${call.method} ${JSON.stringify(call.args)}${refusal}\n`);
  if (call.method === 'chat.postMessage' && taken) posted.push(call);
});

/**
 * What the bot posted into one thread, oldest first, for `npm run fakes:mention` to wait on: each post's
 * text, and whether it is (a part of) the agent's answer rather than a notice.
 */
slack.mount('/fakes/thread', (_req, res: ServerResponse, url) => {
  const channel = url.searchParams.get('channel');
  const threadTs = url.searchParams.get('thread_ts');
  const posts = posted
    .filter((call) => call.args.channel === channel && call.args.thread_ts === threadTs)
    .map((call) => {
      const metadata = call.args.metadata as { event_type?: unknown } | undefined;
      return { text: String(call.args.text ?? ''), answer: metadata?.event_type === 'agent_reply' };
    });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ posts }));
});

/**
 * The event `npm run fakes:mention` is about to deliver to the bot: the fake Slack has the message first, as
 * Slack has it before its event goes out, so the bot's reactions and replies find it.
 */
slack.mount('/fakes/event', async (req, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    body = undefined;
  }
  const isEvent =
    typeof body === 'object' &&
    body !== null &&
    'type' in body &&
    body.type === 'event_callback' &&
    'event' in body;
  if (!isEvent) {
    res.writeHead(400, { 'content-type': 'text/plain' }).end('an Events API body (event_callback) as JSON\n');
    return;
  }
  slack.ingestEvent(body);
  res.writeHead(204).end();
});

// npm start also reads .env: what is set here wins over it. Empty is unset, so a .env's app token (Socket Mode)
// and database (the embedded store under DATA_DIR instead) stay out of it.
process.stdout.write(`Fakes are running: fake Slack on port ${slack.port}, agent service emulator on port ${new URL(agent.baseUrl).port}; \
the bot is to listen on PORT ${botPort} and ADMIN_PORT ${adminPort}.

Start the bot in another terminal with (these settings win over a .env):

  SLACK_BOT_TOKEN=${slack.botToken} SLACK_SIGNING_SECRET=local-signing-secret SLACK_APP_TOKEN= \\
  SLACK_API_URL=${slack.apiUrl} AGENT_BASE_URL=${agent.baseUrl} \\
  AGENT_API_KEY=${agent.apiKey} AGENT_ID=demo-agent DATABASE_URL= PORT=${botPort} ADMIN_PORT=${adminPort} npm start

then send it a signed mention, and see its answer, with:

  SLACK_SIGNING_SECRET=local-signing-secret PORT=${botPort} FAKE_SLACK_PORT=${slack.port} npm run --silent fakes:mention -- "hello agent"

`);

const shutdown = async () => {
  await Promise.all([slack.stop(), agent.stop()]);
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
