import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Installation } from '@slack/bolt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installationLock } from '../../src/installations/installation-lock.js';
import {
  INSTALLATIONS_NAMESPACE,
  type InstallationRow,
  sealedInstallations,
} from '../../src/installations/installation-rows.js';
import { InstallationStore } from '../../src/installations/installation-store.js';
import { sealInstallation } from '../../src/installations/sealed-installation.js';
import { TokenCipher } from '../../src/installations/token-cipher.js';
import { TokenRefresher } from '../../src/installations/token-refresh.js';
import { type Database, openDatabase } from '../../src/store/database.js';
import { createSessionKeyv } from '../../src/store/keyv.js';
import { migrate } from '../../src/store/schema.js';
import { TcpProxy } from '../fakes/tcp-proxy.js';
import { createTestDatabase, shouldRunPostgresTests } from '../helpers/postgres.js';
import { forEachStore } from '../helpers/stores.js';

const runPostgres = await shouldRunPostgresTests();
const cipher = new TokenCipher([{ id: 'k1', key: randomBytes(32) }]);

function installation(fields: {
  teamId?: string;
  enterpriseId?: string;
  org?: boolean;
  token: string;
  botUserId?: string;
}): Installation {
  return {
    team: fields.teamId ? { id: fields.teamId } : undefined,
    enterprise: fields.enterpriseId ? { id: fields.enterpriseId } : undefined,
    isEnterpriseInstall: fields.org === true,
    user: { id: 'U0ADMIN', token: undefined, scopes: undefined },
    bot: { id: 'B1', userId: fields.botUserId ?? 'U0BOT', token: fields.token, scopes: ['chat:write'] },
    tokenType: 'bot',
    authVersion: 'v2',
  };
}

