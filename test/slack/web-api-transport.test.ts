import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebClient } from '@slack/web-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webApiTransport } from '../../src/slack/web-api-transport.js';
import { FakeSlack } from '../fakes/slack.js';

// WebClient reads only part of a fetch Response; these check that it still behaves as Slack users expect.
describe('the Web API transport under WebClient', () => {
  let slack: FakeSlack;
  let client: WebClient;
  beforeAll(async () => {
    slack = await FakeSlack.start();
    client = new WebClient(slack.botToken, {
      slackApiUrl: slack.apiUrl,
      fetch: webApiTransport({ maxSockets: 4, timeoutMs: 2_000 }) as typeof fetch,
      retryConfig: { retries: 2, minTimeout: 10, maxTimeout: 20 },
    });
  });
  afterAll(() => slack.stop());

  it('posts with the token and reads the answer', async () => {
    const posted = await client.chat.postMessage({ channel: 'C0TRANSPORT', text: 'héllo & <b>' });
    expect(posted.ok).toBe(true);
    const call = slack.callsOf('chat.postMessage').at(-1);
    expect(call?.args.text).toBe('héllo & <b>');
    expect(call?.tokenKind).toBe('bot');
  });

  it('reports Slack errors as WebClient does', async () => {
    slack.failNext('chat.postMessage', { type: 'error', error: 'channel_not_found' });
    await expect(client.chat.postMessage({ channel: 'C0TRANSPORT', text: 'x' })).rejects.toMatchObject({
      data: { error: 'channel_not_found' },
    });
  });

  it('waits out a rate limit, reading Retry-After, and then succeeds', async () => {
    slack.failNext('chat.postMessage', { type: 'rate_limited', retryAfterSeconds: 1 });
    const started = Date.now();
    const posted = await client.chat.postMessage({ channel: 'C0TRANSPORT', text: 'after the limit' });
    expect(posted.ok).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('gives up on a server that never answers, within its timeout', async () => {
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const fetchSlowly = webApiTransport({ maxSockets: 1, timeoutMs: 200 });
    const started = Date.now();
    await expect(
      fetchSlowly(`http://127.0.0.1:${port}/api/chat.postMessage`, { method: 'POST', body: 'a=1' }),
    ).rejects.toThrow(/within 200 ms/);
    expect(Date.now() - started).toBeLessThan(1_500);
    silent.closeAllConnections();
    await new Promise((resolve) => silent.close(resolve));
  });

  it("lets go of an idle connection before the server's announced keep-alive ends, not as it closes it", async () => {
    // Node's own server announces `Keep-Alive: timeout=5` and closes idle connections after that.
    const server = createServer((_req, res) => res.end('{"ok":true}'));
    let closed = 0;
    server.on('connection', (socket) => socket.on('close', () => closed++));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const transport = webApiTransport({ maxSockets: 1, timeoutMs: 1_000 });
    await transport(`http://127.0.0.1:${port}/api/auth.test`, { method: 'POST', body: '' });
    await new Promise((resolve) => setTimeout(resolve, 4_600));
    expect(closed).toBe(1);
    await new Promise((resolve) => server.close(resolve));
  });

  it('refuses to follow a redirect when asked not to', async () => {
    const redirecting = createServer((_req, res) =>
      res.writeHead(302, { location: 'http://example.invalid/' }).end(),
    );
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
    const { port } = redirecting.address() as AddressInfo;
    const transport = webApiTransport({ maxSockets: 1, timeoutMs: 1_000 });
    await expect(
      transport(`http://127.0.0.1:${port}/api/auth.test`, { method: 'POST', body: '', redirect: 'error' }),
    ).rejects.toThrow(/redirect/);
    redirecting.closeAllConnections();
    await new Promise((resolve) => redirecting.close(resolve));
  });
});
