import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { TokenKey } from '../../src/config/token-keys.js';
import { TokenCipher, TokenCipherError } from '../../src/installations/token-cipher.js';

const k1: TokenKey = { id: 'k1', key: randomBytes(32) };
const k2: TokenKey = { id: 'k2', key: randomBytes(32) };
const TOKEN = 'xoxb-17-secret-token';
const AD = 'E1/T1/bot.token';

function failureOf(open: () => unknown): TokenCipherError {
  try {
    open();
  } catch (error) {
    expect(error).toBeInstanceOf(TokenCipherError);
    expect((error as Error).message).not.toContain(TOKEN);
    return error as TokenCipherError;
  }
  throw new Error('expected the sealed token not to open');
}

/** `sealed` with one base64url character of part `index` changed. */
function tampered(sealed: string, index: number): string {
  const parts = sealed.split('.');
  const part = parts[index] ?? '';
  parts[index] = `${part.startsWith('A') ? 'B' : 'A'}${part.slice(1)}`;
  return parts.join('.');
}

describe('TokenCipher', () => {
  it('opens what it sealed, and the sealed form holds neither the token nor the key', () => {
    const cipher = new TokenCipher([k1]);
    const sealed = cipher.seal(TOKEN, AD);
    expect(sealed).toMatch(/^v1\.k1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain(TOKEN);
    expect(sealed).not.toContain(k1.key.toString('base64url'));
    expect(cipher.open(sealed, AD)).toBe(TOKEN);
  });

  it('seals the same token differently each time (a fresh IV)', () => {
    const cipher = new TokenCipher([k1]);
    expect(cipher.seal(TOKEN, AD)).not.toBe(cipher.seal(TOKEN, AD));
  });

  it('refuses a sealed token changed anywhere: IV, tag or ciphertext', () => {
    const cipher = new TokenCipher([k1]);
    const sealed = cipher.seal(TOKEN, AD);
    for (const part of [2, 3, 4]) {
      expect(failureOf(() => cipher.open(tampered(sealed, part), AD)).failure).toBe('rejected');
    }
  });

  it('refuses a sealed token opened for another place (another installation, another field)', () => {
    const cipher = new TokenCipher([k1]);
    const sealed = cipher.seal(TOKEN, AD);
    const error = failureOf(() => cipher.open(sealed, 'E1/T2/bot.token'));
    expect(error.failure).toBe('rejected');
    expect(error.message).toBe(
      'key "k1" does not open a stored token: the key with that id is not the one that sealed it, ' +
        'or the token was changed or moved from another installation',
    );
    expect(failureOf(() => cipher.open(sealed, 'E1/T1/user.token')).failure).toBe('rejected');
  });

  it('names a key id no configured key has', () => {
    const sealed = new TokenCipher([k1]).seal(TOKEN, AD);
    const error = failureOf(() => new TokenCipher([k2]).open(sealed, AD));
    expect(error.failure).toBe('unknown_key');
    expect(error.keyId).toBe('k1');
    expect(error.message).toBe(
      'a stored token is sealed under key "k1", which no configured key is: no key opens it',
    );
  });

  it('refuses when the key under that id is another key', () => {
    const sealed = new TokenCipher([k1]).seal(TOKEN, AD);
    const impostor = new TokenCipher([{ id: 'k1', key: randomBytes(32) }]);
    expect(failureOf(() => impostor.open(sealed, AD)).failure).toBe('rejected');
  });

  it('refuses what is not a sealed token, such as a token stored in the clear', () => {
    const cipher = new TokenCipher([k1]);
    for (const stored of [TOKEN, '', 'v2.k1.a.b.c', cipher.seal(TOKEN, AD).replace(/^v1\./, 'v1.x.')]) {
      const error = failureOf(() => cipher.open(stored, AD));
      expect(error.failure).toBe('malformed');
      expect(error.message).toBe('a stored token is not sealed in the v1 format');
    }
  });

  it('rotates: the new key seals, the old one still opens, and says which tokens need resealing', () => {
    const before = new TokenCipher([k1]);
    const old = before.seal(TOKEN, AD);
    const rotated = new TokenCipher([k2, k1]);
    expect(rotated.currentKeyId).toBe('k2');
    expect(rotated.open(old, AD)).toBe(TOKEN);
    expect(rotated.isSealedWithCurrentKey(old)).toBe(false);
    const resealed = rotated.seal(rotated.open(old, AD), AD);
    expect(resealed.startsWith('v1.k2.')).toBe(true);
    expect(rotated.isSealedWithCurrentKey(resealed)).toBe(true);
    // Once the old key is dropped, only the resealed token opens.
    const after = new TokenCipher([k2]);
    expect(after.open(resealed, AD)).toBe(TOKEN);
    expect(failureOf(() => after.open(old, AD)).failure).toBe('unknown_key');
  });

  it('seals and opens empty and non-ASCII text unchanged', () => {
    const cipher = new TokenCipher([k1]);
    for (const text of ['', 'jeton-ünïcødé-🔑']) expect(cipher.open(cipher.seal(text, AD), AD)).toBe(text);
  });

  it('needs at least one key, of 32 bytes, each id once', () => {
    expect(() => new TokenCipher([])).toThrow('at least one key');
    expect(() => new TokenCipher([{ id: 'short', key: randomBytes(16) }])).toThrow('not 32 bytes');
    expect(() => new TokenCipher([k1, { ...k2, id: 'k1' }])).toThrow('given twice');
  });
});
