/**
 * Runs the fake Slack Web API and the agent service emulator on fixed local ports, so `npm start`
 * can be tried without a Slack workspace or an agent service. Prints the environment to use.
 */
import { AgentServiceEmulator } from './agent-service.js';
import { FakeSlack } from './slack.js';

const slackPort = Number(process.env.FAKE_SLACK_PORT ?? 4100);
const agentPort = Number(process.env.FAKE_AGENT_PORT ?? 4200);
const botPort = Number(process.env.PORT ?? 3000);

const slack = await FakeSlack.start({ port: slackPort });
const agent = await AgentServiceEmulator.start({ port: agentPort, latencyMs: 300 });
agent.onRequest(({ phase, request }) => {
  if (phase !== 'end') return;
  const session = request.sessionId ? ` session=${request.sessionId}` : '';
  process.stdout.write(
    `agent: ${request.operation}${session} -> ${request.status} in ${Math.round(request.durationMs ?? 0)} ms\n`,
  );
});
slack.onCall((call) => {
  if (call.method !== 'auth.test')
    process.stdout.write(`slack: ${call.method} ${JSON.stringify(call.args)}\n`);
});

// npm start also reads .env: what is set here wins over it. Empty is unset, so a .env's app token (Socket Mode)
// and database (the embedded store under DATA_DIR instead) stay out of it.
process.stdout.write(`Fakes are running. Start the bot in another terminal with (these settings win over a .env):

  SLACK_BOT_TOKEN=${slack.botToken} SLACK_SIGNING_SECRET=local-signing-secret SLACK_APP_TOKEN= \\
  SLACK_API_URL=${slack.apiUrl} AGENT_BASE_URL=${agent.baseUrl} \\
  AGENT_API_KEY=${agent.apiKey} AGENT_ID=demo-agent DATABASE_URL= PORT=${botPort} npm start

then send it a signed mention with:

  SLACK_SIGNING_SECRET=local-signing-secret PORT=${botPort} npm run --silent fakes:mention -- "hello agent"

`);

const shutdown = async () => {
  await Promise.all([slack.stop(), agent.stop()]);
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
