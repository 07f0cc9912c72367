import type Keyv from 'keyv';
import { StoreError } from '../store/store-error.js';
import type { InstallationKey } from './installation-key.js';
import type { InstallationLock } from './installation-lock.js';
import { resealInstallation, type SealedInstallation } from './sealed-installation.js';
import type { TokenCipher } from './token-cipher.js';
import type { TokenLife } from './token-refresh.js';

/** The Keyv namespace of installations, in the store's Keyv table. */
export const INSTALLATIONS_NAMESPACE = 'installation';

/** What the Keyv namespace holds under an installation's key. */
export type InstallationRow =
  | { installation: SealedInstallation; botTokenLife?: TokenLife; storedAt: string }
  /** A removed installation: only a new install writes over it (see `forget`). */
  | { removedAt: string }
  /** `served-by:<team>`: a workspace whose events an installation of another key answers (an org install). */
  | { servedBy: InstallationKey };

function isInstallationKey(key: unknown): key is InstallationKey {
  return typeof key === 'string' && /^(enterprise|team):/.test(key);
}

export type LiveRow = Extract<InstallationRow, { installation: unknown }>;

export function isLiveRow(row: InstallationRow | undefined): row is LiveRow {
  return row !== undefined && 'installation' in row;
}

/** Every stored installation, sealed, for the start-up check and the re-encrypt command. */
export async function* sealedInstallations(
  keyv: Keyv<InstallationRow>,
): AsyncGenerator<{ key: InstallationKey; installation: SealedInstallation }> {
  if (!keyv.iterator) throw new Error('the installation store cannot list its rows');
  // A page the store fails to read ends Keyv's iteration as if there were no more rows, and only says so as
  // an 'error' event: without this, a re-encryption would report success having done part of the rows.
  let failure: unknown;
  const onError = (error: unknown) => {
    failure ??= error;
  };
  keyv.on('error', onError);
  try {
    for await (const [key, row] of keyv.iterator(INSTALLATIONS_NAMESPACE)) {
      if (isInstallationKey(key) && isLiveRow(row)) yield { key, installation: row.installation };
    }
  } finally {
    keyv.off('error', onError);
  }
  if (failure !== undefined)
    throw new StoreError(
      `listing the stored installations failed partway: ${failure instanceof Error ? failure.message : String(failure)}`,
      { cause: failure },
    );
}

/**
 * Seals every stored installation under the current key (the re-encrypt command), each under its lock and only
 * if it is unchanged since it was read (a refresh or a removal meanwhile wins). Throws TokenCipherError when a
 * token opens with no configured key.
 */
export async function resealInstallations(
  keyv: Keyv<InstallationRow>,
  lock: InstallationLock,
  cipher: TokenCipher,
): Promise<{ resealed: number; current: number }> {
  const counts = { resealed: 0, current: 0 };
  for await (const { key, installation } of sealedInstallations(keyv)) {
    const resealed = resealInstallation(installation, cipher, key);
    if (!resealed) {
      counts.current++;
      continue;
    }
    await lock(key, async () => {
      const row = await keyv.get(key);
      if (!isLiveRow(row) || JSON.stringify(row.installation) !== JSON.stringify(installation)) return;
      await keyv.set(key, { ...row, installation: resealed });
      counts.resealed++;
    });
  }
  return counts;
}
