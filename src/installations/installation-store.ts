import type {
  InstallationStore as BoltInstallationStore,
  Installation,
  InstallationQuery,
} from '@slack/bolt';
import type Keyv from 'keyv';
import { LRUCache } from 'lru-cache';
import { within } from '../util/within.js';
import {
  type InstallationKey,
  type InstallationRef,
  installationKeyOf,
  teamKeyOf,
} from './installation-key.js';
import type { InstallationLock } from './installation-lock.js';
import { type InstallationRow, isLiveRow, type LiveRow } from './installation-rows.js';
import { openInstallation, sealInstallation } from './sealed-installation.js';
import type { TokenCipher } from './token-cipher.js';
import {
  needsRefresh,
  stillValid,
  type TokenLife,
  TokenRefreshError,
  type TokenRefresher,
} from './token-refresh.js';

/** An installation as the bot uses it: open, its bot token fresh. */
export interface ServingInstallation {
  key: InstallationKey;
  installation: Installation;
  botTokenLife?: TokenLife;
}

export interface InstallationStoreOptions {
  keyv: Keyv<InstallationRow>;
  cipher: TokenCipher;
  lock: InstallationLock;
  refresher: TokenRefresher;
  /** A refresh that failed: the operator must see it (an error line and a metric). */
  onRefreshFailed(key: InstallationKey, error: TokenRefreshError): void;
  onRefreshed?(key: InstallationKey): void;
  /** An install (or reinstall) stored: what the app does when installed there again. */
  onStored?(ref: InstallationRef): Promise<void>;
  cacheTtlMs?: number;
}

/** Open installations are kept this long: one lookup per workspace per half minute, not one per event. */
const CACHE_TTL_MS = 30_000;
/** How long a lookup waits for the store before it uses the installation as last read (see serving). */
const LAST_READ_WAIT_MS = 1_000;
const CACHE_MAX = 10_000;

/** After a failed refresh, how long lookups use the current token (while it lasts) before trying again. */
const REFRESH_RETRY_PAUSE_MS = 60_000;

/**
 * The installations of an app distributed through OAuth, on Keyv (the project's store), each keyed as Slack
 * documents it (installation-key.ts), every token sealed (sealed-installation.ts). Bolt's installer stores
 * and fetches through it; the bot's own Slack calls ask it for a workspace's bot token.
 *
 * Rotation is this store's, not Bolt's: a token near its expiry is refreshed under the installation's lock,
 * after reading the row again, so two replicas never spend one refresh token. Bolt is handed installations
 * without their refresh token, so its installer never refreshes on its own (it would, without a lock).
 *
 * Lookups are cached briefly. A removal writes a tombstone under the same lock and bumps `generation`: a
 * refresh that read the row before cannot write it back, and a lookup in flight cannot cache what was removed.
 */
export class InstallationStore implements BoltInstallationStore {
  private readonly cache: LRUCache<string, ServingInstallation>;
  private generation = 0;
  /** When a refresh last failed, by installation (see refreshPaused). */
  private readonly refreshFailedAt = new Map<InstallationKey, number>();
  /** Refreshes under way in this process, by installation. */
  private readonly refreshing = new Map<InstallationKey, Promise<ServingInstallation | undefined>>();
  /** Workspaces this process found served by another installation (an org install), for a store outage. */
  private readonly servedThrough = new LRUCache<string, InstallationKey>({ max: CACHE_MAX });
  /** Workspaces already recorded as served by an org install, so each is written once per process. */
  private readonly servedNoted = new Set<string>();

  constructor(private readonly options: InstallationStoreOptions) {
    // An entry past its time is kept (not returned) until replaced, for a store that cannot say (see serving).
    this.cache = new LRUCache({
      max: CACHE_MAX,
      ttl: options.cacheTtlMs ?? CACHE_TTL_MS,
      noDeleteOnStaleGet: true,
    });
  }

  // Bolt's InstallationStore.

