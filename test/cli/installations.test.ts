import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Installation } from '@slack/bolt';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
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
import { openDatabase } from '../../src/store/database.js';
import { createSessionKeyv } from '../../src/store/keyv.js';
import { copyOfDataDir, freshDataDir, type TempDataDir } from '../helpers/embedded-store.js';
import { emptyWorkdir, entryPointArgs } from '../helpers/entry-point.js';

const CLI = entryPointArgs('src/cli/installations.ts');
const k1: TokenKey = { id: 'k1', key: randomBytes(32) };
const k2: TokenKey = { id: 'k2', key: randomBytes(32) };
const keysVar = (...keys: TokenKey[]) =>
  keys.map(({ id, key }) => `${id}:${key.toString('base64')}`).join(',');

function run(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...CLI, ...args], {
      env: { PATH: process.env.PATH, ...env },
      cwd: emptyWorkdir(),
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

const workspace: Installation = {
  team: { id: 'T1' },
  enterprise: undefined,
  isEnterpriseInstall: false,
  user: { id: 'U0ADMIN', token: undefined, scopes: undefined },
  bot: { id: 'B1', userId: 'U0BOT', token: 'xoxb-kept-secret', scopes: ['chat:write'] },
  authVersion: 'v2',
};

/** The stored rows, as the key ids that seal their bot token, and whether `keys` open them. */
async function storedWith(dir: string, keys: TokenKey[]): Promise<{ keyIds: string[]; tokens: string[] }> {
  const db = await openDatabase({ kind: 'embedded', dataDir: dir });
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
  // One workspace installed, its token sealed under k1: stored once, copied for each test.
  let installed: TempDataDir;
  let dir: TempDataDir;
  beforeAll(async () => {
    installed = await freshDataDir();
    const db = await openDatabase({ kind: 'embedded', dataDir: installed.path });
    await new InstallationStore({
      keyv: createSessionKeyv<InstallationRow>(db, INSTALLATIONS_NAMESPACE),
      cipher: new TokenCipher([k1]),
      lock: installationLock(db),
      refresher: new TokenRefresher({ clientId: '1.2', clientSecret: 'unused' }, 'http://127.0.0.1:9/api/'),
      onRefreshFailed: () => {},
    }).storeInstallation(workspace);
    await db.close();
  });
  afterAll(() => installed.remove());
  beforeEach(async () => {
    dir = await copyOfDataDir(installed);
  });
  afterEach(() => dir.remove());

  it('seals every token under the first key, so the old key can be dropped; a second run finds nothing to do', async () => {
    const first = await run(['reencrypt'], { DATA_DIR: dir.path, TOKEN_ENCRYPTION_KEYS: keysVar(k2, k1) });
    expect(first).toMatchObject({
      code: 0,
      out: 're-encrypted 1 installation(s) under key "k2"; 0 already were\n',
    });
    expect(await storedWith(dir.path, [k2])).toEqual({ keyIds: ['k2'], tokens: ['xoxb-kept-secret'] });

    const again = await run(['reencrypt'], { DATA_DIR: dir.path, TOKEN_ENCRYPTION_KEYS: keysVar(k2) });
    expect(again.out).toBe('re-encrypted 0 installation(s) under key "k2"; 1 already were\n');
  }, 90_000); // two runs of the command, each opening the embedded store

  it('refuses, naming the key, when a token opens with none of the keys given', async () => {
    const result = await run(['reencrypt'], { DATA_DIR: dir.path, TOKEN_ENCRYPTION_KEYS: keysVar(k2) });
    expect(result.code).toBe(1);
    expect(result.err).toContain('sealed under key "k1", which no configured key is');
    expect(result.err).not.toContain(k1.key.toString('base64'));
  });

  it('says how to use it, and needs TOKEN_ENCRYPTION_KEYS', async () => {
    expect((await run([], { DATA_DIR: dir.path })).err).toContain(
      'Usage: npm run installations -- reencrypt',
    );
    const missing = await run(['reencrypt'], { DATA_DIR: dir.path });
    expect(missing).toMatchObject({ code: 2 });
    expect(missing.err).toMatch(/^Configuration error: TOKEN_ENCRYPTION_KEYS is required/);
  });
});
