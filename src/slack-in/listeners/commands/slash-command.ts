import type { App } from '@slack/bolt';
import { inboundMessageOf } from '../../../conversation/jobs.js';
import type { Inbox } from '../../../inbox/inbox.js';
import type { Logger } from '../../../observability/logger.js';
import type { Tracing } from '../../../observability/tracing.js';
import { agentViewIn, conversationOfThread, isDmChannel } from '../../../sessions/conversation-of.js';
import type { SessionManager } from '../../../sessions/manager.js';
import { channelKeyPrefix, type ThreadKey, threadKeyString } from '../../../sessions/thread-key.js';
import type { AgentFeatures } from '../../../slack-out/agent-features.js';
import type { SlackWrites } from '../../../slack-out/writes.js';
import type { ThreadResets } from '../../resets.js';
import { type RequestRefusalDeps, requestRefusal } from './refusal.js';
import { type SessionsSummaryDeps, sessionsSummary } from './sessions-summary.js';

export interface SlashCommandDeps extends RequestRefusalDeps, SessionsSummaryDeps {
  command: string;
  sessions: Pick<SessionManager, 'list'>;
  /** The caller's messages still open here: conversations that may have no session yet. */
  inbox: Pick<Inbox, 'openMessagesOf'>;
  resets: Pick<ThreadResets, 'request'>;
  /** Which conversations are agent-view sessions, to be closed with their reset. */
  agentFeatures: Pick<AgentFeatures, 'mode' | 'offersAgentView'>;
  tracing: Pick<Tracing, 'traceparent'>;
  /** Answers privately through the request's response_url. */
  replies: Pick<SlackWrites, 'respond'>;
  logger: Pick<Logger, 'warn' | 'error'>;
}

export function usageText(command: string): string {
  return [
    `*${command}*: your conversations with the agent`,
    `• \`${command} reset\`: in a DM, start over (ends this DM's conversations). In a channel, ends the conversations in the threads you started here.`,
    `• \`${command} sessions\`: your conversations here, and when they started`,
    `• \`${command} help\`: this text`,
    'To reset a single thread you started, mention me in it with just `reset`, or use the message shortcut *Reset conversation* on any of its messages. Mention me with just `stop` to cancel your messages still waiting for an answer and drop the answer in progress.',
  ].join('\n');
}

/** The slash command: `reset`, `sessions`, `help`. Every answer is ephemeral. */
export function register(app: App, deps: SlashCommandDeps): void {
  app.command(deps.command, async ({ command, ack }) => {
    // Acknowledged first: Slack gives up after 3 s, and the work talks to the store and the agent service.
    await ack();
    const ephemeral = (text: string) => deps.replies.respond(command.response_url, text);
    try {
      const refused = await requestRefusal(deps, {
        teamId: command.team_id,
        channelId: command.channel_id,
        userId: command.user_id,
      });
      if (refused) {
        await ephemeral(refused);
        return;
      }
      const [subcommand = 'help'] = command.text.trim().toLowerCase().split(/\s+/).filter(Boolean);
      const where = { teamId: command.team_id, channelId: command.channel_id };
      const dm = isDmChannel(command.channel_id);
      if (subcommand === 'reset') {
        const threads = await threadsToReset(deps, where, command.user_id, dm);
        const agentView = agentViewIn(deps.agentFeatures, command.team_id);
        let reset = 0;
        // Each conversation is reset as a thread reset is: behind its answer in progress, cancelling what waits.
        for (const thread of threads) {
          const decision = await deps.resets.request(
            {
              thread,
              agentView: conversationOfThread(thread, agentView).agentView,
              silent: true,
              traceparent: deps.tracing.traceparent(),
            },
            `${command.trigger_id}:${thread.threadTs}`,
            command.user_id,
          );
          // A thread without a session is its first message's author's: a later message of the caller's there
          // does not make it theirs.
          if (decision.outcome !== 'not-allowed') reset += 1;
        }
        await ephemeral(resetSummary(reset, dm));
      } else if (subcommand === 'sessions') {
        const mine = await deps.sessions.list(dm ? where : { ...where, startedBy: command.user_id });
        await ephemeral(await sessionsSummary(deps, mine));
      } else {
        const prefix = subcommand === 'help' ? '' : `I don't know \`${subcommand}\`.\n`;
        await ephemeral(`${prefix}${usageText(deps.command)}`);
      }
    } catch (error) {
      deps.logger.error({ err: error }, 'slash command failed');
      await ephemeral(
        ':warning: That did not work: I could not reach my storage or the agent service. Please try again shortly.',
      ).catch(() => {});
    }
  });
}

/**
 * The conversations `/agent reset` ends: in a DM all of its own, in a channel those the caller started;
 * with them, those the caller's messages still waiting or being answered are starting (no session yet).
 */
async function threadsToReset(
  deps: Pick<SlashCommandDeps, 'sessions' | 'inbox'>,
  where: { teamId: string; channelId: string },
  userId: string,
  dm: boolean,
): Promise<ThreadKey[]> {
  // The inbox first: a message still open then is found there, and one that has finished by then recorded its
  // session before it did, so the sessions read after finds it. In the other order a first message could make
  // its session after the sessions were read and finish before the inbox was, and be found by neither.
  const waiting = await deps.inbox.openMessagesOf(channelKeyPrefix(where), userId);
  const sessions = await deps.sessions.list(dm ? where : { ...where, startedBy: userId });
  const threads = new Map<string, ThreadKey>();
  for (const session of sessions) {
    const thread: ThreadKey = {
      teamId: session.teamId,
      channelId: session.channelId,
      threadTs: session.threadTs,
      ...(session.enterpriseId ? { enterpriseId: session.enterpriseId } : {}),
    };
    threads.set(threadKeyString(thread), thread);
  }
  for (const { thread } of waiting.map(inboundMessageOf)) {
    const key = threadKeyString(thread);
    if (!threads.has(key)) threads.set(key, thread);
  }
  return [...threads.values()];
}

export function resetSummary(count: number, dm: boolean): string {
  if (count === 0) {
    return dm
      ? 'There was no conversation to reset here. Your next message starts a fresh one.'
      : 'You have no conversations with the agent in this channel to reset.';
  }
  if (dm) return ':broom: Done. Your next message here starts a fresh conversation with the agent.';
  const threads = count === 1 ? '1 thread' : `${count} threads`;
  return `:broom: Reset ${threads} you started in this channel. The next message in each starts a fresh conversation.`;
}