  async storeInstallation(installation: Installation): Promise<void> {
    const ref: InstallationRef = {
      teamId: installation.team?.id,
      enterpriseId: installation.enterprise?.id,
      isEnterpriseInstall: installation.isEnterpriseInstall === true,
    };
    const key = installationKeyOf(ref);
    if (key === undefined) throw new Error('an installation without the id it is kept under');
    const expiresAt = installation.bot?.expiresAt;
    const botTokenLife =
      installation.bot?.refreshToken !== undefined && expiresAt !== undefined
        ? { issuedAt: Math.floor(Date.now() / 1000), expiresAt }
        : undefined;
    await this.options.lock(key, async () => {
      await this.write(key, {
        installation: sealInstallation(installation, this.options.cipher),
        ...(botTokenLife ? { botTokenLife } : {}),
        storedAt: new Date().toISOString(),
      });
    });
    await this.options.onStored?.(ref);
  }

  /** Bolt's lookup (its authorize): the installation with a fresh token, and no refresh token (see above). */
  async fetchInstallation(query: InstallationQuery<boolean>): Promise<Installation> {
    const serving = await this.find(query);
    if (!serving) {
      throw new Error(
        `no installation for ${query.isEnterpriseInstall ? `enterprise ${query.enterpriseId}` : `team ${query.teamId}`}`,
      );
    }
    return withoutRefreshTokens(serving.installation);
  }

  async deleteInstallation(query: InstallationQuery<boolean>): Promise<void> {
    await this.forget(query);
  }

  // The bot's own.

  /**
   * The installation that answers `query`, its bot token refreshed when near expiry; undefined when there is
   * none. A workspace with no install of its own is looked up through the org install that serves it.
   */
  async find(
    query: Partial<InstallationRef> & { teamId?: string },
  ): Promise<ServingInstallation | undefined> {
    const key = installationKeyOf({ ...query, isEnterpriseInstall: query.isEnterpriseInstall === true });
    const { teamId } = query;
    try {
      const direct = key ? await this.serving(key) : undefined;
      if (direct || teamId === undefined) return direct;
      const alias = await this.options.keyv.get(servedByKey(teamId));
      const through =
        alias && 'servedBy' in alias
          ? alias.servedBy
          : query.enterpriseId
            ? (`enterprise:${query.enterpriseId}` as const)
            : undefined;
      const serving = through ? await this.serving(through) : undefined;
      if (serving) this.servedThrough.set(teamId, serving.key);
      return serving;
    } catch (error) {
      // The store cannot say: a workspace this process found served by an org install still is (see serving).
      const through = teamId === undefined ? undefined : this.servedThrough.get(teamId);
      if (through === undefined || through === key) throw error;
      return this.serving(through);
    }
  }

  /** Records that `teamId`'s conversations are answered by the installation `key` (an org install's workspace). */
  async noteServedBy(teamId: string, key: InstallationKey): Promise<void> {
    if (key === teamKeyOf(teamId) || this.servedNoted.has(`${teamId}>${key}`)) return;
    await this.options.keyv.set(servedByKey(teamId), { servedBy: key });
    this.servedNoted.add(`${teamId}>${key}`);
  }

  /**
   * Removes an installation (uninstall, revoked tokens): a tombstone, written under its lock so a refresh in
   * flight cannot write it back; idempotent. With `storedBefore`, an installation stored at or after it is a
   * reinstall the removal does not concern, and is kept.
   */
  async forget(ref: InstallationRef, storedBefore?: Date): Promise<void> {
    const key = installationKeyOf(ref);
    if (key === undefined) return;
    await this.options.lock(key, async () => {
      const row = await this.options.keyv.get(key);
      if (storedBefore && isLiveRow(row) && Date.parse(row.storedAt) >= storedBefore.getTime()) return;
      await this.write(key, { removedAt: new Date().toISOString() });
    });
  }

  /** The cached installation is not trusted any more (Slack refused its token): the next lookup reads the store. */
  evict(key: InstallationKey): void {
    this.generation++;
    this.cache.delete(key);
  }