forEachStore(runPostgres, (kind, prepare) => {
  describe(`the installation store (${kind})`, () => {
    let db: Database;
    let cleanup: () => Promise<void>;
    const build = () =>
      new InstallationStore({
        keyv: createSessionKeyv<InstallationRow>(db, INSTALLATIONS_NAMESPACE),
        cipher,
        lock: installationLock(db),
        // No installation here rotates its token: nothing is ever sent to Slack.
        refresher: new TokenRefresher({ clientId: '1.2', clientSecret: 'unused' }, 'http://127.0.0.1:9/api/'),
        onRefreshFailed: () => {},
      });

    // One store for the file (each test on workspaces of its own): opening one is the slow part.
    beforeAll(async () => {
      const prepared = await prepare();
      cleanup = prepared.cleanup;
      const { store } = prepared;
      db = await openDatabase(
        store.kind === 'postgres' ? { ...store, poolSize: 4 } : { kind: 'embedded', dataDir: store.dataDir },
      );
      await migrate(db);
    }, 60_000);
    afterAll(async () => {
      await db.close();
      await cleanup();
    });

    it('keeps a workspace install by its team and an org-wide install by its enterprise', async () => {
      const store = build();
      await store.storeInstallation(installation({ teamId: 'T1', token: 'xoxb-team-one' }));
      await store.storeInstallation(
        installation({ enterpriseId: 'E1', org: true, token: 'xoxb-org-one', botUserId: 'U0ORGBOT' }),
      );

      const team = await store.find({ teamId: 'T1' });
      expect(team?.installation.bot?.token).toBe('xoxb-team-one');
      const org = await store.find({ teamId: 'T9', enterpriseId: 'E1', isEnterpriseInstall: true });
      expect(org?.installation.bot?.token).toBe('xoxb-org-one');
      expect(org?.key).toBe('enterprise:E1');
      // Bolt's own query of an org-wide install names the enterprise alone.
      const bolt = await store.fetchInstallation({
        enterpriseId: 'E1',
        teamId: undefined,
        isEnterpriseInstall: true,
      });
      expect(bolt.bot?.userId).toBe('U0ORGBOT');
    });

    it("finds an org's workspace by its team alone once an event has said the org install serves it", async () => {
      const store = build();
      await store.storeInstallation(installation({ enterpriseId: 'E2', org: true, token: 'xoxb-org' }));
      expect(await store.find({ teamId: 'T2' })).toBeUndefined();

      await store.noteServedBy('T2', 'enterprise:E2');
      // Another replica, with nothing cached, finds it as a job of T2 would.
      expect((await build().find({ teamId: 'T2' }))?.installation.bot?.token).toBe('xoxb-org');
    });

    it('keeps tokens sealed at rest: no row holds a token', async () => {
      const store = build();
      await store.storeInstallation(installation({ teamId: 'T5', token: 'xoxb-plain-secret' }));
      const rows = await db.query<{ value: string }>('SELECT value FROM thread_sessions');
      expect(rows.map((row) => row.value).join('\n')).not.toContain('xoxb-plain-secret');
      const sealed = [];
      for await (const row of sealedInstallations(createSessionKeyv(db, INSTALLATIONS_NAMESPACE)))
        sealed.push(row);
      expect(sealed.map((row) => row.key)).toContain('team:T5');
    });

    it('forgets an installation for every replica, and a new install brings it back', async () => {
      const first = build();
      const second = build();
      await first.storeInstallation(installation({ teamId: 'T6', token: 'xoxb-first' }));
      expect(await second.find({ teamId: 'T6' })).toBeDefined();

      await first.forget({ teamId: 'T6', isEnterpriseInstall: false });
      await first.forget({ teamId: 'T6', isEnterpriseInstall: false });
      expect(await first.find({ teamId: 'T6' })).toBeUndefined();
      second.evict('team:T6');
      expect(await second.find({ teamId: 'T6' })).toBeUndefined();
      await expect(
        first.fetchInstallation({ teamId: 'T6', enterpriseId: undefined, isEnterpriseInstall: false }),
      ).rejects.toThrow('no installation for team T6');

      await first.storeInstallation(installation({ teamId: 'T6', token: 'xoxb-again' }));
      expect((await first.find({ teamId: 'T6' }))?.installation.bot?.token).toBe('xoxb-again');
    });

    it('pauses after a refresh Slack did not take, using the current token meanwhile', async () => {
      let failures = 0;
      const store = new InstallationStore({
        keyv: createSessionKeyv<InstallationRow>(db, INSTALLATIONS_NAMESPACE),
        cipher,
        lock: installationLock(db),
        // Nothing listens there: every refresh fails.
        refresher: new TokenRefresher({ clientId: '1.2', clientSecret: 'unused' }, 'http://127.0.0.1:9/api/'),
        onRefreshFailed: () => {
          failures++;
        },
      });
      // A rotating token due for its refresh, and valid for another minute.
      const now = Math.floor(Date.now() / 1000);
      const rotating = installation({ teamId: 'T8', token: 'xoxb-due' });
      if (rotating.bot) rotating.bot.refreshToken = 'xoxe-1-refresh';
      await createSessionKeyv<InstallationRow>(db, INSTALLATIONS_NAMESPACE).set('team:T8', {
        installation: sealInstallation(rotating, cipher),
        botTokenLife: { issuedAt: now - 600, expiresAt: now + 60 },
        storedAt: new Date().toISOString(),
      });
      for (let lookup = 0; lookup < 5; lookup++)
        expect((await store.find({ teamId: 'T8' }))?.installation.bot?.token).toBe('xoxb-due');
      // Each lookup trying again would take the lock, a connection and Slack's time for every event.
      expect(failures).toBe(1);
    });

    it('never caches an installation removed while it was being looked up', async () => {
      const store = build();
      await store.storeInstallation(installation({ teamId: 'T7', token: 'xoxb-gone' }));
      // The lookup and the removal race; whichever the lookup saw, the removal wins afterwards.
      const lookup = store.find({ teamId: 'T7' });
      await store.forget({ teamId: 'T7', isEnterpriseInstall: false });
      await lookup;
      expect(await store.find({ teamId: 'T7' })).toBeUndefined();
    });
  });
});

