import type { Logger } from '../observability/logger.js';
import type { SessionManager } from '../sessions/manager.js';
import type { Database } from '../store/database.js';
import { DueWork, rowRetryDelayMs } from '../store/due-work.js';
import type { Inbox } from './inbox.js';

/**
 * A workspace, or a whole org (Enterprise Grid, `isEnterpriseInstall`), the app no longer serves: as Slack
 * names it in the envelope of `app_uninstalled` / `tokens_revoked`, or as the installation a call was refused for.
 */
export interface RemovedWorkspace {
  teamId?: string;
  enterpriseId?: string;
  isEnterpriseInstall: boolean;
}

/**
 * What told the bot: Slack's two events, an org admin removing the org-wide app from a workspace
 * (`team_access_revoked`), or a call answered `account_inactive` / `token_revoked` (workspace-tokens.ts).
 */
export type RemovalReason = 'app_uninstalled' | 'tokens_revoked' | 'team_access_revoked' | 'token_invalid';

/** What one removal ended, for the log and the operator's notice. */
export interface RemovalOutcome {
  cancelledJobs: number;
  retiredSessions: number;
}

export interface RemovalOptions {
  /** First retry delay of a removal that failed midway (the store, or forgetting the installation). */
  retryBaseMs: number;
  /** How often removals left by an earlier run, or due for a retry, are looked for. */
  pollMs: number;
  /**
   * OAuth mode: deletes the stored installation, so no event of the workspace is authorized any more. Run
   * first, so no new work comes in while the old is dropped; it must be idempotent (a retry runs it again).
   * Only an installation stored before `recordedAt` is the one removed (a later one is a reinstall).
   */
  forgetInstallation?: (workspace: RemovedWorkspace, recordedAt: Date) => Promise<void>;
  /** Told once per removal, when every step is done. */
  onRemoved?: (workspace: RemovedWorkspace, reason: RemovalReason, outcome: RemovalOutcome) => void;
}

interface DueRemoval {
  scope: string;
  team_id: string | null;
  enterprise_id: string | null;
  is_enterprise_install: boolean;
  reason: RemovalReason;
  attempts: number;
  requested_at: Date | string;
}

const BATCH = 10;

/**
 * The one key of a removal: an org-wide install is the org's, any other install its workspace's (a team id
 * is unique across orgs). Throws when the payload names neither, which no Slack payload does.
 */
export function removalScope(workspace: RemovedWorkspace): string {
  if (workspace.isEnterpriseInstall) {
    if (!workspace.enterpriseId) throw new Error('an org-wide removal names no enterprise id');
    return `org:${workspace.enterpriseId}`;
  }
  if (!workspace.teamId) throw new Error('a workspace removal names no team id');
  return `team:${workspace.teamId}`;
}

/**
 * Forgets a workspace or an org the app was removed from: its installation (OAuth mode), its waiting work
 * (jobs not sent to the agent yet are cancelled; a job whose prompt is at the agent is interrupted before it
 * posts, as nothing can be posted any more), and its conversations (mappings forgotten, each agent session's
 * deletion on its own agent scheduled durably, see SessionDeleter). The removal is recorded first and kept
 * until every step is done; each step is idempotent, so a repeated event, the other of Slack's two events, a
 * crash midway or a store outage only runs the steps again. A removal with nothing left to do is cheap.
 */
export class WorkspaceRemovals {
  private readonly due: DueWork<DueRemoval>;