  private async serving(key: InstallationKey): Promise<ServingInstallation | undefined> {
    const cached = this.cache.get(key);
    if (cached && (!needsRefresh(cached.botTokenLife) || this.refreshPaused(key, cached))) return cached;
    const generation = this.generation;
    // The store cannot say (an outage, or slower than LAST_READ_WAIT_MS): the installation as last read here
    // still serves, while its token lasts, so the workspace's events are taken under the store-outage policy
    // (each answered within Slack's 3 s) instead of each refused.
    const lastRead = this.cache.get(key, { allowStale: true });
    const usable = lastRead && stillValid(lastRead.botTokenLife) ? lastRead : undefined;
    let row: InstallationRow | undefined;
    try {
      const read = this.options.keyv.get(key);
      const answered = usable ? await within(read, LAST_READ_WAIT_MS) : { value: await read };
      if (!answered) return usable;
      row = answered.value;
    } catch (error) {
      if (usable) return usable;
      throw error;
    }
    if (!isLiveRow(row)) return undefined;
    let serving: ServingInstallation | undefined = this.opened(key, row);
    if (needsRefresh(serving.botTokenLife)) serving = await this.refreshed(key, serving);
    if (serving && generation === this.generation) this.cache.set(key, serving);
    return serving;
  }

  /**
   * The installation with a new bot token: one refresh at a time per installation in this process, which every
   * lookup made meanwhile awaits. Each lookup taking the lock itself would hold a store connection while it
   * waits, and with enough of them the refresh could not store the tokens Slack had just given it (Slack spends
   * the old refresh token: the installation would be lost).
   */
  private refreshed(
    key: InstallationKey,
    current: ServingInstallation,
  ): Promise<ServingInstallation | undefined> {
    const running = this.refreshing.get(key);
    if (running) return running;
    const refresh = this.refreshUnderLock(key, current).finally(() => this.refreshing.delete(key));
    this.refreshing.set(key, refresh);
    return refresh;
  }

  /**
   * The installation refreshed under its lock after reading it again (another replica may have refreshed or
   * removed it meanwhile). A failed refresh leaves the current token in use while it lasts.
   */
  private async refreshUnderLock(
    key: InstallationKey,
    current: ServingInstallation,
  ): Promise<ServingInstallation | undefined> {
    try {
      return await this.options.lock(key, async () => {
        const row = await this.options.keyv.get(key);
        if (!isLiveRow(row)) return undefined;
        const latest = this.opened(key, row);
        if (!needsRefresh(latest.botTokenLife)) return latest;
        const { installation, life } = await this.options.refresher.refresh(latest.installation);
        await this.write(key, {
          installation: sealInstallation(installation, this.options.cipher),
          botTokenLife: life,
          storedAt: row.storedAt,
        });
        this.options.onRefreshed?.(key);
        this.refreshFailedAt.delete(key);
        return { key, installation, botTokenLife: life };
      });
    } catch (error) {
      const failure = error instanceof TokenRefreshError ? error : new TokenRefreshError(messageOf(error));
      this.refreshFailedAt.set(key, Date.now());
      this.options.onRefreshFailed(key, failure);
      if (stillValid(current.botTokenLife)) return current;
      throw failure;
    }
  }

  /**
   * A refresh failed a moment ago and the current token still works: it is used for now, rather than every
   * lookup (every event and Slack call) trying again under the lock.
   */
  private refreshPaused(key: InstallationKey, current: ServingInstallation): boolean {
    const failedAt = this.refreshFailedAt.get(key);
    return (
      failedAt !== undefined &&
      Date.now() - failedAt < REFRESH_RETRY_PAUSE_MS &&
      stillValid(current.botTokenLife)
    );
  }

  private opened(key: InstallationKey, row: LiveRow): ServingInstallation {
    return {
      key,
      installation: openInstallation(row.installation, this.options.cipher, key),
      ...(row.botTokenLife ? { botTokenLife: row.botTokenLife } : {}),
    };
  }

  private async write(key: InstallationKey, row: InstallationRow): Promise<void> {
    this.evict(key);
    await this.options.keyv.set(key, row);
    // A lookup that began before the write and ends after it must not cache what it read.
    this.evict(key);
  }
}

function servedByKey(teamId: string): string {
  return `served-by:${teamId}`;
}

/** Bolt's installer refreshes any token that comes with a refresh token; this store does that itself. */
function withoutRefreshTokens(installation: Installation): Installation {
  const { bot, user } = installation;
  return {
    ...installation,
    ...(bot && { bot: { ...bot, refreshToken: undefined, expiresAt: undefined } }),
    user: { ...user, refreshToken: undefined, expiresAt: undefined },
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
