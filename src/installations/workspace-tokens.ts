import type { Logger } from '../observability/logger.js';
import type { InstallationRef } from './installation-key.js';
import type { InstallationStore } from './installation-store.js';
import { servedWorkspace } from './workspace-scope.js';

/** A Slack call in OAuth mode for a workspace with no installation (removed, or never installed). */
export class NoInstallationError extends Error {
  override readonly name = 'NoInstallationError';
}

/**
 * The bot token of the workspace being served (workspace-scope.ts), for every Slack call in OAuth mode, and
 * what a refused one means. Slack refuses a token with `invalid_auth`, `account_inactive` or `token_revoked`
 * once the app is uninstalled or its tokens revoked: when the refused token is still the stored one, the
 * installation is gone and `onRemoved` cleans up after it; when another replica has refreshed it meanwhile,
 * only the cache was stale.
 */
export class WorkspaceTokens {
  constructor(
    private readonly installations: InstallationStore,
    private readonly onRemoved: (ref: InstallationRef) => Promise<void>,
    private readonly logger: Pick<Logger, 'warn'>,
  ) {}

  async token(): Promise<string> {
    const here = servedWorkspace();
    if (!here) throw new NoInstallationError('a Slack call outside any workspace: no token to make it with');
    const serving = await this.installations.find(here);
    const token = serving?.installation.bot?.token;
    if (token === undefined) throw new NoInstallationError(`no installation serves team ${here.teamId}`);
    return token;
  }

  async refused(token: string): Promise<void> {
    try {
      await this.checkRefused(token);
    } catch (error) {
      this.logger.warn(
        { err: error },
        'Slack refused a bot token; could not check whether its installation is gone',
      );
    }
  }

  private async checkRefused(token: string): Promise<void> {
    const here = servedWorkspace();
    if (!here) return;
    const before = await this.installations.find(here);
    if (!before) return;
    this.installations.evict(before.key);
    const latest = await this.installations.find(here);
    if (latest?.installation.bot?.token !== token) return;
    const { installation } = latest;
    await this.onRemoved({
      teamId: installation.team?.id,
      enterpriseId: installation.enterprise?.id,
      isEnterpriseInstall: installation.isEnterpriseInstall === true,
    });
  }
}