  constructor(
    private readonly db: Database,
    private readonly jobs: Pick<Inbox, 'cancelOpenWithPrefix' | 'cancelOpenOfOrg'>,
    private readonly sessions: Pick<SessionManager, 'retireWhere' | 'retireOrg'>,
    private readonly logger: Logger,
    private readonly options: RemovalOptions,
  ) {
    this.due = new DueWork<DueRemoval>(db, logger, {
      // Claimed by pushing the next attempt into the future, so other replicas skip it meanwhile.
      claimSql: `UPDATE workspace_removals SET next_attempt_at = now() + make_interval(secs => $1)
         WHERE scope IN (
           SELECT scope FROM workspace_removals WHERE done_at IS NULL AND next_attempt_at <= now()
           ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING scope, team_id, enterprise_id, is_enterprise_install, reason, attempts, requested_at`,
      batch: BATCH,
      pendingSql: 'SELECT count(*) AS count FROM workspace_removals WHERE done_at IS NULL',
      work: async (due) => {
        for (const removal of due) await this.attempt(removal);
      },
      pollMs: options.pollMs,
      passFailed: 'workspace removal pass failed; will retry',
    });
  }

  /**
   * Records the removal durably (a StoreError if it cannot), then works through it. `sentAt`: when Slack sent
   * it (an event's `event_time`, whole seconds). A removal sent before the installation there now (one second's
   * margin, for those whole seconds) is of the installation that one replaced, redelivered late: ignored.
   */
  async remove(workspace: RemovedWorkspace, reason: RemovalReason, sentAt = new Date()): Promise<void> {
    const scope = removalScope(workspace);
    // A finished removal of an earlier install, left behind (ADMIT ignores it), is replaced: this one is new.
    const recorded = await this.db.query<{ scope: string }>(
      `INSERT INTO workspace_removals (scope, team_id, enterprise_id, is_enterprise_install, reason)
       SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM workspace_installs
         WHERE scope = $1 AND installed_at >= $6::timestamptz + interval '1 second')
       ON CONFLICT (scope) DO UPDATE SET team_id = excluded.team_id, enterprise_id = excluded.enterprise_id,
         reason = excluded.reason, attempts = 0, last_error = NULL, next_attempt_at = now(),
         requested_at = now(), done_at = NULL
       WHERE workspace_removals.done_at IS NOT NULL AND EXISTS (SELECT 1 FROM workspace_installs i
         WHERE i.scope = workspace_removals.scope AND i.installed_at > workspace_removals.requested_at)
       RETURNING scope`,
      [
        scope,
        workspace.teamId ?? null,
        workspace.enterpriseId ?? null,
        workspace.isEnterpriseInstall,
        reason,
        sentAt.toISOString(),
      ],
    );
    if (recorded.length === 0 && (await this.reinstalledSince(scope, sentAt))) {
      this.logger.info(
        { team: workspace.teamId, enterprise: workspace.enterpriseId, reason },
        'a removal sent before the app was installed there again (a late retry); ignored',
      );
      return;
    }
    this.kick();
  }

  /**
   * The app is installed there (again): an installation stored, the org-wide app added to a workspace, or
   * (single-workspace mode) a start whose token works, `at` (when Slack sent that event; now by default). A
   * finished removal recorded before it no longer refuses its events; one still under way is left to finish
   * (its clean-up concerns the old install). Its time is kept, so removals sent before it are told from ones
   * of this installation (see `remove`), and an org-wide removal does not refuse a workspace of the org
   * installed on its own since (inbox/queue.ts ADMIT). A late retry of an older event moves neither the time
   * back nor lifts a removal recorded after it was sent.
   */
  async installed(workspace: RemovedWorkspace, at?: Date): Promise<void> {
    const scope = removalScope(workspace);
    const time = at?.toISOString() ?? null;
    await this.db.query(
      `INSERT INTO workspace_installs (scope, installed_at) VALUES ($1, COALESCE($2::timestamptz, now()))
       ON CONFLICT (scope) DO UPDATE
         SET installed_at = GREATEST(workspace_installs.installed_at, excluded.installed_at)`,
      [scope, time],
    );
    await this.db.query(
      `DELETE FROM workspace_removals
       WHERE scope = $1 AND done_at IS NOT NULL AND requested_at < COALESCE($2::timestamptz, now())`,
      [scope, time],
    );
  }

