import type { AgentFor } from '../agent/routing.js';
import type { ResetRequest } from '../conversation/jobs.js';
import { inboundMessageOf, indicatorOf, jobKey } from '../conversation/jobs.js';
import type { Inbox } from '../inbox/inbox.js';
import type { SessionManager } from '../sessions/manager.js';
import { threadKeyString } from '../sessions/thread-key.js';
import type { WorkIndicators } from '../slack-out/indicators.js';

export type ResetDecision = { outcome: 'queued' | 'duplicate' } | { outcome: 'not-allowed'; starter: string };

/**
 * Thread resets, from a `reset` mention or the message shortcut: only the person who started the
 * conversation may reset it (in a DM that is the only person there); before its session exists, the author of
 * the message that will start it. An allowed reset is recorded as a job
 * behind the answer in progress, cancelling what still waits, and is recorded before Slack is acknowledged.
 */
export class ThreadResets {
  constructor(
    private readonly inbox: Inbox,
    private readonly sessions: SessionManager,
    private readonly indicators: WorkIndicators,
    private readonly agentFor: AgentFor,
    private readonly onQueued: () => void,
  ) {}

  async request(request: ResetRequest, requestTs: string, userId: string): Promise<ResetDecision> {
    const { thread } = request;
    const session = await this.sessions.existing(thread, this.agentFor(thread));
    if (session && session.startedBy !== userId)
      return { outcome: 'not-allowed', starter: session.startedBy };
    // Without a session the inbox decides: the conversation is then its oldest waiting message's author's.
    const recorded = await this.inbox.enqueueReset(
      {
        threadKey: threadKeyString(thread),
        dedupeKey: jobKey(thread.teamId, thread.channelId, requestTs, 'reset'),
        kind: 'reset',
        payload: request,
        userId,
        enterpriseId: thread.enterpriseId,
      },
      { noSession: session === undefined },
    );
    if (recorded.outcome === 'not-allowed') return recorded;
    if (recorded.outcome === 'queued') this.onQueued();
    // The cancelled messages showed "queued"; cleared best effort, without holding up Slack's acknowledgement.
    for (const message of recorded.cancelled.map(inboundMessageOf))
      void this.indicators.clearQueued(indicatorOf(message));
    return { outcome: recorded.outcome };
  }
}
