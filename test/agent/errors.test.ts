import { describe, expect, it } from 'vitest';
import { AgentServiceError, isAgentServiceError } from '../../src/agent/errors.js';

describe('AgentServiceError', () => {
  it('says the operation, what went wrong and the HTTP status in our own words', () => {
    const error = new AgentServiceError({ kind: 'unavailable', operation: 'sendMessage', httpStatus: 503 });
    expect(error.message).toBe('agent service sendMessage: service unavailable (HTTP 503)');
    expect(isAgentServiceError(error)).toBe(true);
    expect(isAgentServiceError(new Error('other'))).toBe(false);
  });

  it("keeps the service's words out of its message and of what a logger serialises", () => {
    const error = new AgentServiceError({
      kind: 'rejected',
      operation: 'sendMessage',
      httpStatus: 400,
      serviceMessage: 'prompt "my private question" refused',
    });
    expect(error.serviceMessage).toBe('prompt "my private question" refused');
    expect(error.message).not.toContain('private');
    expect(JSON.stringify(error)).not.toContain('private');
    expect(Object.keys(error)).not.toContain('serviceMessage');
  });

  it('clips its own detail to one short line', () => {
    const error = new AgentServiceError({
      kind: 'bad_response',
      operation: 'listSessions',
      detail: `line one\n\n  line two ${'x'.repeat(300)}`,
    });
    expect(error.message).toMatch(
      /^agent service listSessions: unexpected response \[line one line two x+…\]$/,
    );
    expect(error.message.length).toBeLessThan(260);
  });

  it('is delivered unless it certainly never reached the service', () => {
    expect(new AgentServiceError({ kind: 'timeout', operation: 'sendMessage' }).notDelivered).toBe(false);
    expect(
      new AgentServiceError({ kind: 'unavailable', operation: 'sendMessage', notDelivered: true })
        .notDelivered,
    ).toBe(true);
  });
});
