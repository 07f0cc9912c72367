import { LRUCache } from 'lru-cache';
import type { AgentViewMode } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import type { AgentCallResult, AgentViewStatus, SessionOpening, SlackWrites } from './writes.js';

/** A thread of a workspace, as agent view sessions are named (channel + thread root ts). */
export interface SessionThread {
  teamId: string;
  channelId: string;
  threadTs: string;
}

/** The threads whose agent view session the bot opened, kept where every replica and restart finds them. */
export interface OpenedSessions {
  add(thread: SessionThread): Promise<void>;
  has(thread: SessionThread): Promise<boolean>;
  remove(thread: SessionThread): Promise<void>;
}

/**
 * How long Slack's "not an agent app" is believed for a workspace: a reinstall with `features.agent_view` is
 * noticed this late, and a classic app costs one refused call per workspace and replica this often.
 */
const NOT_AGENT_APP_TTL_MS = 60 * 60_000;
/** Bounds the memory of a process serving very many workspaces; the least recently refused go first. */
const MAX_REMEMBERED = 10_000;

/** Only in memory: one process's view (tests, and a default where nothing durable is needed). */
export function openedSessionsInMemory(): OpenedSessions {
  const keys = new Set<string>();
  return {
    add: async (thread) => void keys.add(keyOf(thread)),
    has: async (thread) => keys.has(keyOf(thread)),
    remove: async (thread) => void keys.delete(keyOf(thread)),
  };
}

/**
 * The agent view's Slack calls (agent view sessions, the Messages tab's suggested prompts), used only where Slack
 * takes them. An app is taken to be an agent app (manifest.yml has `features.agent_view`) unless
 * SLACK_AGENT_VIEW=false, or until Slack answers `not_agent_app` (or `feature_disabled`) in a workspace:
 * from then on nothing agent-only is tried there for a while. A session is closed only if the bot opened it
 * (agents.sessions.setStatus creates one where none exists, `closed` included).
 *
 * A thread's session calls reach Slack in the order they were made, whoever makes them (a job's indicators, a
 * stop, a reset, an archive, the idle sweep): a call Slack throttles is sent again after Retry-After, and one
 * made meanwhile would otherwise land first and be overwritten by the older one (a stop's `active` over the
 * next answer's `processing`, an answer's `active` over a reset's `closed`).
 */
export class AgentFeatures {
  /** The workspaces where Slack said "not an agent app", each for `notAgentAppTtlMs`. */
  private readonly notAgentApp: LRUCache<string, true>;
  /** The last session call per thread, while one is under way. */
  private readonly lastCall = new Map<string, Promise<void>>();
  /**
   * Threads where a status this process set did not land (Slack failed it), or landed without its mark being
   * recorded: the session may show a stale status (`processing`, its stop button), so the next message there
   * sets its status as every message once did, without waiting (see `statusUnsettled`).
   */
  private readonly unsettled: LRUCache<string, true>;

  constructor(
    private readonly replies: SlackWrites,
    readonly mode: AgentViewMode,
    private readonly opened: OpenedSessions,
    private readonly logger: Pick<Logger, 'info' | 'warn'> = { info: () => {}, warn: () => {} },
    notAgentAppTtlMs = NOT_AGENT_APP_TTL_MS,
  ) {
    this.notAgentApp = new LRUCache({ max: MAX_REMEMBERED, ttl: notAgentAppTtlMs });
    this.unsettled = new LRUCache({ max: MAX_REMEMBERED });
  }

  /** Whether the agent view is used in this workspace (its channel threads are agent view sessions). */
  offersAgentView(teamId: string): boolean {
    if (this.mode === 'off') return false;
    return !this.notAgentApp.has(teamId);
  }

  /**
   * Sets the thread's session status, creating the session (with `opening`'s initiator and title) if it has
   * none. A title Slack did not take (the session existed already, or Slack's answer does not say) is set by
   * rename. Best effort.
   */
  setStatus(thread: SessionThread, status: AgentViewStatus, opening?: SessionOpening): Promise<void> {
    return this.inOrder(thread, () => this.setStatusNow(thread, status, opening));
  }