describe.runIf(runPostgres)('the installation store while PostgreSQL is unreachable', () => {
  /** `work` on a database of its own reached through a proxy it can break. */
  async function behindProxy(work: (db: Database, proxy: TcpProxy) => Promise<void>): Promise<void> {
    const database = await createTestDatabase({ schema: 'current' });
    const proxy = await TcpProxy.start({ target: database.url });
    const db = await openDatabase({ kind: 'postgres', databaseUrl: proxy.url, poolSize: 2 });
    try {
      await work(db, proxy);
    } finally {
      proxy.restore();
      await db.close();
      await proxy.stop();
      await database.drop();
    }
  }

  it('keeps serving an installation it read before, past its cache time, so events are still taken', async () => {
    await behindProxy(async (db, proxy) => {
      const store = new InstallationStore({
        keyv: createSessionKeyv<InstallationRow>(db, INSTALLATIONS_NAMESPACE),
        cipher,
        lock: installationLock(db),
        refresher: new TokenRefresher({ clientId: '1.2', clientSecret: 'unused' }, 'http://127.0.0.1:9/api/'),
        onRefreshFailed: () => {},
        cacheTtlMs: 50,
      });
      await store.storeInstallation(installation({ teamId: 'T1', token: 'xoxb-before-the-outage' }));
      expect((await store.find({ teamId: 'T1' }))?.installation.bot?.token).toBe('xoxb-before-the-outage');
      // A workspace of an org, served by the org-wide install.
      await store.storeInstallation(installation({ enterpriseId: 'E1', org: true, token: 'xoxb-the-org' }));
      await store.noteServedBy('T5', 'enterprise:E1');
      expect((await store.find({ teamId: 'T5' }))?.installation.bot?.token).toBe('xoxb-the-org');
      await sleep(100);

      // The store answers nothing (connections silent): within a second, the installation as last read.
      proxy.blackhole();
      const asked = Date.now();
      expect((await store.find({ teamId: 'T1' }))?.installation.bot?.token).toBe('xoxb-before-the-outage');
      expect(Date.now() - asked).toBeLessThan(2_000);
      proxy.restore();
      await sleep(100);

      proxy.down();
      // Past its cache time, and the store cannot say: the installation as last read.
      expect((await store.find({ teamId: 'T1' }))?.installation.bot?.token).toBe('xoxb-before-the-outage');
      expect((await store.find({ teamId: 'T5' }))?.installation.bot?.token).toBe('xoxb-the-org');
      // One never read here is not made up.
      await expect(store.find({ teamId: 'T2' })).rejects.toThrow();
      // One Slack refused is not served from memory either.
      store.evict('team:T1');
      await expect(store.find({ teamId: 'T1' })).rejects.toThrow();
    });
  }, 30_000);

  it('says so when the listing of installations fails partway, rather than ending it early', async () => {
    await behindProxy(async (db, proxy) => {
      const keyv = createSessionKeyv<InstallationRow>(db, INSTALLATIONS_NAMESPACE);
      for (let i = 0; i < 25; i++)
        await keyv.set(`team:T${100 + i}`, {
          installation: sealInstallation(installation({ teamId: `T${100 + i}`, token: `xoxb-${i}` }), cipher),
          storedAt: new Date().toISOString(),
        });
      const listed: string[] = [];
      const listing = (async () => {
        for await (const { key } of sealedInstallations(keyv)) {
          listed.push(key);
          // The store goes away after the first page was read.
          if (listed.length === 1) proxy.down();
        }
      })();
      await expect(listing).rejects.toThrow(/listing the stored installations failed/);
      expect(listed.length).toBeLessThan(25);
    });
  }, 30_000);
});
