import { ConfigError } from './errors.js';

/** A key that seals stored Slack tokens (AES-256-GCM), named so that a sealed token says which key opens it. */
export interface TokenKey {
  readonly id: string;
  /** 32 bytes. */
  readonly key: Buffer;
}

const VARIABLE = 'TOKEN_ENCRYPTION_KEYS';
const KEY_BYTES = 32;
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
// Standard base64 (`openssl rand -base64 32`) or its URL-safe alphabet, padded or not.
const BASE64 = /^(?:[A-Za-z0-9+/]+|[A-Za-z0-9_-]+)={0,2}$/;
const FORMAT = 'comma-separated <key-id>:<base64 of 32 bytes>, e.g. k1:$(openssl rand -base64 32)';

/**
 * Parses TOKEN_ENCRYPTION_KEYS: the first key seals, every key opens (so a key can be rotated). Throws one
 * ConfigError naming the variable; key material is never echoed, and a key id only once it is known to be one
 * (a malformed entry may be a key pasted without its id).
 */
export function parseTokenKeys(value: string): TokenKey[] {
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) throw problem(`must list at least one key (${FORMAT})`);
  const keys: TokenKey[] = [];
  for (const [index, entry] of entries.entries()) {
    const which = `entry ${index + 1}`;
    const colon = entry.indexOf(':');
    if (colon === -1) throw problem(`${which} is not <key-id>:<base64 key> (${FORMAT})`);
    const id = entry.slice(0, colon).trim();
    const encoded = entry.slice(colon + 1).trim();
    if (!KEY_ID.test(id)) throw problem(`${which} has a bad key id: use 1 to 32 letters, digits, _ or -`);
    if (keys.some((key) => key.id === id)) throw problem(`names key "${id}" twice: key ids must be unique`);
    const key = BASE64.test(encoded) ? Buffer.from(encoded, 'base64') : undefined;
    if (key === undefined) throw problem(`key "${id}" is not base64 (${FORMAT})`);
    if (key.length !== KEY_BYTES) {
      throw problem(
        `key "${id}" is ${key.length} bytes, not ${KEY_BYTES}: make one with openssl rand -base64 32`,
      );
    }
    keys.push({ id, key });
  }
  return keys;
}

function problem(text: string): ConfigError {
  return new ConfigError([{ variable: VARIABLE, problem: text }]);
}
