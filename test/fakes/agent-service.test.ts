import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { AgentServiceEmulator, type TrafficEvent } from './agent-service.js';

let emu: AgentServiceEmulator;

async function call(
  method: string,
  path: string,
  options: { key?: string | null; body?: unknown } = {},
): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = {};
  const key = options.key === undefined ? emu.apiKey : options.key;
  if (key !== null) headers.private_key = key;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${emu.baseUrl}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  return { status: res.status, body: await res.json() };
}

async function newSession(agent = 'a'): Promise<string> {
  const { body } = await call('POST', `/session/${agent}`);
  return (body as { data: { session_id: string } }).data.session_id;
}

beforeAll(async () => {
  emu = await AgentServiceEmulator.start({ agents: ['a', 'b'] });
});

afterAll(async () => {
  await emu.stop();
});

beforeEach(() => {
  emu.reset();
});

describe('AgentServiceEmulator', () => {
  it('checks the private_key header', async () => {
    expect(await call('GET', '/session/a', { key: null })).toEqual({
      status: 401,
      body: { status: false, message: 'Invalid API key' },
    });
    expect((await call('GET', '/session/a', { key: 'wrong' })).status).toBe(401);
    expect(await call('GET', '/session/a')).toEqual({ status: 200, body: { status: true, data: [] } });
  });

  it('rejects unknown agents and routes', async () => {
    expect(await call('POST', '/session/zzz')).toEqual({
      status: 404,
      body: { status: false, message: 'Agent not found' },
    });
    expect((await call('GET', '/chat/a')).status).toBe(404);
    expect(emu.requests.map((r) => r.operation)).toEqual(['createSession', 'unknown']);
  });

  it('keeps sessions per agent with ids unique across reset', async () => {
    const first = await newSession('a');
    expect(await call('POST', '/session/a')).toEqual({
      status: 200,
      body: { status: true, message: 'Session created', data: { session_id: 's-2' } },
    });
    expect(first).toBe('s-1');
    expect(emu.sessionsOf('b')).toEqual([]);
    expect((await call('DELETE', `/session/b/${first}`)).status).toBe(404);
    expect(await call('DELETE', `/session/a/${first}`)).toEqual({
      status: 200,
      body: { status: true, message: 'Session deleted' },
    });
    emu.reset();
    expect(await newSession('a')).toBe('s-3');
  });

  it('echoes prompts with per-session turns', async () => {
    const s1 = await newSession();
    const s2 = await newSession();
    await call('POST', '/chat/a', { body: { prompt: 'one', session_id: s1 } });
    const reply = await call('POST', '/chat/a', { body: { prompt: 'two', session_id: s1 } });
    expect(reply.body).toEqual({
      status: true,
      data: { status: 200, message: 'ok', data: `echo[${s1}#2]: two` },
    });
    const other = await call('POST', '/chat/a', { body: { prompt: 'x', session_id: s2 } });
    expect(other.body).toMatchObject({ data: { data: `echo[${s2}#1]: x` } });
    expect(await call('POST', '/chat/a', { body: { prompt: 'x', session_id: 's-404' } })).toEqual({
      status: 404,
      body: { status: false, message: 'Session not found' },
    });
    expect(emu.requestsFor('sendMessage').map((r) => [r.sessionId, r.prompt])).toEqual([
      [s1, 'one'],
      [s1, 'two'],
      [s2, 'x'],
      ['s-404', 'x'],
    ]);
  });

  it('holds an answer or a new session until released; a reset releases what a test left held', async () => {
    const session = await newSession();
    const answer = emu.holdAnswerTo('wait for me');
    let answered = false;
    const reply = call('POST', '/chat/a', { body: { prompt: 'wait for me', session_id: session } }).then(
      (r) => {
        answered = true;
        return r;
      },
    );
    // Another prompt goes through.
    expect((await call('POST', '/chat/a', { body: { prompt: 'not me', session_id: session } })).status).toBe(
      200,
    );
    await waitFor(() => emu.requestsFor('sendMessage').length === 2, 'both prompts in');
    expect(answered).toBe(false);
    answer();
    expect((await reply).body).toMatchObject({ data: { data: expect.stringMatching(/: wait for me$/) } });
    // Released once: the same prompt later is answered at once.
    expect(
      (await call('POST', '/chat/a', { body: { prompt: 'wait for me', session_id: session } })).status,
    ).toBe(200);

    emu.holdSessionCreation();
    const created = newSession();
    await waitFor(() => emu.requestsFor('createSession').length === 2, 'the creation asked');
    emu.reset();
    expect(await created).toMatch(/^s-\d+$/);
  });

  it('measures per-session send concurrency', async () => {
    const s1 = await newSession();
    const s2 = await newSession();
    emu.setLatency(40, 'sendMessage');
    const send = (session: string) => call('POST', '/chat/a', { body: { prompt: 'p', session_id: session } });
    await send(s1);
    await send(s1);
    expect(emu.maxConcurrentSends(s1)).toBe(1);
    // The three answers wait until all three are in, however slowly a busy machine delivers them.
    let arrived = 0;
    let allIn = () => {};
    const allArrived = new Promise<void>((resolve) => {
      allIn = resolve;
    });
    emu.setReplyFn(async () => {
      if (++arrived === 3) allIn();
      await allArrived;
      return 'ok';
    });
    await Promise.all([send(s2), send(s2), send(s1)]);
    expect(emu.maxConcurrentSends(s2)).toBe(2);
    expect(emu.maxConcurrentSends(s1)).toBe(1);
    expect(emu.maxConcurrentSends()).toBe(2);
    expect(emu.maxInFlight).toBe(3);
  });

  it('applies injected failures the requested number of times', async () => {
    emu.injectFailure('createSession', { type: 'status-false', message: 'nope' }, 2);
    emu.injectFailure('createSession', { type: 'delay', ms: 30 });
    expect((await call('POST', '/session/a')).body).toEqual({ status: false, message: 'nope' });
    expect((await call('POST', '/session/a')).status).toBe(200);
    const started = Date.now();
    expect((await call('POST', '/session/a')).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    expect((await call('POST', '/session/a')).status).toBe(200);
    expect(emu.requestsFor('createSession').map((r) => r.injected ?? null)).toEqual([
      'status-false',
      'status-false',
      'delay',
      null,
    ]);
  });

  it('reports traffic to listeners', async () => {
    const events: [TrafficEvent['phase'], string, number | null][] = [];
    const unsubscribe = emu.onRequest((e) => events.push([e.phase, e.request.operation, e.request.status]));
    await newSession();
    unsubscribe();
    await newSession();
    expect(events).toEqual([
      ['start', 'createSession', null],
      ['end', 'createSession', 200],
    ]);
  });

  it('goes down and comes back on the same port with state intact', async () => {
    const session = await newSession();
    const url = emu.baseUrl;
    await emu.down();
    await expect(fetch(`${url}/session/a`)).rejects.toThrow();
    await emu.up();
    expect(emu.baseUrl).toBe(url);
    expect(emu.sessionsOf('a').map((s) => s.uuid)).toEqual([session]);
  });

  it('stop() ends hung requests promptly', async () => {
    const own = await AgentServiceEmulator.start();
    own.injectFailure('listSessions', { type: 'hang' });
    const pending = fetch(`${own.baseUrl}/session/x`, { headers: { private_key: own.apiKey } });
    // The request is hanging once the emulator has it (a fixed sleep was too short on a busy machine).
    await waitFor(() => own.requests.length === 1, 'the request to reach the emulator');
    const started = Date.now();
    await own.stop();
    await expect(pending).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(500);
    expect(own.requests[0]?.status).toBeNull();
  });
});
