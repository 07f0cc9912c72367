import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { TokenKey } from '../config/token-keys.js';

const ALGORITHM = 'aes-256-gcm';
const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export type TokenCipherFailure = 'malformed' | 'unknown_key' | 'rejected';

/** A sealed token that cannot be opened. The message names the key id at most, never the token. */
export class TokenCipherError extends Error {
  override readonly name = 'TokenCipherError';

  constructor(
    readonly failure: TokenCipherFailure,
    message: string,
    readonly keyId?: string,
  ) {
    super(message);
  }
}

interface SealedParts {
  keyId: string;
  iv: Buffer;
  tag: Buffer;
  ciphertext: Buffer;
}

/**
 * Seals tokens for storage: AES-256-GCM under the first key, with a fresh 12-byte IV each time, as
 * `v1.<keyId>.<iv>.<tag>.<ciphertext>` (base64url). The associated data names where the token belongs (its
 * installation and field), so a sealed token copied anywhere else does not open. Every key opens what it
 * sealed, so keys can be rotated: put the new one first, reseal, then drop the old one.
 */
export class TokenCipher {
  private readonly current: TokenKey;
  private readonly byId: ReadonlyMap<string, Buffer>;

  constructor(keys: readonly TokenKey[]) {
    const [first] = keys;
    if (first === undefined) throw new Error('TokenCipher needs at least one key');
    const byId = new Map<string, Buffer>();
    for (const { id, key } of keys) {
      if (byId.has(id)) throw new Error(`TokenCipher: key id "${id}" is given twice`);
      if (key.length !== 32) throw new Error(`TokenCipher: key "${id}" is not 32 bytes`);
      byId.set(id, key);
    }
    this.current = first;
    this.byId = byId;
  }

  /** The id of the key that seals. */
  get currentKeyId(): string {
    return this.current.id;
  }

  seal(plaintext: string, associatedData: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.current.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(associatedData, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [VERSION, this.current.id, iv, tag, ciphertext]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
  }

  open(sealed: string, associatedData: string): string {
    const { keyId, iv, tag, ciphertext } = parse(sealed);
    const key = this.byId.get(keyId);
    if (key === undefined) {
      throw new TokenCipherError(
        'unknown_key',
        `a stored token is sealed under key "${keyId}", which no configured key is: no key opens it`,
        keyId,
      );
    }
    const decipher = createDecipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
    } catch {
      // GCM says only that it does not authenticate: another key under the same id, a changed token, or a
      // token moved from another installation or field.
      throw new TokenCipherError(
        'rejected',
        `key "${keyId}" does not open a stored token: the key with that id is not the one that sealed it, ` +
          'or the token was changed or moved from another installation',
        keyId,
      );
    }
  }

  /** Whether `sealed` is under the sealing key already (a reseal would change nothing). */
  isSealedWithCurrentKey(sealed: string): boolean {
    return parse(sealed).keyId === this.current.id;
  }
}

function parse(sealed: string): SealedParts {
  const parts = sealed.split('.');
  const [version, keyId, iv, tag, ciphertext] = parts;
  const decode = (part: string) => Buffer.from(part, 'base64url');
  const base64url = /^[A-Za-z0-9_-]*$/;
  if (
    parts.length !== 5 ||
    version !== VERSION ||
    !keyId ||
    iv === undefined ||
    tag === undefined ||
    ciphertext === undefined ||
    ![iv, tag, ciphertext].every((part) => base64url.test(part)) ||
    decode(iv).length !== IV_BYTES ||
    decode(tag).length !== TAG_BYTES
  ) {
    throw new TokenCipherError('malformed', `a stored token is not sealed in the ${VERSION} format`);
  }
  return { keyId, iv: decode(iv), tag: decode(tag), ciphertext: decode(ciphertext) };
}
