import type { App } from '@slack/bolt';
import type { Config, SlackAuth, SlackConfig } from '../config/index.js';
import { StartupError } from '../config/index.js';
import type { JobRunner } from '../conversation/job-progress.js';
import type { RemovedWorkspace } from '../inbox/removals.js';
import type { InstallationRef } from '../installations/installation-key.js';
import { installationLock } from '../installations/installation-lock.js';
import {
  INSTALLATIONS_NAMESPACE,
  type InstallationRow,
  sealedInstallations,
} from '../installations/installation-rows.js';
import { InstallationStore } from '../installations/installation-store.js';
import { openInstallation } from '../installations/sealed-installation.js';
import { TokenCipher, TokenCipherError } from '../installations/token-cipher.js';
import { TokenRefresher } from '../installations/token-refresh.js';
import { inWorkspace } from '../installations/workspace-scope.js';
import { WorkspaceTokens } from '../installations/workspace-tokens.js';
import type { Logger } from '../observability/logger.js';
import type { BotMetrics } from '../observability/metrics.js';
import { teamOfThreadKey } from '../sessions/thread-key.js';
import type { SlackAppCredentials } from '../slack-in/bolt-app.js';
import { authorizationsOf, type EventEnvelope, installationOf } from '../slack-in/events.js';
import { INSTALLATION_EVENTS } from '../slack-in/listeners/events/index.js';
import { installScopes } from '../slack-in/requirements.js';
import type { BotIdentity } from '../slack-in/startup-check.js';
import type { Database } from '../store/database.js';
import { createSessionKeyv } from '../store/keyv.js';

type OAuth = Extract<SlackAuth, { mode: 'oauth' }>;

/** OAuth mode's parts: the installation store and where each Slack call's token comes from. */
export interface Installations {
  store: InstallationStore;
  tokens: WorkspaceTokens;
  /**
   * Runs `work` as the workspace `teamId` (a thread's team), served by its installation; `work` runs outside any
   * workspace when none serves it (its Slack calls then fail with NoInstallationError).
   */
  serve<T>(teamId: string, work: () => Promise<T>): Promise<T>;
  /** Set once the removal of a workspace's data is wired: what a token Slack refuses for good triggers. */
  onRemoved(removal: (ref: InstallationRef) => Promise<void>): void;
  /** Set once the removals are wired: what an install (or reinstall) stored triggers. */
  onInstalled(installed: (ref: InstallationRef) => Promise<void>): void;
}

/** OAuth mode's parts; undefined in single-workspace mode. */
export function createInstallations(
  slack: SlackConfig,
  db: Database,
  observers: { metrics: BotMetrics; logger: Logger },
): Installations | undefined {
  const { auth, apiUrl: slackApiUrl } = slack;
  if (auth.mode !== 'oauth') return undefined;
  const { metrics, logger } = observers;
  let installed = async (_ref: InstallationRef) => {};
  const store = new InstallationStore({
    onStored: (ref) => installed(ref),
    keyv: createSessionKeyv<InstallationRow>(db, INSTALLATIONS_NAMESPACE),
    cipher: new TokenCipher(auth.tokenKeys),
    lock: installationLock(db),
    refresher: new TokenRefresher(auth, slackApiUrl),
    onRefreshed: () => metrics.tokenRefreshes.inc({ outcome: 'ok' }),
    onRefreshFailed: (key, error) => {
      metrics.tokenRefreshes.inc({ outcome: 'failed' });
      logger.error(
        { installation: key, code: error.code },
        `could not refresh the bot token of ${key} (${error.code}); its current token is used until it expires, then that workspace gets no answers: reinstall the app there if this persists`,
      );
    },
  });
  let removal = async (ref: InstallationRef) => store.forget(ref);
  const tokens = new WorkspaceTokens(store, (ref) => removal(ref), logger);
  return {
    store,
    tokens,
    async serve(teamId, work) {
      const serving = await store.find({ teamId });
      const botUserId = serving?.installation.bot?.userId;
      if (!serving || botUserId === undefined) return work();
      return inWorkspace({ teamId, enterpriseId: serving.installation.enterprise?.id, botUserId }, work);
    },
    onRemoved(next) {
      removal = next;
    },
    onInstalled(next) {
      installed = next;
    },
  };
}

/**
 * Start-up: every stored token opens with TOKEN_ENCRYPTION_KEYS. A key dropped too early, or the wrong key,
 * would otherwise show only as workspaces that get no answer.
 */
export async function checkInstallationKeys(auth: OAuth, db: Database): Promise<void> {
  const cipher = new TokenCipher(auth.tokenKeys);
  const keyv = createSessionKeyv<InstallationRow>(db, INSTALLATIONS_NAMESPACE);
  for await (const { key, installation } of sealedInstallations(keyv)) {
    try {
      openInstallation(installation, cipher, key);
    } catch (error) {
      if (!(error instanceof TokenCipherError)) throw error;
      throw new StartupError(
        `TOKEN_ENCRYPTION_KEYS does not open the stored tokens of ${key}: ${error.message}; configure the key they were sealed with (keep it after the new one until the re-encrypt command has run)`,
      );
    }
  }
}

