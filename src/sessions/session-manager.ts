import type { AgentClient } from '../agent/client.js';
import type { Logger } from '../observability/logger.js';
import type { DeletionReason, SessionDeleter } from './session-deleter.js';
import { type SessionFilter, SessionStore, type ThreadSession } from './session-store.js';
import type { ThreadKey } from './thread-key.js';

/** A store write made in the same round trip as a newly created session's mapping. */
export type WithNewSession = (session: ThreadSession) => Promise<void>;

/**
 * The life of the agent sessions behind Slack threads: found or created on demand, replaced when lost,
 * and retired (mapping forgotten, deletion on the service scheduled durably) when a conversation ends.
 * Callers serialize work per thread, so a thread never gets two sessions from one process.
 */
export class SessionManager {
  constructor(
    private readonly store: SessionStore,
    private readonly agent: AgentClient,
    private readonly deleter: SessionDeleter,
    private readonly logger: Logger,
    /** Activity is recorded at most this often per thread (a small fraction of the idle TTL). */
    private readonly touchResolutionMs = 60_000,
  ) {}

  /** The thread's session with this agent, if it has one (a StoreError if the store cannot tell). */
  existing(thread: ThreadKey, agentId: string): Promise<ThreadSession | undefined> {
    return this.store.get(thread, agentId);
  }

  /**
   * The thread's session, created on the agent service when the thread has none yet. `withNew` is a
   * store write to make in the same round trip as a new session's mapping (see create).
   */
  async sessionFor(
    thread: ThreadKey,
    agentId: string,
    userId: string,
    withNew?: WithNewSession,
  ): Promise<ThreadSession> {
    return (await this.store.get(thread, agentId)) ?? this.create(thread, agentId, userId, withNew);
  }

  /**
   * The thread's session given its row as already read with other work (null: it had none), created on
   * the agent service when there is none. An unreadable row is looked up again.
   */
  async sessionFromRow(
    row: string | null,
    thread: ThreadKey,
    agentId: string,
    userId: string,
    withNew?: WithNewSession,
  ): Promise<ThreadSession> {
    if (row === null) return this.create(thread, agentId, userId, withNew);
    const session = SessionStore.fromRow(row);
    return session?.agentId === agentId ? session : this.sessionFor(thread, agentId, userId, withNew);
  }

  /** Replaces a session the agent service no longer knows. */
  async replace(lost: ThreadSession): Promise<ThreadSession> {
    this.logger.warn(
      { session: lost.sessionId, agentId: lost.agentId },
      'agent session lost; starting a new one',
    );
    return this.create(lost, lost.agentId, lost.startedBy);
  }

  /** Records activity, for idle expiry; never revives a mapping that was reset meanwhile. */
  async touch(session: ThreadSession, now = Date.now()): Promise<void> {
    // Idle expiry works in days; a write per message would buy nothing over one a minute.
    if (now - Date.parse(session.lastActiveAt) < this.touchResolutionMs) return;
    await this.store.touch(session, new Date(now));
  }

  /** Mappings matching the filter, e.g. a user's sessions in one channel. */
  list(filter: SessionFilter): Promise<ThreadSession[]> {
    return this.store.list(filter);
  }

  /** Ends the conversations matching the filter; returns how many. */
  async retireWhere(filter: SessionFilter, reason: DeletionReason): Promise<number> {
    return this.retire(await this.store.list(filter), reason);
  }

  /** Ends conversations idle since before `now - idleMs`; returns how many. */
  async expireIdle(idleMs: number, now = new Date()): Promise<number> {
    let total = 0;
    for (;;) {
      const idle = await this.store.listIdle(new Date(now.getTime() - idleMs));
      if (idle.length === 0) return total;
      total += await this.retire(idle, 'idle');
    }
  }

  private async retire(sessions: readonly ThreadSession[], reason: DeletionReason): Promise<number> {
    if (sessions.length === 0) return 0;
    // Deletion first, then the mapping: a crash in between leaves a deletion to finish, never an orphan.
    await this.deleter.schedule(sessions.map(({ agentId, sessionId }) => ({ agentId, sessionId, reason })));
    await this.store.deleteAll(sessions);
    this.logger.info({ count: sessions.length, reason }, 'agent sessions retired');
    return sessions.length;
  }

  private async create(
    thread: ThreadKey,
    agentId: string,
    startedBy: string,
    withNew?: WithNewSession,
  ): Promise<ThreadSession> {
    const sessionId = await this.agent.createSession(agentId);
    const now = new Date().toISOString();
    const session: ThreadSession = {
      teamId: thread.teamId,
      channelId: thread.channelId,
      threadTs: thread.threadTs,
      agentId,
      sessionId,
      startedBy,
      createdAt: now,
      lastActiveAt: now,
    };
    // Issued together, the two writes go to the store in one round trip (group commit).
    const [saved, alongside] = await Promise.allSettled([this.store.set(session), withNew?.(session)]);
    if (saved.status === 'rejected') {
      // The mapping could not be saved: delete the new session so it is not orphaned on the service.
      await this.agent.deleteSession(agentId, sessionId).catch(() => {});
      throw saved.reason;
    }
    if (alongside.status === 'rejected') throw alongside.reason;
    this.logger.info(
      { session: sessionId, agentId, channel: thread.channelId, thread: thread.threadTs },
      'agent session created',
    );
    return session;
  }
}
