import { randomBytes } from 'node:crypto';
import type { Installation } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import type { TokenKey } from '../../src/config/token-keys.js';
import {
  openInstallation,
  resealInstallation,
  type SealedInstallation,
  sealInstallation,
} from '../../src/installations/sealed-installation.js';
import { TokenCipher, TokenCipherError } from '../../src/installations/token-cipher.js';

const k1: TokenKey = { id: 'k1', key: randomBytes(32) };
const k2: TokenKey = { id: 'k2', key: randomBytes(32) };

/** A workspace install with token rotation on, as Bolt's installer hands it over. */
const workspace: Installation = {
  team: { id: 'T1', name: 'One' },
  enterprise: { id: 'E1', name: 'Org' },
  user: { id: 'U1', token: 'xoxp-user-1', refreshToken: 'xoxe-user-1', expiresAt: 1_900_000_000, scopes: [] },
  bot: {
    id: 'B1',
    userId: 'U0BOT',
    token: 'xoxe.xoxb-bot-1',
    refreshToken: 'xoxe-1-bot-1',
    expiresAt: 1_900_000_000,
    scopes: ['chat:write'],
  },
  appId: 'A1',
  tokenType: 'bot',
  isEnterpriseInstall: false,
  authVersion: 'v2',
};

/** An org-wide install: no team, and no user token or refresh tokens. */
const org: Installation = {
  team: undefined,
  enterprise: { id: 'E1', name: 'Org' },
  user: { id: 'U2', token: undefined, scopes: undefined },
  bot: { id: 'B2', userId: 'U0BOT', token: 'xoxb-org', scopes: ['chat:write'] },
  isEnterpriseInstall: true,
  authVersion: 'v2',
};

/** Where each is kept (installation-key.ts): a workspace install by its team, an org install by its org. */
const WORKSPACE_KEY = 'team:T1';
const ORG_KEY = 'enterprise:E1';
const keyOf = (installation: Installation) => (installation.isEnterpriseInstall ? ORG_KEY : WORKSPACE_KEY);

const TOKENS = ['xoxp-user-1', 'xoxe-user-1', 'xoxe.xoxb-bot-1', 'xoxe-1-bot-1', 'xoxb-org'];

function rejection(open: () => unknown): TokenCipherError {
  try {
    open();
  } catch (error) {
    expect(error).toBeInstanceOf(TokenCipherError);
    return error as TokenCipherError;
  }
  throw new Error('expected the installation not to open');
}

describe('sealed installations', () => {
  it('seal every token field and nothing else; opening gives the installation back', () => {
    const cipher = new TokenCipher([k1]);
    for (const installation of [workspace, org]) {
      const sealed = sealInstallation(installation, cipher);
      const stored = JSON.stringify(sealed);
      for (const token of TOKENS) expect(stored).not.toContain(token);
      expect(sealed.bot?.id).toBe(installation.bot?.id);
      expect(sealed.user.id).toBe(installation.user.id);
      expect(sealed.enterprise).toEqual(installation.enterprise);
      // As stored and read back: a JSON round trip.
      const read = JSON.parse(stored) as SealedInstallation;
      expect(openInstallation(read, cipher, keyOf(installation))).toEqual(installation);
    }
  });

  it('leave absent tokens absent (Bolt reads a missing refresh token as "no rotation")', () => {
    const sealed = sealInstallation(org, new TokenCipher([k1]));
    expect(sealed.user.token).toBeUndefined();
    expect('refreshToken' in (sealed.bot ?? {})).toBe(false);
    expect('refreshToken' in sealed.user).toBe(false);
  });

  it('do not open with a token copied from another installation', () => {
    const cipher = new TokenCipher([k1]);
    const other = sealInstallation({ ...workspace, team: { id: 'T2' } }, cipher);
    const target = sealInstallation(workspace, cipher);
    const copied: SealedInstallation = { ...target, bot: { ...target.bot!, token: other.bot!.token } };
    expect(rejection(() => openInstallation(copied, cipher, WORKSPACE_KEY)).failure).toBe('rejected');
  });

  it("do not open when an installation's ids are changed under its tokens", () => {
    const cipher = new TokenCipher([k1]);
    const sealed = sealInstallation(org, cipher);
    // The org install's row relabelled as a workspace install of the org.
    const moved: SealedInstallation = { ...sealed, team: { id: 'T9' }, isEnterpriseInstall: false };
    expect(rejection(() => openInstallation(moved, cipher, 'team:T9')).failure).toBe('rejected');
  });

  it("do not open a whole row copied under another workspace's key (its events would get this token)", () => {
    const cipher = new TokenCipher([k1]);
    const sealed = sealInstallation(workspace, cipher);
    expect(openInstallation(sealed, cipher, WORKSPACE_KEY)).toEqual(workspace);
    expect(rejection(() => openInstallation(sealed, cipher, 'team:T2')).failure).toBe('rejected');
    expect(rejection(() => openInstallation(sealed, cipher, ORG_KEY)).failure).toBe('rejected');
  });

  it('do not open with the bot token moved into the user token field', () => {
    const cipher = new TokenCipher([k1]);
    const sealed = sealInstallation(workspace, cipher);
    const swapped: SealedInstallation = { ...sealed, user: { ...sealed.user, token: sealed.bot!.token } };
    expect(rejection(() => openInstallation(swapped, cipher, WORKSPACE_KEY)).failure).toBe('rejected');
  });

  it('refuse one sealed under a key no longer configured, naming it', () => {
    const sealed = sealInstallation(workspace, new TokenCipher([k1]));
    const error = rejection(() => openInstallation(sealed, new TokenCipher([k2]), WORKSPACE_KEY));
    expect(error.failure).toBe('unknown_key');
    expect(error.keyId).toBe('k1');
  });

  it('reseal under the new key after a rotation, and report nothing to do once done', () => {
    const old = sealInstallation(workspace, new TokenCipher([k1]));
    const rotated = new TokenCipher([k2, k1]);
    const resealed = resealInstallation(old, rotated, WORKSPACE_KEY);
    expect(resealed).toBeDefined();
    const tokens = [resealed?.bot?.token, resealed?.bot?.refreshToken, resealed?.user.token];
    for (const token of tokens) expect(token?.startsWith('v1.k2.')).toBe(true);
    expect(resealInstallation(resealed!, rotated, WORKSPACE_KEY)).toBeUndefined();
    // The old key can now go.
    expect(openInstallation(resealed!, new TokenCipher([k2]), WORKSPACE_KEY)).toEqual(workspace);
  });

  it('reseal an installation only partly under the new key (a reseal cut short)', () => {
    const old = sealInstallation(workspace, new TokenCipher([k1]));
    const rotated = new TokenCipher([k2, k1]);
    const half: SealedInstallation = { ...old, bot: sealInstallation(workspace, rotated).bot! };
    expect(
      openInstallation(
        resealInstallation(half, rotated, WORKSPACE_KEY)!,
        new TokenCipher([k2]),
        WORKSPACE_KEY,
      ),
    ).toEqual(workspace);
  });
});
