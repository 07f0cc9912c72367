import type { Logger } from '../observability/logger.js';
import type { InstallationRef } from './installation-key.js';
import type { InstallationStore } from './installation-store.js';
import { servedWorkspace } from './workspace-scope.js';

const KEPT_WARNING_EVERY_MS = 60_000;

/** A Slack call in OAuth mode for a workspace with no installation (removed, or never installed). */
export class NoInstallationError extends Error {
  override readonly name = 'NoInstallationError';
}

/**
 * The bot token of the workspace being served (workspace-scope.ts), for every Slack call in OAuth mode, and
 * what a refused one means. When another replica has refreshed the token meanwhile, only the cache was stale:
 * the call goes again with the new one. When the refused token is still the stored one and Slack says
 * `account_inactive` or `token_revoked`, the app was uninstalled or its tokens revoked: the installation is
 * gone and `onRemoved` cleans up after it. `invalid_auth` is not enough: Slack gives it as well to a request
 * from an IP address an allowlist of the app's tokens does not include, which can be mended, so the installation is
 * kept (a real uninstall also comes as Slack's `app_uninstalled` and `tokens_revoked` events).
 */
export class WorkspaceTokens {
  private readonly keptWarnedAt = new Map<string, number>();

  constructor(
    private readonly installations: InstallationStore,
    private readonly onRemoved: (ref: InstallationRef) => Promise<void>,
    private readonly logger: Pick<Logger, 'warn' | 'error'>,
  ) {}

  async token(): Promise<string> {
    const here = servedWorkspace();
    if (!here) throw new NoInstallationError('a Slack call outside any workspace: no token to make it with');
    const serving = await this.installations.find(here);
    const token = serving?.installation.bot?.token;
    if (token === undefined) throw new NoInstallationError(`no installation serves team ${here.teamId}`);
    return token;
  }

  /** Whether another token is current now (see TokenSource). */
  async refused(token: string, code: string): Promise<boolean> {
    try {
      return await this.checkRefused(token, code);
    } catch (error) {
      this.logger.warn(
        { err: error, code },
        'Slack refused a bot token; could not check whether its installation is gone',
      );
      return false;
    }
  }

  private async checkRefused(token: string, code: string): Promise<boolean> {
    const here = servedWorkspace();
    if (!here) return false;
    const before = await this.installations.find(here);
    if (!before) return false;
    this.installations.evict(before.key);
    const latest = await this.installations.find(here);
    const current = latest?.installation.bot?.token;
    if (current !== token) return current !== undefined;
    // The stored token itself: an expired one is the refresh's to renew.
    if (!latest || code === 'token_expired') return false;
    const { installation } = latest;
    if (code === 'invalid_auth') {
      this.warnKept(latest.key);
      return false;
    }
    await this.onRemoved({
      teamId: installation.team?.id,
      enterpriseId: installation.enterprise?.id,
      isEnterpriseInstall: installation.isEnterpriseInstall === true,
    });
    return false;
  }

  /** An error line per installation at most every KEPT_WARNING_EVERY_MS: each of its calls is refused. */
  private warnKept(key: string): void {
    const now = Date.now();
    if (now - (this.keptWarnedAt.get(key) ?? Number.NEGATIVE_INFINITY) < KEPT_WARNING_EVERY_MS) return;
    this.keptWarnedAt.set(key, now);
    this.logger.error(
      { installation: key },
      'Slack refused the bot token of a workspace as invalid_auth: the token is invalid, or the workspace ' +
        "restricts the app's tokens to IP addresses this bot does not call from; the installation is kept",
    );
  }
}
