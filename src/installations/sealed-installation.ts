import type { Installation } from '@slack/bolt';
import { type InstallationKey, installationKeyOf } from './installation-key.js';
import type { TokenCipher } from './token-cipher.js';

declare const sealedToken: unique symbol;
/** A token as stored: sealed by TokenCipher, never usable as a token. */
export type SealedToken = string & { readonly [sealedToken]: true };

type Bot = NonNullable<Installation['bot']>;
type User = Installation['user'];

/**
 * An installation as stored: every token field (bot.token, bot.refreshToken, user.token, user.refreshToken)
 * sealed, the rest as Bolt gave it. An open Installation does not type-check as one.
 */
export type SealedInstallation = Omit<Installation, 'bot' | 'user'> & {
  bot?: Omit<Bot, 'token' | 'refreshToken'> & { token: SealedToken; refreshToken?: SealedToken };
  user: Omit<User, 'token' | 'refreshToken'> & { token: SealedToken | undefined; refreshToken?: SealedToken };
};

type TokenField = 'bot.token' | 'bot.refreshToken' | 'user.token' | 'user.refreshToken';

/**
 * The associated data of one token: the key the installation is stored under, its ids and the field, so a
 * sealed token copied to another installation's row, to another field of the same row, or a whole row copied
 * under another workspace's key, does not open.
 */
function associatedData(
  storedUnder: InstallationKey,
  installation: Installation | SealedInstallation,
  field: TokenField,
): string {
  return `${storedUnder}|${installation.enterprise?.id ?? ''}/${installation.team?.id ?? ''}/${field}`;
}

/** Where an installation is kept, by its own ids. */
function storageKeyOf(installation: Installation): InstallationKey {
  const key = installationKeyOf({
    teamId: installation.team?.id,
    enterpriseId: installation.enterprise?.id,
    isEnterpriseInstall: installation.isEnterpriseInstall === true,
  });
  if (key === undefined) throw new Error('an installation without the id it is kept under');
  return key;
}

interface Tokens {
  token?: string | undefined;
  refreshToken?: string | undefined;
}

/**
 * A copy of `installation` with every token present passed through `map`; absent ones stay absent (Bolt tells
 * "no refresh token" by it). The one place that knows which fields are tokens.
 */
function mapTokens(
  installation: Installation | SealedInstallation,
  map: (value: string, field: TokenField) => string,
): Record<string, unknown> {
  const role = <R extends Tokens>(tokens: R, name: 'bot' | 'user'): R => {
    const out = { ...tokens };
    if (tokens.token !== undefined) out.token = map(tokens.token, `${name}.token`);
    if (tokens.refreshToken !== undefined)
      out.refreshToken = map(tokens.refreshToken, `${name}.refreshToken`);
    return out;
  };
  const { bot, user } = installation;
  return { ...installation, ...(bot && { bot: role(bot, 'bot') }), user: role(user, 'user') };
}

// The casts below are where a token changes kind: every token field goes through mapTokens.

export function sealInstallation(installation: Installation, cipher: TokenCipher): SealedInstallation {
  const storedUnder = storageKeyOf(installation);
  return mapTokens(installation, (value, field) =>
    cipher.seal(value, associatedData(storedUnder, installation, field)),
  ) as SealedInstallation;
}

/**
 * The installation read from under `storedUnder`. Throws TokenCipherError when a token does not open (no
 * configured key, not this installation's token, or a row that belongs under another key).
 */
export function openInstallation(
  sealed: SealedInstallation,
  cipher: TokenCipher,
  storedUnder: InstallationKey,
): Installation {
  return mapTokens(sealed, (value, field) =>
    cipher.open(value, associatedData(storedUnder, sealed, field)),
  ) as unknown as Installation;
}

/** The installation sealed under the current key; undefined when every token already is. */
export function resealInstallation(
  sealed: SealedInstallation,
  cipher: TokenCipher,
  storedUnder: InstallationKey,
): SealedInstallation | undefined {
  const tokens = [sealed.bot?.token, sealed.bot?.refreshToken, sealed.user.token, sealed.user.refreshToken];
  if (tokens.every((token) => token === undefined || cipher.isSealedWithCurrentKey(token))) return undefined;
  return sealInstallation(openInstallation(sealed, cipher, storedUnder), cipher);
}
