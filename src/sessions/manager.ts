import type { AgentClient } from '../agent/client.js';
import type { Logger } from '../observability/logger.js';
import type { DeletionReason, SessionDeleter } from './deleter.js';
import type { SessionFilter, SessionStore, SessionWithActivity, ThreadSession } from './store.js';
import type { ThreadKey } from './thread-key.js';

/**
 * The life of the agent sessions behind Slack threads: found or created on demand, replaced when lost, and
 * retired (mapping forgotten, deletion on the service scheduled durably) when a conversation ends. Callers
 * run a thread's work one job at a time, so a thread never gets two sessions.
 */
export class SessionManager {
  constructor(
    private readonly store: SessionStore,
    private readonly agent: AgentClient,
    private readonly deleter: SessionDeleter,
    private readonly logger: Logger,
  ) {}

  /** The thread's session with this agent, if it has one (a StoreError if the store cannot tell). */
  existing(thread: ThreadKey, agentId: string): Promise<ThreadSession | undefined> {
    return this.store.get(thread, agentId);
  }

  /** The thread's session, created on the agent service when the thread has none yet. */
  async sessionFor(
    thread: ThreadKey,
    agentId: string,
    userId: string,
  ): Promise<{ session: ThreadSession; created: boolean }> {
    const existing = await this.store.get(thread, agentId);
    if (existing) return { session: existing, created: false };
    return { session: await this.create(thread, agentId, userId), created: true };
  }

  /** Replaces a session the agent service no longer knows. */
  async replace(lost: ThreadSession): Promise<ThreadSession> {
    this.logger.warn(
      { session: lost.sessionId, agentId: lost.agentId },
      'agent session lost; starting a new one',
    );
    return this.create(lost, lost.agentId, lost.startedBy);
  }

  /** Records activity, for idle expiry and `/agent sessions`. */
  touch(session: ThreadKey & { agentId: string }): Promise<void> {
    return this.store.recordActivity(session);
  }

  /** Mappings matching the filter, e.g. a user's sessions in one channel. */
  list(filter: SessionFilter): Promise<SessionWithActivity[]> {
    return this.store.list(filter);
  }

  /** Ends the conversations matching the filter; returns how many. */
  async retireWhere(filter: SessionFilter, reason: DeletionReason): Promise<ThreadSession[]> {
    const sessions = await this.store.list(filter);
    await this.retire(sessions, reason);
    return sessions;
  }

  /**
   * Ends every conversation of an org's workspaces (an org-wide uninstall) but those of a workspace that
   * installed the app on its own after `removedAt`; returns them.
   */
  async retireOrg(enterpriseId: string, reason: DeletionReason, removedAt?: Date): Promise<ThreadSession[]> {
    const sessions = await this.store.listOfOrg(enterpriseId, removedAt);
    await this.retire(sessions, reason);
    return sessions;
  }

  /** Drops activity rows of conversations that have ended (also when idle expiry is off). */
  pruneActivity(): Promise<number> {
    return this.store.pruneActivity();
  }

  /** Ends conversations idle since before `now - idleMs`; returns them. */
  async expireIdle(idleMs: number, now = new Date()): Promise<ThreadSession[]> {
    const expired: ThreadSession[] = [];
    for (;;) {
      const idle = await this.store.listIdle(new Date(now.getTime() - idleMs));
      if (idle.length === 0) break;
      await this.retire(idle, 'idle');
      expired.push(...idle);
    }
    await this.store.pruneActivity();
    return expired;
  }

  /** Ends these conversations (listed by the caller). */
  async retire(sessions: readonly ThreadSession[], reason: DeletionReason): Promise<void> {
    if (sessions.length === 0) return;
    // Deletion first, then the mapping: a crash in between leaves a deletion to finish, never an orphan.
    await this.deleter.schedule(sessions.map(({ agentId, sessionId }) => ({ agentId, sessionId, reason })));
    await this.store.deleteAll(sessions);
    this.logger.info({ count: sessions.length, reason }, 'agent sessions retired');
  }

  private async create(thread: ThreadKey, agentId: string, startedBy: string): Promise<ThreadSession> {
    const sessionId = await this.agent.createSession(agentId);
    const session: ThreadSession = {
      teamId: thread.teamId,
      ...(thread.enterpriseId ? { enterpriseId: thread.enterpriseId } : {}),
      channelId: thread.channelId,
      threadTs: thread.threadTs,
      agentId,
      sessionId,
      startedBy,
      createdAt: new Date().toISOString(),
    };
    try {
      await this.store.create(session);
    } catch (error) {
      // The mapping could not be saved: delete the new session so it is not orphaned on the service.
      await this.agent.deleteSession(agentId, sessionId).catch(() => {});
      throw error;
    }
    this.logger.info(
      { session: sessionId, agentId, channel: thread.channelId, thread: thread.threadTs },
      'agent session created',
    );
    return session;
  }
}
