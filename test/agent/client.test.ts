import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type AgentCallInfo, AgentClient, type AgentClientOptions } from '../../src/agent/client.js';
import { type AgentServiceError, isAgentServiceError } from '../../src/agent/errors.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';

const KEY = 'sk-test-SECRET-7f3a9c';
const AGENT = 'agent-1';

let emu: AgentServiceEmulator;
const clients: AgentClient[] = [];

function client(overrides: Partial<AgentClientOptions> = {}): AgentClient {
  const c = new AgentClient({
    baseUrl: emu.baseUrl,
    apiKey: KEY,
    timeoutMs: 2_000,
    retry: { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 },
    ...overrides,
  });
  clients.push(c);
  return c;
}

/** Awaits a rejection and checks it is a well-formed AgentServiceError that leaks no secret. */
async function failure(promise: Promise<unknown>): Promise<AgentServiceError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (e: unknown) => e,
  );
  if (!isAgentServiceError(error)) throw error;
  expect(error.message).not.toContain(KEY);
  expect(String(error.stack)).not.toContain(KEY);
  expect(JSON.stringify(error)).not.toContain(KEY);
  expect(error.message.length).toBeLessThan(300);
  return error;
}

/** A bare HTTP server for answers the emulator never gives (redirects, drips, huge bodies). */
async function rawServer(
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<{ url: string; hits: number; closeConnections: () => void; close: () => Promise<void> }> {
  const state = { hits: 0 };
  const server = http.createServer((req, res) => {
    state.hits++;
    req.resume();
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get hits() {
      return state.hits;
    },
    closeConnections: () => server.closeAllConnections(),
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

beforeAll(async () => {
  emu = await AgentServiceEmulator.start({ apiKey: KEY });
});

afterAll(async () => {
  await emu.stop();
});

beforeEach(() => {
  emu.reset();
});

afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

describe('operations', () => {
  it('creates, lists, sends to and deletes a session', async () => {
    const c = client();
    const id = await c.createSession(AGENT);
    expect(id).toBe(emu.sessionsOf(AGENT)[0]?.uuid);

    await expect(c.sendMessage(AGENT, id, 'hello')).resolves.toEqual({
      text: `echo[${id}#1]: hello`,
      innerStatus: 200,
      message: 'ok',
    });
    expect((await c.sendMessage(AGENT, id, 'again')).text).toBe(`echo[${id}#2]: again`);

    const listed = await c.listSessions(AGENT);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      uuid: id,
      sessionName: expect.any(String),
      createdAt: expect.any(String),
    });

    await c.deleteSession(AGENT, id);
    expect(emu.sessionsOf(AGENT)).toEqual([]);
    expect(emu.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
      `POST /v1/session/${AGENT} 200`,
      `POST /v1/chat/${AGENT} 200`,
      `POST /v1/chat/${AGENT} 200`,
      `GET /v1/session/${AGENT} 200`,
      `DELETE /v1/session/${AGENT}/${id} 200`,
    ]);
  });

  it('sends the prompt body as JSON and uses a custom reply', async () => {
    emu.setReplyFn(({ prompt, turn }) => `${prompt.toUpperCase()} (${turn})`);
    const c = client();
    const id = await c.createSession(AGENT);
    expect((await c.sendMessage(AGENT, id, 'ping')).text).toBe('PING (1)');
    const sent = emu.requestsFor('sendMessage')[0];
    expect(JSON.parse(sent?.body ?? '')).toEqual({ prompt: 'ping', session_id: id });
    expect(sent?.headers['content-type']).toMatch(/^application\/json/);
  });

  it('encodes path segments and accepts a base URL with a trailing slash', async () => {
    const c = client({ baseUrl: `${emu.baseUrl}/` });
    const agent = 'team a/b?c';
    const id = await c.createSession(agent);
    await c.deleteSession(agent, id);
    expect(emu.requests.map((r) => r.path)).toEqual([
      '/v1/session/team%20a%2Fb%3Fc',
      `/v1/session/team%20a%2Fb%3Fc/${id}`,
    ]);
    expect(emu.requests.every((r) => r.agentId === agent)).toBe(true);
  });

  it('sends the key only as the private_key header', async () => {
    const c = client();
    const id = await c.createSession(AGENT);
    await c.sendMessage(AGENT, id, 'hi');
    await c.listSessions(AGENT);
    await c.deleteSession(AGENT, id);
    expect(emu.requests).toHaveLength(4);
    for (const r of emu.requests) {
      expect(r.headers.private_key).toBe(KEY);
      expect(r.path).not.toContain(KEY);
      expect(r.body).not.toContain(KEY);
      const carriers = Object.entries(r.headers).filter(([, v]) => String(v).includes(KEY));
      expect(carriers.map(([name]) => name)).toEqual(['private_key']);
    }
  });

  it('rejects empty ids before any request', async () => {
    const c = client();
    await expect(c.deleteSession(AGENT, '')).rejects.toThrow(TypeError);
    expect(emu.requests).toHaveLength(0);
  });
});

describe('response shapes', () => {
  it('reads create session_id given as a number, and tolerates a missing status', async () => {
    const c = client();
    emu.injectFailure('createSession', { type: 'http', status: 200, body: { data: { session_id: 42 } } });
    await expect(c.createSession(AGENT)).resolves.toBe('42');
    emu.injectFailure('createSession', { type: 'http', status: 201, body: { status: true, data: {} } });
    expect((await failure(c.createSession(AGENT))).kind).toBe('bad_response');
  });

  it('requires data.data to be a string on send', async () => {
    const calls: AgentCallInfo[] = [];
    const c = client({ onCall: (info) => calls.push(info) });
    const id = emu.addSession(AGENT);
    emu.injectFailure('sendMessage', {
      type: 'http',
      status: 200,
      body: { status: true, data: { data: 7 } },
    });
    expect((await failure(c.sendMessage(AGENT, id, 'x'))).kind).toBe('bad_response');
    emu.injectFailure('sendMessage', { type: 'http', status: 200, body: { status: true, data: 'plain' } });
    expect((await failure(c.sendMessage(AGENT, id, 'x'))).kind).toBe('bad_response');
    expect(calls.map((i) => i.outcome)).toEqual(['bad_response', 'bad_response']);
  });

  it('takes an inner data.status of 400 or more as a failed answer, not as the words to post', async () => {
    const id = emu.addSession(AGENT);
    // The API does not say what data.status means; read as an HTTP status, 500 is no answer at all.
    emu.injectFailure('sendMessage', {
      type: 'http',
      status: 200,
      body: {
        status: true,
        data: { status: 500, message: 'Internal error', data: 'Traceback (most recent call last)' },
      },
    });
    const error = await failure(client().sendMessage(AGENT, id, 'x'));
    expect(error.kind).toBe('bad_response');
    // Never sent again: the agent may have acted on it.
    expect(emu.requestsFor('sendMessage')).toHaveLength(1);
    // A 2xx is an answer.
    emu.injectFailure('sendMessage', {
      type: 'http',
      status: 200,
      body: { status: true, data: { status: 201, message: 'ok', data: 'the answer' } },
    });
    expect((await client().sendMessage(AGENT, id, 'x')).text).toBe('the answer');
  });

  it('drops NULs from a reply and replaces lone surrogates, which no store can keep', async () => {
    const id = emu.addSession(AGENT);
    // Escapes as the service's JSON would carry them: legal JSON, not storable text.
    emu.injectFailure('sendMessage', {
      type: 'http',
      status: 200,
      rawBody: '{"status":true,"data":{"data":"a\\u0000b\\ud800c \\ud83d\\ude00"}}',
    });
    expect((await client().sendMessage(AGENT, id, 'x')).text).toBe('ab\uFFFDc \u{1F600}');
  });

  it.each(['array', 'single', 'wrapped'] as const)('lists sessions with data as %s', async (shape) => {
    emu.setListShape(shape);
    const c = client();
    const id = await c.createSession(AGENT);
    await expect(c.listSessions(AGENT)).resolves.toEqual([
      { uuid: id, sessionName: expect.any(String), createdAt: expect.any(String) },
    ]);
  });

  it.each(['array', 'single', 'wrapped'] as const)('follows page hints for %s lists', async (shape) => {
    emu.setListShape(shape, 2);
    const c = client();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(emu.addSession(AGENT));
    const listed = await c.listSessions(AGENT);
    expect(listed.map((s) => s.uuid)).toEqual(ids);
    const pages = shape === 'single' ? 5 : 3;
    expect(emu.requestsFor('listSessions').map((r) => r.path)).toEqual(
      Array.from({ length: pages }, (_, i) =>
        i === 0 ? `/v1/session/${AGENT}` : `/v1/session/${AGENT}?page=${i + 1}`,
      ),
    );
  });

  it('tolerates unknown fields, other wrapper keys and records without a uuid', async () => {
    const c = client();
    const records = [
      { uuid: 'a', session_name: 'A', created_at: '2024-01-01', owner: { id: 1 } },
      { session_name: 'no uuid' },
      { uuid: 5 },
      'junk',
      { uuid: 'b' },
    ];
    emu.injectFailure('listSessions', {
      type: 'http',
      status: 200,
      body: { status: true, total: 2, data: { sessions: records, cursor: null } },
    });
    await expect(c.listSessions(AGENT)).resolves.toEqual([
      { uuid: 'a', sessionName: 'A', createdAt: '2024-01-01' },
      { uuid: 'b' },
    ]);
    emu.injectFailure('listSessions', { type: 'http', status: 200, body: { status: true, data: [] } });
    await expect(c.listSessions(AGENT)).resolves.toEqual([]);
    emu.injectFailure('listSessions', { type: 'http', status: 200, body: { status: true, data: 'nope' } });
    expect((await failure(c.listSessions(AGENT))).kind).toBe('bad_response');
  });

  it.each([
    ['html', '<html>oops'],
    ['JSON array', '[1,2]'],
    ['JSON string', '"hello"'],
    ['JSON null', 'null'],
    ['empty body', ''],
  ])('maps a 200 with %s to bad_response', async (_label, rawBody) => {
    emu.injectFailure('createSession', { type: 'http', status: 200, rawBody });
    const error = await failure(client().createSession(AGENT));
    expect(error).toMatchObject({ kind: 'bad_response', operation: 'createSession', httpStatus: 200 });
  });

  it('maps the malformed failure to bad_response', async () => {
    emu.injectFailure('listSessions', { type: 'malformed' });
    expect((await failure(client().listSessions(AGENT))).kind).toBe('bad_response');
  });
});

describe('failure mapping', () => {
  it('treats HTTP 200 with status:false as rejected, carrying the message for debug lines only', async () => {
    emu.injectFailure('createSession', { type: 'status-false', message: 'Quota exceeded' });
    const calls: AgentCallInfo[] = [];
    const error = await failure(client({ onCall: (info) => calls.push(info) }).createSession(AGENT));
    expect(error).toMatchObject({ kind: 'rejected', httpStatus: 200, serviceMessage: 'Quota exceeded' });
    // The service's words may quote the prompt: not in the message, nor in any field a logger serialises.
    expect(error.message).toBe('agent service createSession: request rejected (HTTP 200)');
    expect(String(error.stack)).not.toContain('Quota');
    expect(JSON.stringify(error)).not.toContain('Quota');
    expect(Object.keys(error)).not.toContain('serviceMessage');
    expect(calls).toEqual([
      expect.objectContaining({ outcome: 'rejected', serviceMessage: 'Quota exceeded' }),
    ]);
    expect(emu.requestsFor('createSession')).toHaveLength(1);
  });

  it('maps a 4xx with body to rejected', async () => {
    const id = emu.addSession(AGENT);
    emu.injectFailure('sendMessage', {
      type: 'http',
      status: 400,
      body: { status: false, message: 'Prompt too long' },
    });
    const error = await failure(client().sendMessage(AGENT, id, 'x'));
    expect(error).toMatchObject({ kind: 'rejected', httpStatus: 400, serviceMessage: 'Prompt too long' });
    expect(error.notDelivered).toBe(false);
  });

  it('maps a wrong key to unauthorized 401 and redacts a key echoed by the service', async () => {
    const wrong = client({ apiKey: 'not-the-key' });
    const error = await failure(wrong.createSession(AGENT));
    expect(error).toMatchObject({ kind: 'unauthorized', httpStatus: 401, serviceMessage: 'Invalid API key' });

    emu.injectFailure('listSessions', {
      type: 'http',
      status: 401,
      body: { status: false, message: `bad key ${KEY}` },
    });
    expect((await failure(client().listSessions(AGENT))).serviceMessage).toBe('bad key [redacted]');
  });

  it('maps a 500 to rejected and 502/503/504 to unavailable', async () => {
    const c = client({ retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 } });
    emu.injectFailure('deleteSession', { type: 'http', status: 500 });
    expect(await failure(c.deleteSession(AGENT, 's-x'))).toMatchObject({ kind: 'rejected', httpStatus: 500 });
    for (const status of [502, 503, 504]) {
      emu.injectFailure('deleteSession', { type: 'http', status, rawBody: '<h1>gateway</h1>' });
      expect(await failure(c.deleteSession(AGENT, 's-x'))).toMatchObject({
        kind: 'unavailable',
        httpStatus: status,
      });
    }
  });

  it('maps an unknown session on send and delete to session_not_found', async () => {
    const c = client();
    const send = await failure(c.sendMessage(AGENT, 's-missing', 'x'));
    expect(send).toMatchObject({
      kind: 'session_not_found',
      httpStatus: 404,
      serviceMessage: 'Session not found',
    });
    const del = await failure(c.deleteSession(AGENT, 's-missing'));
    expect(del).toMatchObject({ kind: 'session_not_found', operation: 'deleteSession' });
  });

  it('maps a session-expiry message without 404 to session_not_found', async () => {
    const id = emu.addSession(AGENT);
    emu.injectFailure('sendMessage', { type: 'status-false', message: 'Session has expired' });
    expect((await failure(client().sendMessage(AGENT, id, 'x'))).kind).toBe('session_not_found');
  });

  it('reads an unknown agent or an HTML 404 as not found (a misconfiguration), not as a lost session', async () => {
    const id = emu.addSession(AGENT);
    const c = client();
    emu.injectFailure('sendMessage', {
      type: 'http',
      status: 404,
      body: { status: false, message: 'Agent not found' },
    });
    expect((await failure(c.sendMessage(AGENT, id, 'x'))).kind).toBe('not_found');
    emu.injectFailure('sendMessage', { type: 'http', status: 404, rawBody: '<h1>Not Found</h1>' });
    expect((await failure(c.sendMessage(AGENT, id, 'x'))).kind).toBe('not_found');
  });

  it('maps 429 to unavailable with retryAfterMs and does not retry a send', async () => {
    const id = emu.addSession(AGENT);
    emu.injectFailure('sendMessage', { type: 'http', status: 429, headers: { 'Retry-After': '2' } });
    const error = await failure(client().sendMessage(AGENT, id, 'x'));
    expect(error).toMatchObject({
      kind: 'unavailable',
      httpStatus: 429,
      retryAfterMs: 2_000,
      notDelivered: false,
    });
    expect(emu.requestsFor('sendMessage')).toHaveLength(1);
  });

  it('times out on a hung request', async () => {
    const id = emu.addSession(AGENT);
    emu.injectFailure('sendMessage', { type: 'hang' });
    const started = Date.now();
    const error = await failure(client({ timeoutMs: 150 }).sendMessage(AGENT, id, 'x'));
    expect(error).toMatchObject({ kind: 'timeout', operation: 'sendMessage', notDelivered: false });
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('does not retry a create that timed out', async () => {
    emu.injectFailure('createSession', { type: 'hang' });
    expect((await failure(client({ timeoutMs: 100 }).createSession(AGENT))).kind).toBe('timeout');
    expect(emu.requestsFor('createSession')).toHaveLength(1);
  });

  it('reports connection refused as unavailable and notDelivered', async () => {
    const calls: AgentCallInfo[] = [];
    const c = client({ onCall: (info) => calls.push(info) });
    await emu.down();
    try {
      const error = await failure(c.createSession(AGENT));
      expect(error).toMatchObject({ kind: 'unavailable', notDelivered: true });
      expect(error.message).toBe('agent service createSession: service unavailable [ECONNREFUSED]');
      expect(error.httpStatus).toBeUndefined();
      expect(calls.map((i) => [i.attempt, i.outcome])).toEqual([
        [1, 'unavailable'],
        [2, 'unavailable'],
        [3, 'unavailable'],
      ]);
    } finally {
      await emu.up();
    }
  });

  it('does not follow a redirect, so the key never reaches where it points', async () => {
    const elsewhere = await rawServer((_req, res) => res.end('{"status":true,"data":{"session_id":"x"}}'));
    const redirecting = await rawServer((_req, res) => {
      res.writeHead(307, { location: `${elsewhere.url}/v1/session/${AGENT}` });
      res.end();
    });
    try {
      const error = await failure(client({ baseUrl: `${redirecting.url}/v1` }).createSession(AGENT));
      expect(error).toMatchObject({ kind: 'redirected', httpStatus: 307 });
      expect(redirecting.hits).toBe(1);
      expect(elsewhere.hits).toBe(0);
    } finally {
      await Promise.all([elsewhere.close(), redirecting.close()]);
    }
  });

  it('times out a reply that arrives too slowly, even while bytes keep coming', async () => {
    const drip = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"status":true,');
      const timer = setInterval(() => res.write(' '), 20);
      res.on('close', () => clearInterval(timer));
    });
    try {
      const started = Date.now();
      const error = await failure(
        client({ baseUrl: `${drip.url}/v1`, timeoutMs: 300 }).sendMessage(AGENT, 's', 'x'),
      );
      expect(error).toMatchObject({ kind: 'timeout', operation: 'sendMessage' });
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await drip.close();
    }
  });

  it('fails at once, as unavailable, when the connection drops halfway through a reply', async () => {
    const cut = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"status":true,');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    try {
      const started = Date.now();
      const error = await failure(
        client({ baseUrl: `${cut.url}/v1`, timeoutMs: 5_000 }).sendMessage(AGENT, 's', 'x'),
      );
      expect(error).toMatchObject({ kind: 'unavailable', operation: 'sendMessage', notDelivered: false });
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await cut.close();
    }
  });

  it('refuses a reply body over 1 MiB as a bad response', async () => {
    const huge = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"status":true,"data":{"data":"${'a'.repeat(1024 * 1024 + 1)}"}}`);
    });
    try {
      const error = await failure(client({ baseUrl: `${huge.url}/v1` }).sendMessage(AGENT, 's', 'x'));
      expect(error.kind).toBe('bad_response');
      expect(error.message).toContain('response body over 1048576 bytes');
    } finally {
      await huge.close();
    }
  });

  it('stops reading a 64 MiB reply at 1 MiB: a bad response at once, the rest never read', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const total = 64 * 1024 * 1024;
    let written = 0;
    const endless = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"status":true,"data":{"data":"');
      const pump = () => {
        while (!res.destroyed) {
          if (written >= total) {
            res.end('"}}');
            return;
          }
          written += chunk.length;
          if (!res.write(chunk)) return;
        }
      };
      res.on('drain', pump);
      pump();
    });
    try {
      const started = Date.now();
      const error = await failure(
        client({ baseUrl: `${endless.url}/v1`, timeoutMs: 10_000 }).sendMessage(AGENT, 's', 'x'),
      );
      expect(error.kind).toBe('bad_response');
      expect(Date.now() - started).toBeLessThan(2_000);
      // What the server got rid of: the client's 1 MiB plus what sockets buffer on the way.
      expect(written).toBeLessThan(16 * 1024 * 1024);
    } finally {
      await endless.close();
    }
  });

  it('fails calls after close() without touching the network', async () => {
    const c = client();
    c.close();
    expect(await failure(c.listSessions(AGENT))).toMatchObject({ kind: 'unavailable', notDelivered: true });
    expect(emu.requests).toHaveLength(0);
  });
});

describe('session ids from the service', () => {
  // Each would change the request it is put into: `.` and `..` are dot-segments that URL normalisation
  // removes (DELETE /session/{agent}/.. is DELETE /session/), control characters and huge values are no ids.
  const unusable: [name: string, id: string][] = [
    ['".."', '..'],
    ['"."', '.'],
    ['a NUL', 'a\u0000b'],
    ['a line break', 'line\nbreak'],
    ['a tab', 'tab\tid'],
    ['DEL', 'del\u007f'],
    ['257 characters', 'x'.repeat(257)],
  ];

  it.each(unusable)(
    'refuses an id with %s from create as a bad response, without retrying',
    async (_name, id) => {
      emu.injectFailure('createSession', {
        type: 'http',
        status: 200,
        body: { status: true, data: { session_id: id } },
      });
      const error = await failure(client().createSession(AGENT));
      expect(error).toMatchObject({ kind: 'bad_response', operation: 'createSession' });
      expect(emu.requests).toHaveLength(1);
    },
  );

  it('never puts an unusable id into a request path, whoever passes it', async () => {
    const paths: string[] = [];
    const server = await rawServer((req, res) => {
      paths.push(`${req.method} ${req.url}`);
      res.end('{"status":true,"data":{"data":"ok"}}');
    });
    try {
      const c = client({ baseUrl: `${server.url}/v1` });
      for (const [, id] of unusable) {
        await expect(c.deleteSession(AGENT, id)).rejects.toThrow(TypeError);
        await expect(c.sendMessage(AGENT, id, 'x')).rejects.toThrow(TypeError);
      }
      expect(paths).toEqual([]);
      // Ids that merely contain dots or slashes are ids: sent whole, as one encoded segment.
      for (const id of ['...', 'a..b', '../x', '.hidden']) await c.deleteSession(AGENT, id);
      expect(paths).toEqual([
        `DELETE /v1/session/${AGENT}/...`,
        `DELETE /v1/session/${AGENT}/a..b`,
        `DELETE /v1/session/${AGENT}/..%2Fx`,
        `DELETE /v1/session/${AGENT}/.hidden`,
      ]);
    } finally {
      await server.close();
    }
  });

  it('leaves records with an unusable uuid out of a listing', async () => {
    emu.injectFailure('listSessions', {
      type: 'http',
      status: 200,
      body: {
        status: true,
        data: [...unusable.map(([, uuid]) => ({ uuid })), { uuid: 's-ok', session_name: 'fine' }],
      },
    });
    await expect(client().listSessions(AGENT)).resolves.toEqual([{ uuid: 's-ok', sessionName: 'fine' }]);
  });
});

describe('retries', () => {
  it('retries createSession after 503 and succeeds', async () => {
    emu.injectFailure('createSession', { type: 'http', status: 503 }, 2);
    const calls: AgentCallInfo[] = [];
    const id = await client({ onCall: (info) => calls.push(info) }).createSession(AGENT);
    expect(emu.sessionsOf(AGENT).map((s) => s.uuid)).toEqual([id]);
    expect(emu.requestsFor('createSession').map((r) => r.status)).toEqual([503, 503, 200]);
    expect(calls.map((i) => i.outcome)).toEqual(['unavailable', 'unavailable', 'ok']);
  });

  it('gives up after the configured attempts', async () => {
    emu.injectFailure('createSession', { type: 'http', status: 503 }, 10);
    expect((await failure(client().createSession(AGENT))).kind).toBe('unavailable');
    expect(emu.requestsFor('createSession')).toHaveLength(3);
  });

  it('honours Retry-After capped by maxDelayMs', async () => {
    emu.injectFailure('listSessions', { type: 'http', status: 503, headers: { 'Retry-After': '30' } });
    const started = Date.now();
    await client({ retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 60 } }).listSessions(AGENT);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(55);
    expect(elapsed).toBeLessThan(1_000);
    expect(emu.requestsFor('listSessions')).toHaveLength(2);
  });

  it('retries listSessions and deleteSession after a connection reset', async () => {
    const c = client();
    const id = emu.addSession(AGENT);
    emu.injectFailure('listSessions', { type: 'reset' });
    emu.injectFailure('deleteSession', { type: 'reset' });
    await expect(c.listSessions(AGENT)).resolves.toHaveLength(1);
    await c.deleteSession(AGENT, id);
    expect(emu.requestsFor('listSessions')).toHaveLength(2);
    expect(emu.requestsFor('deleteSession')).toHaveLength(2);
  });

  it('retries createSession after a server error (no prompt is sent), but not sendMessage', async () => {
    emu.injectFailure('createSession', { type: 'http', status: 500 });
    const id = await client().createSession(AGENT);
    expect(emu.requestsFor('createSession').map((r) => r.status)).toEqual([500, 200]);
    emu.injectFailure('sendMessage', { type: 'http', status: 500 }, 3);
    expect(await failure(client().sendMessage(AGENT, id, 'x'))).toMatchObject({
      kind: 'rejected',
      httpStatus: 500,
    });
    expect(emu.requestsFor('sendMessage')).toHaveLength(1);
  });

  it('does not retry rejected calls', async () => {
    emu.injectFailure('createSession', { type: 'http', status: 400 }, 3);
    expect((await failure(client().createSession(AGENT))).kind).toBe('rejected');
    expect(emu.requestsFor('createSession')).toHaveLength(1);
  });

  it('does not retry sendMessage after a 502', async () => {
    const id = emu.addSession(AGENT);
    emu.injectFailure('sendMessage', { type: 'http', status: 502 }, 3);
    const error = await failure(client().sendMessage(AGENT, id, 'x'));
    expect(error).toMatchObject({ kind: 'unavailable', httpStatus: 502, notDelivered: false });
    expect(emu.requestsFor('sendMessage')).toHaveLength(1);
  });

  it('does not retry sendMessage after a connection reset', async () => {
    const id = emu.addSession(AGENT);
    emu.injectFailure('sendMessage', { type: 'reset' });
    const error = await failure(client().sendMessage(AGENT, id, 'x'));
    expect(error).toMatchObject({ kind: 'unavailable', notDelivered: false });
    expect(emu.requestsFor('sendMessage')).toHaveLength(1);
    expect(emu.sessionsOf(AGENT)[0]?.turns).toBe(0);
  });

  it('retries sendMessage while the connection is refused, then delivers once', async () => {
    const id = emu.addSession(AGENT);
    // A fresh client holds no pooled socket, so every attempt while down is a refused connect.
    const calls: AgentCallInfo[] = [];
    const c = client({
      retry: { attempts: 8, baseDelayMs: 40, maxDelayMs: 80 },
      onCall: (i) => calls.push(i),
    });
    await emu.down();
    const upSoon = new Promise<void>((resolve) => setTimeout(() => resolve(emu.up()), 100));
    const reply = await c.sendMessage(AGENT, id, 'survives');
    await upSoon;
    expect(reply.text).toBe(`echo[${id}#1]: survives`);
    expect(emu.requestsFor('sendMessage')).toHaveLength(1);
    expect(calls.length).toBeGreaterThan(1);
    expect(calls.map((i) => i.outcome)).toEqual([...calls.slice(1).map(() => 'unavailable'), 'ok']);
  });
});
