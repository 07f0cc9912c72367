import type { Inbox } from '../../../inbox/inbox.js';
import type { WorkspaceRemovals } from '../../../inbox/removals.js';
import { botUserIdHere } from '../../../installations/workspace-scope.js';
import type { Logger } from '../../../observability/logger.js';
import { isSlackThread } from '../../../sessions/conversation-of.js';
import type { SessionManager } from '../../../sessions/manager.js';
import { channelKeyPrefix } from '../../../sessions/thread-key.js';
import type { AgentFeatures } from '../../../slack-out/agent-features.js';
import { type EventEnvelope, installationOf } from '../../events.js';
import type { AfterAck, EventRouter } from './router.js';

export interface LifecycleDeps {
  sessions: Pick<SessionManager, 'retireWhere'>;
  inbox: Pick<Inbox, 'cancelOpenWithPrefix'>;
  agentFeatures: Pick<AgentFeatures, 'close'>;
  removals: Pick<WorkspaceRemovals, 'remove' | 'installed'>;
  logger: Pick<Logger, 'info'>;
  botUserId: string;
}

/**
 * Channels archived or deleted, the bot removed from a channel, and the app removed from a workspace: their
 * conversations end.
 */
export function register(events: EventRouter, deps: LifecycleDeps): void {
  const channelGone = async (envelope: EventEnvelope, after: AfterAck[]) => {
    const { event, team_id: teamId } = envelope;
    const channelId = String(event.channel);
    // Only what was started before the event: a late retry of an archive (Slack retries for an hour) may come
    // after the channel was unarchived, or the bot added back, and used again.
    const startedBefore = closedBefore(envelope);
    // Jobs first, as for a removed workspace: a job cancelled now can no longer record a session it is making
    // as used (it retires that one itself), so the sessions listed next are all there will be. (A message
    // recorded after the bound in a conversation from before it is not cancelled: it finds its session gone
    // at the agent service and starts a new one, saying so.)
    await deps.inbox.cancelOpenWithPrefix(channelKeyPrefix({ teamId, channelId }), startedBefore);
    const retired = await deps.sessions.retireWhere(
      { teamId, channelId, createdBefore: startedBefore },
      'channel-gone',
    );
    // Best effort: Slack may refuse calls in an archived channel, and a deleted one has no threads left.
    if (event.type.endsWith('_archive'))
      after.push(() => deps.agentFeatures.close(retired.filter(isSlackThread)));
    deps.logger.info(
      { team: teamId, channel: channelId, event: event.type, count: retired.length },
      'channel closed; its agent sessions are being deleted',
    );
  };
  // Recorded before the acknowledgement (a store that cannot record it refuses the event, and Slack retries);
  // the clean-up runs after, and is retried until done (see WorkspaceRemovals).
  const workspaceGone = async (envelope: EventEnvelope, reason: 'app_uninstalled' | 'tokens_revoked') => {
    const { teamId, enterpriseId, isEnterpriseInstall } = installationOf(envelope);
    const sentAt = sentAtOf(envelope);
    // An org-wide install is the org's, whichever workspace's id the envelope carries (an org-level event
    // names none: only an org-wide install has those).
    const installation =
      isEnterpriseInstall || teamId === undefined
        ? { enterpriseId, isEnterpriseInstall: true }
        : { teamId, enterpriseId, isEnterpriseInstall };
    await deps.removals.remove(installation, reason, sentAt);
    deps.logger.info(
      { team: teamId, enterprise: enterpriseId, event: envelope.event.type },
      'app removed; its waiting work and agent sessions are being dropped',
    );
  };

  events.on('channel_archive', channelGone);
  events.on('group_archive', channelGone);
  events.on('channel_deleted', channelGone);
  events.on('group_deleted', channelGone);
  // The bot removed from a channel (or leaving it): nothing more can be said there, and a private channel's
  // archive or deletion would no longer reach it (Slack sends those to members only). Which of these Slack
  // sends the bot about itself, its docs leave open (channel_left "is sometimes withheld"): any of them.
  events.on('channel_left', channelGone);
  events.on('group_left', channelGone);
  events.on('member_left_channel', async (envelope, after) => {
    if (envelope.event.user !== botUserIdHere(deps.botUserId)) {
      events.ignore(envelope.event.type, 'someone-else-left');
      return;
    }
    await channelGone(envelope, after);
  });
  events.on('app_uninstalled', (envelope) => workspaceGone(envelope, 'app_uninstalled'));
  // An org admin removed the org-wide app from some of the org's workspaces: for each, as its uninstall.
  events.on('team_access_revoked', async (envelope) => {
    const enterpriseId = installationOf(envelope).enterpriseId;
    const teamIds = teamIdsOf(envelope);
    for (const teamId of teamIds)
      await deps.removals.remove(
        { teamId, enterpriseId, isEnterpriseInstall: false },
        'team_access_revoked',
        sentAtOf(envelope),
      );
    deps.logger.info(
      { teams: teamIds, enterprise: enterpriseId, event: envelope.event.type },
      'org-wide app removed from workspaces; their waiting work and agent sessions are being dropped',
    );
  });
  // Added to workspaces: the org install serves them already; only an earlier removal of theirs is lifted.
  // As sent: a late retry of the add lifts no removal sent after it.
  events.on('team_access_granted', async (envelope) => {
    const enterpriseId = installationOf(envelope).enterpriseId;
    const teamIds = teamIdsOf(envelope);
    for (const teamId of teamIds)
      await deps.removals.installed({ teamId, enterpriseId, isEnterpriseInstall: false }, sentAtOf(envelope));
    deps.logger.info(
      { teams: teamIds, enterprise: enterpriseId, event: envelope.event.type },
      'org-wide app added to workspaces',
    );
  });
  events.on('tokens_revoked', async (envelope) => {
    // Revoking only user tokens leaves the bot working; only a revoked bot token ends the workspace
    // (@slack/types TokensRevokedEvent: `tokens: { oauth?: string[]; bot?: string[] }`).
    const tokens = envelope.event.tokens as { bot?: unknown[] } | undefined;
    if ((tokens?.bot?.length ?? 0) > 0) await workspaceGone(envelope, 'tokens_revoked');
    else events.ignore(envelope.event.type, 'user-tokens-only');
  });
}

/** When Slack sent the event, so a retry arriving after a reinstall is told from a new removal. */
function sentAtOf(envelope: EventEnvelope): Date {
  const time = eventTimeOf(envelope);
  return time === undefined ? new Date() : new Date(time * 1000);
}

/** The envelope's `event_time` (whole seconds since the epoch), when it has a usable one. */
function eventTimeOf(envelope: EventEnvelope): number | undefined {
  const time = envelope.event_time;
  return typeof time === 'number' && Number.isFinite(time) ? time : undefined;
}

/**
 * Slack's `event_time` is in whole seconds, and its clock is not the bot's nor the database's: what started
 * within this long after it counts as before. Nobody unarchives a channel and talks in it again that fast.
 */
const CLOSED_CLOCK_MARGIN_S = 2;

/** What started before this was in the channel before it closed; undefined (everything) without event_time. */
function closedBefore(envelope: EventEnvelope): Date | undefined {
  const time = eventTimeOf(envelope);
  return time === undefined ? undefined : new Date((time + CLOSED_CLOCK_MARGIN_S) * 1000);
}

/** The workspaces a `team_access_*` event names (`team_ids`); a malformed list is read as none. */
function teamIdsOf(envelope: EventEnvelope): string[] {
  const ids = envelope.event.team_ids;
  return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string' && id !== '') : [];
}