/**
 * An event, run as the workspace it came from, answered by the installation Slack says it was delivered for
 * (`authorizations`: the workspace's own install, or the org install when `is_enterprise_install`). That the
 * installation serves the event's workspace is recorded, so the workspace's jobs find it later by team alone.
 * An event no installation serves is dropped (the app was removed there).
 */
export async function receiveEvent(
  installations: Installations | undefined,
  envelope: EventEnvelope,
  work: () => Promise<void>,
  logger: Pick<Logger, 'warn'>,
): Promise<void> {
  if (!installations) return work();
  const installation = installationOf(envelope);
  const enterpriseId = installation.enterpriseId;
  const aboutTheInstallation = INSTALLATION_EVENTS.has(envelope.event.type);
  const lookup = installations.store.find({
    teamId: idOf(authorizationsOf(envelope)[0]?.team_id) ?? installation.teamId,
    enterpriseId,
    isEnterpriseInstall: installation.isEnterpriseInstall,
  });
  // An uninstall revokes the tokens, refresh tokens included: a token that expired meanwhile (a workspace
  // quiet for its lifetime) cannot be refreshed any more, and the removal must not wait on it.
  const serving = aboutTheInstallation ? await lookup.catch(() => undefined) : await lookup;
  const botUserId = serving?.installation.bot?.userId;
  if (!serving || botUserId === undefined) {
    if (aboutTheInstallation) return work();
    logger.warn(
      { team: envelope.team_id, enterprise: enterpriseId, type: envelope.event.type },
      'an event from a workspace with no installation of the app; ignored',
    );
    return;
  }
  // An org-level event (an org-wide uninstall) names no workspace: it runs as no workspace's.
  if (installation.teamId === undefined) return work();
  await installations.store.noteServedBy(installation.teamId, serving.key);
  const workspace = {
    teamId: installation.teamId,
    enterpriseId: serving.installation.enterprise?.id,
    botUserId,
  };
  return inWorkspace(workspace, work);
}

/** Commands, shortcuts and buttons run as the workspace Bolt's authorize found (its installer, this store). */
export function serveBoltRequests(app: App, installations: Installations): void {
  app.use(async ({ context, next }) => {
    const { teamId, enterpriseId, botUserId } = context;
    if (teamId === undefined || botUserId === undefined) return next();
    if (context.isEnterpriseInstall && enterpriseId)
      await installations.store.noteServedBy(teamId, `enterprise:${enterpriseId}`);
    await inWorkspace({ teamId, enterpriseId, botUserId }, next);
  });
}

function idOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** What Bolt runs on: the one bot token, or its installer over the installations. */
export function slackCredentials(
  config: Pick<Config, 'slack' | 'agentView'>,
  identity: BotIdentity,
  installations: Installations | undefined,
): SlackAppCredentials {
  const { auth } = config.slack;
  if (auth.mode === 'single') {
    return { mode: 'single', botToken: auth.botToken, botUserId: identity.botUserId, botId: identity.botId };
  }
  if (!installations) throw new Error('OAuth mode needs its installations');
  const { clientId, clientSecret, stateSecret } = auth;
  return {
    mode: 'oauth',
    clientId,
    clientSecret,
    stateSecret,
    installationStore: installations.store,
    scopes: installScopes(config.agentView.mode !== 'off'),
  };
}

/** Each job run as its thread's workspace (OAuth mode); in single-workspace mode as it is. */
export function servedJobs(installations: Installations | undefined, run: JobRunner): JobRunner {
  if (!installations) return run;
  return (job) => installations.serve(teamOfThreadKey(job.threadKey), () => run(job));
}

/** `work` on threads, each run as its workspace (OAuth mode); in single-workspace mode on all at once. */
export async function servedThreads<Thread extends { teamId: string }>(
  installations: Installations | undefined,
  threads: Thread[],
  work: (threads: Thread[]) => Promise<void>,
): Promise<void> {
  if (!installations) return work(threads);
  for (const thread of threads) await installations.serve(thread.teamId, () => work([thread]));
}

/**
 * What an operator is told once a workspace's data is gone: in single-workspace mode the one token is dead and
 * only they can fix it; in OAuth mode it is one installation of many, removed by its admin.
 */
export function reportRemoval(workspace: RemovedWorkspace, oauth: boolean, logger: Logger): void {
  const where = { team: workspace.teamId, enterprise: workspace.enterpriseId };
  if (oauth) {
    logger.info(
      where,
      'the app was removed from a workspace (or organisation): its installation, waiting work and conversations are deleted',
    );
    return;
  }
  logger.error(
    where,
    'the app was uninstalled from its workspace or its bot token revoked: SLACK_BOT_TOKEN no longer works; reinstall the app, set the new token and restart',
  );
}
