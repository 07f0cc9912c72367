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
