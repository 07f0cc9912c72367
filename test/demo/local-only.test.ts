import { cp, mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer, type Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyStoreDir, type RunningDemo, startDemo } from '../../demo/demo.js';
import { freshDataDir } from '../helpers/embedded-store.js';

interface Answer {
  status: number;
  body: string;
}

/** What other sites and other machines can do to a running demo. */
describe('npm run demo from elsewhere', () => {
  let demo: RunningDemo;
  let dataDir: string;
  let port: number;
  let page: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'bridge-demo-local-'));
    // The empty store a demo keeps beside its own, from this run's migrated template: what other sites can
    // do is the subject here, not the first run's initdb (demo.test.ts starts from nothing).
    const emptyStore = await freshDataDir();
    await cp(emptyStore.path, emptyStoreDir(dataDir), { recursive: true });
    await emptyStore.remove();
    demo = await startDemo({
      port: 0,
      dataDir,
      emulatorLatencyMs: 50,
      logLevel: 'silent',
      prettyLogs: false,
    });
    port = demo.ports.page;
    page = `127.0.0.1:${port}`;
    // Seconds when idle; over a minute was seen in CI while the rest of the suite kept both cores busy.
  }, 180_000);

  afterAll(async () => {
    await demo?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** A raw request: fetch() would not let a test set Host, Origin or Sec-Fetch-Site. */
  const send = (
    method: string,
    urlPath: string,
    headers: Record<string, string>,
    body?: string,
    to = port,
  ): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: to, method, path: urlPath, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        // The event stream never ends: its status is the answer.
        if ((res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
          res.destroy();
          resolve({ status: res.statusCode ?? 0, body: '' });
        }
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });

  const json = { 'content-type': 'application/json' };
  const postMessage = (headers: Record<string, string>, text: string) =>
    send('POST', '/ui/message', { ...headers, ...json }, JSON.stringify({ channel: 'C0GENERAL', text }));
  /** Every message text #general holds, as the page loads them. */
  const generalTexts = async (): Promise<string[]> => {
    const state = await send('GET', '/ui/state', { host: page });
    expect(state.status).toBe(200);
    const messages = (JSON.parse(state.body) as { messages: Record<string, { text: string }[]> }).messages;
    return (messages.C0GENERAL ?? []).map((message) => message.text);
  };

  it('takes messages from its own page', async () => {
    // The control for the refusals below: the same request, from the page, goes through.
    expect((await postMessage({ host: page, origin: `http://${page}` }, 'from the page')).status).toBe(200);
    expect(await generalTexts()).toContain('from the page');
  });

  it('refuses another site, by Origin or Sec-Fetch-Site, on every route; nothing is posted', async () => {
    const evil = { host: page, origin: 'http://evil.example' };
    expect((await postMessage(evil, 'csrf via the page API')).status).toBe(403);
    expect((await send('GET', '/ui/state', evil)).status).toBe(403);
    expect((await send('GET', '/ui/stream', evil)).status).toBe(403);
    expect((await send('GET', '/', evil)).status).toBe(403);
    // The fake Web API, as a form on another site would post it (the right token is not even needed to tell).
    const form = 'token=xoxb-test-token&channel=C0GENERAL&text=csrf+via+the+web+api';
    const posted = await send(
      'POST',
      '/api/chat.postMessage',
      { ...evil, 'content-type': 'application/x-www-form-urlencoded' },
      form,
    );
    expect(posted.status).toBe(403);
    // An <img> or <script> on another site sends a GET without Origin; browsers still say where it is from.
    const image = await send('GET', `/api/chat.postMessage?${form}`, {
      host: page,
      'sec-fetch-site': 'cross-site',
      'sec-fetch-mode': 'no-cors',
    });
    expect(image.status).toBe(403);
    const stream = { host: page, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' };
    expect((await send('GET', '/ui/stream', stream)).status).toBe(403);
    // A WebSocket from another site (Socket Mode's endpoint) is refused before its ticket is even looked at.
    const upgrade = await send('GET', '/link/?ticket=forged', {
      ...evil,
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    });
    expect(upgrade.status).toBe(403);
    expect(await generalTexts()).not.toEqual(expect.arrayContaining([expect.stringMatching(/csrf/)]));
    // Nor does it reach the agent service through the traffic proxy (which passes on whatever key it is sent).
    const proxy = demo.ports.trafficProxy;
    const agent = await send(
      'GET',
      '/v1/session/demo-agent',
      { ...evil, host: `127.0.0.1:${proxy}` },
      '',
      proxy,
    );
    expect(agent.status).toBe(403);
  });

  it('refuses a DNS-rebound name (a foreign Host); nothing is posted', async () => {
    const rebound = { host: `evil.example:${port}`, origin: `http://evil.example:${port}` };
    expect((await postMessage(rebound, 'rebinding via the page API')).status).toBe(403);
    expect((await send('GET', '/ui/state', rebound)).status).toBe(403);
    expect((await send('GET', '/', { host: `evil.example:${port}` })).status).toBe(403);
    expect((await send('GET', '/ui/stream', { host: `evil.example:${port}` })).status).toBe(403);
    const api = await send(
      'POST',
      '/api/chat.postMessage',
      { host: `evil.example:${port}`, 'content-type': 'application/x-www-form-urlencoded' },
      'token=xoxb-test-token&channel=C0GENERAL&text=rebinding+via+the+web+api',
    );
    expect(api.status).toBe(403);
    expect(await generalTexts()).not.toEqual(expect.arrayContaining([expect.stringMatching(/rebinding/)]));
  });

  it('lets a followed link open the page', async () => {
    const followed = await send('GET', '/', {
      host: page,
      'sec-fetch-site': 'cross-site',
      'sec-fetch-mode': 'navigate',
      'sec-fetch-dest': 'document',
    });
    expect(followed.status).toBe(200);
  });

  it('does not take the well-known test token', async () => {
    const answer = await send(
      'POST',
      '/api/chat.postMessage',
      { host: page, 'content-type': 'application/x-www-form-urlencoded' },
      'token=xoxb-test-token&channel=C0GENERAL&text=with+the+test+token',
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ ok: false, error: 'invalid_auth' });
    expect(await generalTexts()).not.toContain('with the test token');
  });

  it('listens on 127.0.0.1 only: page, bot, its admin port, agent emulator and traffic proxy', async () => {
    // 127.0.0.2 reaches this machine as any other address does (Linux routes 127/8 to loopback): a server
    // on every interface answers there, one on 127.0.0.1 does not. The control proves the first half.
    const control = await listenEverywhere();
    try {
      expect(await connects('127.0.0.2', (control.address() as { port: number }).port)).toBe(true);
    } finally {
      control.close();
    }
    const ports = Object.entries(demo.ports);
    expect(ports.map(([name]) => name).sort()).toEqual(['admin', 'bot', 'emulator', 'page', 'trafficProxy']);
    for (const [name, listening] of ports) {
      expect({ name, loopback: await connects('127.0.0.1', listening) }).toEqual({ name, loopback: true });
      expect({ name, elsewhere: await connects('127.0.0.2', listening) }).toEqual({ name, elsewhere: false });
    }
  });
});

function listenEverywhere(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.end());
    server.once('error', reject);
    server.listen(0, () => resolve(server));
  });
}

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.setTimeout(2_000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
    socket.connect(port, host);
  });
}
