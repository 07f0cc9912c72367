import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { type BotProcess, spawnBot } from '../helpers/bot-process.js';
import { appMentionEvent, nextTs, postSignedEvent } from '../helpers/slack-events.js';
import { SIGNING_SECRET, startBot } from '../helpers/stack.js';
import { type TestStore, testStore } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

/** A minimal OTLP/HTTP (JSON) trace receiver, as a collector would be. */
class OtlpReceiver {
  readonly spans: ExportedSpan[] = [];
  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    const receiver = new OtlpReceiver(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (req.method === 'POST' && req.url === '/v1/traces')
          receiver.collect(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private collect(body: string): void {
    const parsed = JSON.parse(body) as {
      resourceSpans?: {
        scopeSpans?: {
          spans?: (Omit<ExportedSpan, 'attributes'> & {
            attributes?: { key: string; value: Record<string, unknown> }[];
          })[];
        }[];
      }[];
    };
    for (const resource of parsed.resourceSpans ?? []) {
      for (const scope of resource.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          const attributes = Object.fromEntries(
            (span.attributes ?? []).map(({ key, value }) => [key, Object.values(value)[0]]),
          );
          this.spans.push({ ...span, attributes });
        }
      }
    }
  }
}

describe('traces (OpenTelemetry over OTLP/HTTP)', () => {
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let receiver: OtlpReceiver;
  let prepared: TestStore;
  let bot: BotProcess;

  beforeAll(async () => {
    [slack, agent, receiver, prepared] = await Promise.all([
      FakeSlack.start(),
      AgentServiceEmulator.start(),
      OtlpReceiver.start(),
      testStore(),
    ]);
    bot = await spawnBot({
      slack,
      agent,
      store: prepared.store,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100' },
    });
  });
  afterAll(async () => {
    bot.child.kill('SIGTERM');
    await bot.exited;
    await Promise.all([slack.stop(), agent.stop(), receiver.stop(), prepared.remove()]);
  });

  it('shows one mention as a tree: the Slack request, its job, the agent calls and the Slack calls; the agent gets the trace', async () => {
    const root = nextTs();
    const secretWords = 'classified launch codes';
    await postSignedEvent(
      bot.eventsUrl,
      SIGNING_SECRET,
      appMentionEvent({ channel: 'C0TRACE', user: 'U0ALICE', text: `<@U0BOT> ${secretWords}`, ts: root }),
      { via: slack },
    );
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);

    const request = await waitFor(
      () =>
        receiver.spans.find(
          (span) => span.name === 'slack request' && span.attributes['slack.channel'] === 'C0TRACE',
        ),
      'the request span',
      10_000,
    );
    const inTrace = () => receiver.spans.filter((span) => span.traceId === request.traceId);
    const job = await waitFor(() => inTrace().find((span) => span.name === 'job'), 'the job span', 10_000);
    await waitFor(
      () => inTrace().some((span) => span.name === 'slack chat.postMessage'),
      'the reply span',
      10_000,
    );

    expect(request).toMatchObject({
      kind: 2,
      attributes: { 'slack.team': 'T0TEAM', 'slack.event.type': 'app_mention' },
    });
    expect(job.parentSpanId).toBe(request.spanId);
    expect(job.attributes).toMatchObject({
      'job.kind': 'message',
      'slack.channel': 'C0TRACE',
      'slack.thread': root,
      'agent.session': 's-1',
    });
    const children = inTrace().filter((span) => span.parentSpanId === job.spanId);
    expect(children.map((span) => span.name)).toEqual(
      expect.arrayContaining(['agent createSession', 'agent sendMessage', 'slack chat.postMessage']),
    );
    expect(children.every((span) => span.kind === 3)).toBe(true);

    // The agent service received the trace: the traceparent of its own call's span.
    const send = children.find((span) => span.name === 'agent sendMessage');
    const [received] = agent.requestsFor('sendMessage').filter((r) => r.prompt === secretWords);
    expect(received?.headers.traceparent).toBe(`00-${request.traceId}-${send?.spanId}-01`);

    // Ids, never what people wrote.
    expect(JSON.stringify(receiver.spans)).not.toContain(secretWords);
  });
});

describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('sends the agent service no trace context', async () => {
    const [slack, agent, prepared] = await Promise.all([
      FakeSlack.start(),
      AgentServiceEmulator.start(),
      testStore(),
    ]);
    const bot = await startBot({ slack, agent, store: prepared.store });
    try {
      const root = nextTs();
      await postSignedEvent(
        bot.eventsUrl,
        SIGNING_SECRET,
        appMentionEvent({ channel: 'C0NOTRACE', user: 'U0ALICE', text: '<@U0BOT> hello', ts: root }),
        { via: slack },
      );
      await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);

      const operations = agent.requests.map((request) => request.operation);
      expect(operations).toEqual(expect.arrayContaining(['listSessions', 'createSession', 'sendMessage']));
      for (const request of agent.requests) {
        expect(request.headers).toHaveProperty('private_key');
        expect(request.headers).not.toHaveProperty('traceparent');
        expect(request.headers).not.toHaveProperty('tracestate');
      }
    } finally {
      await bot.stop();
      await Promise.all([slack.stop(), agent.stop(), prepared.remove()]);
    }
  });
});
