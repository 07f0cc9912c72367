import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { parseTokenKeys } from '../../src/config/token-keys.js';

const keyA = randomBytes(32);
const keyB = randomBytes(32);

/** The one line an operator would see, checked to never hold the key material it was given. */
function refusal(value: string): string {
  try {
    parseTokenKeys(value);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const lines = (error as ConfigError).lines;
    expect(lines).toHaveLength(1);
    for (const secret of [keyA.toString('base64'), keyB.toString('base64'), 'c2hvcnQ=']) {
      expect(lines[0]).not.toContain(secret);
    }
    return lines[0] ?? '';
  }
  throw new Error(`expected ${value} to be refused`);
}

describe('parseTokenKeys', () => {
  it('reads the keys in order, the first being the one that seals', () => {
    const keys = parseTokenKeys(`new:${keyA.toString('base64')}, old:${keyB.toString('base64')}`);
    expect(keys.map((key) => key.id)).toEqual(['new', 'old']);
    expect(keys[0]?.key.equals(keyA)).toBe(true);
    expect(keys[1]?.key.equals(keyB)).toBe(true);
  });

  it('takes what `openssl rand -base64 32` prints, and the URL-safe alphabet without padding', () => {
    const printed = keyA.toString('base64');
    expect(printed).toHaveLength(44);
    expect(parseTokenKeys(`k1:${printed}`)[0]?.key.equals(keyA)).toBe(true);
    expect(parseTokenKeys(`k_2-b:${keyB.toString('base64url')}`)[0]?.key.equals(keyB)).toBe(true);
  });

  it('refuses an empty list', () => {
    expect(refusal(' , ')).toMatch(
      /^Configuration error: TOKEN_ENCRYPTION_KEYS must list at least one key \(comma-separated <key-id>:<base64 of 32 bytes>/,
    );
  });

  it('refuses a key without its id, without echoing the key', () => {
    expect(refusal(keyA.toString('base64'))).toBe(
      'Configuration error: TOKEN_ENCRYPTION_KEYS entry 1 is not <key-id>:<base64 key> ' +
        '(comma-separated <key-id>:<base64 of 32 bytes>, e.g. k1:$(openssl rand -base64 32))',
    );
  });

  it('refuses a bad key id without echoing it (it may be key material in the wrong place)', () => {
    expect(refusal(`k1:${keyA.toString('base64')},${keyB.toString('base64')}:k2`)).toBe(
      'Configuration error: TOKEN_ENCRYPTION_KEYS entry 2 has a bad key id: use 1 to 32 letters, digits, _ or -',
    );
    expect(refusal(`${'k'.repeat(33)}:${keyA.toString('base64')}`)).toContain('entry 1 has a bad key id');
  });

  it('refuses a key id given twice', () => {
    expect(refusal(`k1:${keyA.toString('base64')},k1:${keyB.toString('base64')}`)).toBe(
      'Configuration error: TOKEN_ENCRYPTION_KEYS names key "k1" twice: key ids must be unique',
    );
  });

  it('refuses a key that is not base64', () => {
    expect(refusal('k1:not base64!')).toContain('key "k1" is not base64');
  });

  it('refuses a key of the wrong length, saying how to make one', () => {
    expect(refusal('k1:c2hvcnQ=')).toBe(
      'Configuration error: TOKEN_ENCRYPTION_KEYS key "k1" is 5 bytes, not 32: make one with openssl rand -base64 32',
    );
    expect(refusal(`k1:${randomBytes(33).toString('base64')}`)).toContain('is 33 bytes, not 32');
  });
});
