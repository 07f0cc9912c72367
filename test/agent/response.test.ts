import { describe, expect, it } from 'vitest';
import { AgentServiceError } from '../../src/agent/errors.js';
import { interpretResponse, transportFailure } from '../../src/agent/response.js';

const KEY = 'sk-secret';
const redact = (text: string) => text.split(KEY).join('[redacted]');
const response = (status: number, body: unknown, headers: Record<string, unknown> = {}) => ({
  status,
  data: typeof body === 'string' ? body : JSON.stringify(body),
  headers,
});

function failureOf(run: () => unknown): AgentServiceError {
  try {
    run();
  } catch (error) {
    if (error instanceof AgentServiceError) return error;
    throw error;
  }
  throw new Error('no failure');
}

describe('interpretResponse', () => {
  it('takes a success envelope, and `status: false` as a failure whatever the code', () => {
    expect(interpretResponse('sendMessage', response(200, { status: true, data: 'x' }), redact)).toEqual({
      status: true,
      data: 'x',
    });
    expect(
      failureOf(() => interpretResponse('sendMessage', response(200, { status: false }), redact)).kind,
    ).toBe('rejected');
  });

  it('reads a lost session, a wrong URL, refused credentials and an unreadable body apart', () => {
    const kind = (status: number, body: unknown, operation: 'sendMessage' | 'listSessions' = 'sendMessage') =>
      failureOf(() => interpretResponse(operation, response(status, body), redact)).kind;
    expect(kind(404, { status: false, message: 'session not found' })).toBe('session_not_found');
    expect(kind(404, '<html>Not Found</html>')).toBe('not_found');
    expect(kind(404, { status: false, message: 'agent unknown' })).toBe('not_found');
    expect(kind(401, {})).toBe('unauthorized');
    expect(kind(200, 'not json')).toBe('bad_response');
    expect(kind(200, [1, 2])).toBe('bad_response');
    expect(kind(503, {})).toBe('unavailable');
  });

  it('reads a lost session only from a refusal that says so: a server error may come after the prompt ran', () => {
    const kind = (
      status: number,
      message: string,
      operation: 'sendMessage' | 'deleteSession' = 'sendMessage',
    ) =>
      failureOf(() => interpretResponse(operation, response(status, { status: false, message }), redact))
        .kind;
    // Taken for a lost session, the prompt would be sent again in a new one (and a deletion taken as done).
    for (const status of [500, 200]) {
      expect(kind(status, 'session store returned an invalid response')).not.toBe('session_not_found');
      expect(kind(status, 'could not close the session if expired', 'deleteSession')).not.toBe(
        'session_not_found',
      );
    }
    expect(kind(500, 'Session not found')).toBe('rejected');
    expect(kind(404, 'Record not found')).toBe('session_not_found');
    expect(kind(410, 'Gone')).toBe('session_not_found');
    // The service's own words for a session it does not have, before or after the word.
    for (const message of [
      'Session not found',
      'Session 3f2a-77 does not exist',
      'session_id is invalid',
      'Session has expired',
      'Invalid session_id',
      'No such session: 3f2a-77',
      'No session found',
    ]) {
      expect(kind(400, message), message).toBe('session_not_found');
      expect(kind(200, message), message).toBe('session_not_found');
    }
  });

  it('reads a huge failure message at once', { timeout: 2_000 }, () => {
    // A megabyte of the service's words, as much as a reply may carry: matched in full, this took minutes.
    const message = 'session '.repeat(131_072);
    expect(
      failureOf(() => interpretResponse('sendMessage', response(400, { status: false, message }), redact))
        .kind,
    ).toBe('rejected');
  });

  it("honours Retry-After and keeps the API key out of the service's words", () => {
    const error = failureOf(() =>
      interpretResponse(
        'sendMessage',
        response(429, { message: `bad key ${KEY}` }, { 'retry-after': '2' }),
        redact,
      ),
    );
    expect(error.retryAfterMs).toBe(2_000);
    expect(error.serviceMessage).toBe('bad key [redacted]');
  });
});

describe('transportFailure', () => {
  const seen = { timedOutAfterMs: undefined, tooLarge: false, maxResponseBytes: 10 };

  it('says whether the prompt can have reached the service', () => {
    const refused = Object.assign(new Error('connect'), { code: 'ECONNREFUSED' });
    expect(transportFailure('sendMessage', refused, seen).notDelivered).toBe(true);
    const reset = Object.assign(new Error('socket'), { code: 'ECONNRESET' });
    expect(transportFailure('sendMessage', reset, seen)).toMatchObject({
      kind: 'unavailable',
      notDelivered: false,
    });
    // Node's dual-stack connect wraps the codes of each address.
    const both = Object.assign(new Error('all failed'), { errors: [refused, refused] });
    expect(transportFailure('sendMessage', both, seen).notDelivered).toBe(true);
  });

  it('names a timeout and a body too large', () => {
    expect(transportFailure('sendMessage', new Error(), { ...seen, timedOutAfterMs: 5 }).kind).toBe(
      'timeout',
    );
    expect(transportFailure('sendMessage', new Error(), { ...seen, tooLarge: true }).kind).toBe(
      'bad_response',
    );
  });
});
