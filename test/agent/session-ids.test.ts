import { describe, expect, it } from 'vitest';
import { enc, isValidSessionId, requireId, requireSessionId } from '../../src/agent/session-ids.js';

describe('session ids in URL paths', () => {
  it.each(['s-1', '0b6f3c1e-9a7d-4c55-8e0e-7c3f1a2b9d10', 'a/b', 'with space', 'ü', 'x'.repeat(256)])(
    'accepts %j',
    (id) => {
      expect(isValidSessionId(id)).toBe(true);
    },
  );

  it.each(['', '.', '..', 'x'.repeat(257), 'new\nline', 'nul\u0000', 'del\u007f'])('refuses %j', (id) => {
    expect(isValidSessionId(id)).toBe(false);
    expect(() => requireSessionId(id)).toThrow(TypeError);
  });

  it('percent-encodes a segment, so it stays one segment', () => {
    expect(enc('a/b?c#d')).toBe('a%2Fb%3Fc%23d');
    expect(enc('s-1')).toBe('s-1');
  });

  it('refuses an empty id, naming it', () => {
    expect(() => requireId('agentId', '')).toThrow('agentId must be a non-empty string');
    expect(() => requireId('agentId', 'agent-main')).not.toThrow();
  });
});