  private async setStatusNow(
    thread: SessionThread,
    status: AgentViewStatus,
    opening: SessionOpening = {},
  ): Promise<void> {
    if (!this.offersAgentView(thread.teamId)) return;
    const { result, title } = await this.replies.setSessionStatus(
      thread.channelId,
      thread.threadTs,
      status,
      opening,
    );
    if (this.learn(thread.teamId, result) !== 'ok') {
      if (result === 'failed') this.unsettled.set(keyOf(thread), true);
      else this.unsettled.delete(keyOf(thread));
      return;
    }
    // Every time, not once per thread: another replica may have closed it, and a reset's next message reopens it.
    try {
      await this.opened.add(thread);
      this.unsettled.delete(keyOf(thread));
    } catch (error) {
      this.unsettled.set(keyOf(thread), true);
      this.logger.warn({ err: error }, 'could not record an opened agent view session; it may be left open');
    }
    // After the mark, which a close elsewhere must find even while Slack holds the rename back.
    if (opening.title && title !== opening.title) await this.renameNow(thread, opening.title);
  }

  /** Sets the status of a session the bot opened; a thread without one is left without one. */
  update(thread: SessionThread, status: AgentViewStatus): Promise<void> {
    return this.inOrder(thread, async () => {
      if (await this.wasOpened(thread)) await this.setStatusNow(thread, status);
    });
  }

  /** Whether a status this process set in the thread did not land, or its mark was not recorded. */
  statusUnsettled(thread: SessionThread): boolean {
    return this.unsettled.has(keyOf(thread));
  }

  /**
   * Closes the sessions the bot opened among these ended conversations (reset, channel archived, idle), one
   * call at a time: a channel or a sweep can end many at once. Others get none. Only Slack threads are passed
   * (the callers ask `isSlackThread`): a classic DM's main line never has a session.
   */
  async close(threads: readonly SessionThread[]): Promise<void> {
    for (const thread of threads) {
      await this.inOrder(thread, async () => {
        if (!(await this.wasOpened(thread))) return;
        if (this.offersAgentView(thread.teamId)) {
          const { result } = await this.replies.setSessionStatus(thread.channelId, thread.threadTs, 'closed');
          this.learn(thread.teamId, result);
        }
        await this.opened.remove(thread).catch(() => {});
        this.unsettled.delete(keyOf(thread));
      });
    }
  }

  /** Names the thread's session (set its status first). Best effort. */
  rename(thread: SessionThread, title: string): Promise<void> {
    return this.inOrder(thread, () => this.renameNow(thread, title));
  }

  private async renameNow(thread: SessionThread, title: string): Promise<void> {
    if (!this.offersAgentView(thread.teamId)) return;
    this.learn(thread.teamId, await this.replies.renameSession(thread.channelId, thread.threadTs, title));
  }

  /** The Messages tab's suggested prompts; false when the workspace is not (or no longer) an agent app. */
  async setSuggestedPrompts(
    teamId: string,
    channel: string,
    title: string,
    prompts: readonly { title: string; message: string }[],
  ): Promise<boolean> {
    if (!this.offersAgentView(teamId)) return false;
    return (
      this.learn(teamId, await this.replies.setSuggestedPrompts(channel, title, prompts)) !== 'not-agent-app'
    );
  }

  /** Runs `call` after the thread's session call before it has ended (whether that one failed or not). */
  private inOrder(thread: SessionThread, call: () => Promise<void>): Promise<void> {
    const key = keyOf(thread);
    const run = (this.lastCall.get(key) ?? Promise.resolve()).then(call, call);
    this.lastCall.set(key, run);
    void run.then(
      () => this.lastCall.get(key) === run && this.lastCall.delete(key),
      () => this.lastCall.get(key) === run && this.lastCall.delete(key),
    );
    return run;
  }

  /** A store that cannot answer leaves the session as it is: closing might create one. */
  private async wasOpened(thread: SessionThread): Promise<boolean> {
    try {
      return await this.opened.has(thread);
    } catch {
      return false;
    }
  }

  /** Remembers Slack's "not an agent app" for the workspace, telling the operator once per workspace. */
  private learn(teamId: string, result: AgentCallResult): AgentCallResult {
    if (result !== 'not-agent-app') return result;
    if (this.offersAgentView(teamId)) {
      this.logger.info(
        { team: teamId },
        'Slack says the app has no agent features here (manifest without features.agent_view): threads show reactions instead of agent view sessions; set SLACK_AGENT_VIEW=false to skip asking',
      );
    }
    this.notAgentApp.set(teamId, true);
    return result;
  }
}

function keyOf(thread: SessionThread): string {
  return `${thread.teamId}:${thread.channelId}:${thread.threadTs}`;
}