  private async reinstalledSince(scope: string, sentAt: Date): Promise<boolean> {
    const rows = await this.db.query<{ scope: string }>(
      `SELECT scope FROM workspace_installs WHERE scope = $1 AND installed_at >= $2::timestamptz + interval '1 second'`,
      [scope, sentAt.toISOString()],
    );
    return rows.length > 0;
  }

  /** Polls for due removals (including ones left by an earlier run) until stopped. */
  start(): void {
    this.due.start();
  }

  async stop(): Promise<void> {
    await this.due.stop();
  }

  /** Runs a pass now (or right after the one in progress). */
  kick(): void {
    this.due.kick();
  }

  /** Removals not finished yet (a gauge for operators). */
  pendingCount(): Promise<number> {
    return this.due.pendingCount();
  }

  private async attempt(removal: DueRemoval): Promise<void> {
    const workspace: RemovedWorkspace = {
      ...(removal.team_id ? { teamId: removal.team_id } : {}),
      ...(removal.enterprise_id ? { enterpriseId: removal.enterprise_id } : {}),
      isEnterpriseInstall: removal.is_enterprise_install,
    };
    const context = { team: removal.team_id, enterprise: removal.enterprise_id, reason: removal.reason };
    try {
      const outcome = await this.work(workspace, new Date(removal.requested_at));
      await this.db.query(
        `UPDATE workspace_removals SET done_at = now(), next_attempt_at = 'infinity' WHERE scope = $1`,
        [removal.scope],
      );
      // Installed again meanwhile: the removal was of the installation replaced. Housekeeping only: ADMIT
      // ignores such a removal already, so dying before (or failing at) this leaves nothing refused.
      await this.db.query(
        `DELETE FROM workspace_removals r WHERE scope = $1 AND EXISTS (SELECT 1 FROM workspace_installs i
           WHERE i.scope = r.scope AND i.installed_at > r.requested_at)`,
        [removal.scope],
      );
      this.logger.info(
        { ...context, ...outcome },
        'app removed: waiting work dropped, agent sessions being deleted',
      );
      this.options.onRemoved?.(workspace, removal.reason, outcome);
    } catch (error) {
      const attempts = removal.attempts + 1;
      const delayMs = rowRetryDelayMs(attempts, this.options.retryBaseMs);
      const kind = error instanceof Error ? error.name : 'internal';
      this.logger.warn(
        { ...context, err: error, attempts, retryInMs: delayMs },
        'workspace removal failed midway; will retry',
      );
      await this.db.query(
        `UPDATE workspace_removals
         SET attempts = $2, last_error = $3, next_attempt_at = now() + make_interval(secs => $4)
         WHERE scope = $1`,
        [removal.scope, attempts, kind, delayMs / 1000],
      );
    }
  }

  /**
   * The steps, in this order: no new work comes in (the installation is forgotten), the waiting work is
   * dropped (so none of it starts a conversation again), then the conversations end.
   */
  private async work(workspace: RemovedWorkspace, recordedAt: Date): Promise<RemovalOutcome> {
    await this.options.forgetInstallation?.(workspace, recordedAt);
    if (workspace.isEnterpriseInstall && workspace.enterpriseId) {
      // A workspace of the org installed on its own since is served by that install: its work stays.
      const cancelledJobs = await this.jobs.cancelOpenOfOrg(workspace.enterpriseId, recordedAt);
      const retired = await this.sessions.retireOrg(workspace.enterpriseId, 'workspace-gone', recordedAt);
      return { cancelledJobs, retiredSessions: retired.length };
    }
    const teamId = workspace.teamId ?? '';
    const cancelledJobs = await this.jobs.cancelOpenWithPrefix(`${teamId}:`);
    const retired = await this.sessions.retireWhere({ teamId }, 'workspace-gone');
    return { cancelledJobs, retiredSessions: retired.length };
  }
}
