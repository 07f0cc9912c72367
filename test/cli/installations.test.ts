import { randomBytes } from 'node:crypto';
import type { Installation } from '@slack/bolt';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TokenKey } from '../../src/config/token-keys.js';
import { installationLock } from '../../src/installations/installation-lock.js';
import {
  INSTALLATIONS_NAMESPACE,
  type InstallationRow,
  sealedInstallations,
} from '../../src/installations/installation-rows.js';
import { InstallationStore } from '../../src/installations/installation-store.js';
import { openInstallation } from '../../src/installations/sealed-installation.js';
import { TokenCipher } from '../../src/installations/token-cipher.js';
import { TokenRefresher } from '../../src/installations/token-refresh.js';
import { type Database, openDatabase } from '../../src/store/database.js';
import { createSessionKeyv } from '../../src/store/keyv.js';
import { emptyStore } from '../helpers/embedded-store.js';
import { startEntryPoint } from '../helpers/entry-point.js';
import { type StoreChoice, storeVariables } from '../helpers/stack.js';
import { type TestStore, testStore } from '../helpers/stores.js';

const k1: TokenKey = { id: 'k1', key: randomBytes(32) };
const k2: TokenKey = { id: 'k2', key: randomBytes(32) };
const keysVar = (...keys: TokenKey[]) =>
  keys.map(({ id, key }) => `${id}:${key.toString('base64')}`).join(',');

async function run(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string; err: string }> {
  const started = startEntryPoint('src/cli/installations.ts', args, env, { timeoutMs: 60_000 });
  const { code } = await started.exited;
  return { code, out: started.stdout(), err: started.stderr() };
}

const workspace: Installation = {
  team: { id: 'T1' },
  enterprise: undefined,
  isEnterpriseInstall: false,
  user: { id: 'U0ADMIN', token: undefined, scopes: undefined },
  bot: { id: 'B1', userId: 'U0BOT', token: 'xoxb-kept-secret', scopes: ['chat:write'] },
  authVersion: 'v2',
};

function open(store: StoreChoice): Promise<Database> {
  return openDatabase(store.kind === 'embedded' ? store : { ...store, poolSize: 4 });
}

/** The stored rows, as the key ids that seal their bot token, and whether `keys` open them. */
async function storedWith(
  store: StoreChoice,
  keys: TokenKey[],
): Promise<{ keyIds: string[]; tokens: string[] }> {
  const db = await open(store);
  try {
    const cipher = new TokenCipher(keys);
    const keyIds: string[] = [];
    const tokens: string[] = [];
    for await (const { key, installation } of sealedInstallations(
      createSessionKeyv<InstallationRow>(db, INSTALLATIONS_NAMESPACE),
    )) {
      keyIds.push(String(installation.bot?.token).split('.')[1] ?? '');
      tokens.push(openInstallation(installation, cipher, key).bot?.token ?? '');
    }
    return { keyIds, tokens };
  } finally {
    await db.close();
  }
}

describe('npm run installations -- reencrypt', () => {
  // One store for the file: `testStore`, on PostgreSQL when the run has it, which the command opens for a
  // fraction of the CPU the embedded store takes (what is checked is the command, not the store).
  let store: TestStore;
  beforeAll(async () => {
    store = await testStore();
  });
  afterAll(() => store.remove());
  // Before each test, one workspace installed, its token sealed under k1. Closed again: the command opens
  // the store itself (an embedded one, one process at a time).
  beforeEach(async () => {
    const db = await open(store.store);
    try {
      await emptyStore(db);
      await new InstallationStore({
        keyv: createSessionKeyv<InstallationRow>(db, INSTALLATIONS_NAMESPACE),
        cipher: new TokenCipher([k1]),
        lock: installationLock(db),
        refresher: new TokenRefresher({ clientId: '1.2', clientSecret: 'unused' }, 'http://127.0.0.1:9/api/'),
        onRefreshFailed: () => {},
      }).storeInstallation(workspace);
    } finally {
      await db.close();
    }
  });

  it('seals every token under the first key, so the old key can be dropped; a second run finds nothing to do', async () => {
    const first = await run(['reencrypt'], {
      ...storeVariables(store.store),
      TOKEN_ENCRYPTION_KEYS: keysVar(k2, k1),
    });
    expect(first).toMatchObject({
      code: 0,
      out: 're-encrypted 1 installation(s) under key "k2"; 0 already were\n',
    });
    expect(await storedWith(store.store, [k2])).toEqual({ keyIds: ['k2'], tokens: ['xoxb-kept-secret'] });

    const again = await run(['reencrypt'], {
      ...storeVariables(store.store),
      TOKEN_ENCRYPTION_KEYS: keysVar(k2),
    });
    expect(again.out).toBe('re-encrypted 0 installation(s) under key "k2"; 1 already were\n');
  }, 90_000); // two runs of the command, each opening the store

  it('refuses, naming the key, when a token opens with none of the keys given', async () => {
    const result = await run(['reencrypt'], {
      ...storeVariables(store.store),
      TOKEN_ENCRYPTION_KEYS: keysVar(k2),
    });
    expect(result.code).toBe(1);
    expect(result.err).toContain('sealed under key "k1", which no configured key is');
    expect(result.err).not.toContain(k1.key.toString('base64'));
  });

  it('says how to use it, and needs TOKEN_ENCRYPTION_KEYS', async () => {
    const env = storeVariables(store.store);
    const [none, extra, unknown] = await Promise.all([
      run([], env),
      run(['reencrypt', 'now'], env),
      run(['reencrypt', '--force'], env),
    ]);
    for (const usage of [none, extra]) {
      expect(usage).toMatchObject({ code: 2 });
      expect(usage.err).toMatch(/^Usage: npm run installations -- reencrypt\n/);
    }
    // An unknown option is named, as `npm run sessions` names it.
    expect(unknown).toMatchObject({ code: 2 });
    expect(unknown.err).toMatch(/^Unknown option '--force'\.\nUsage: npm run installations -- reencrypt\n/);
    const missing = await run(['reencrypt'], storeVariables(store.store));
    expect(missing).toMatchObject({ code: 2 });
    expect(missing.err).toMatch(/^Configuration error: TOKEN_ENCRYPTION_KEYS is required/);
  });
});
