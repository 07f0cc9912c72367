import type { App } from '@slack/bolt';
import type { Logger } from '../../../observability/logger.js';
import type { Tracing } from '../../../observability/tracing.js';
import { agentViewIn, conversationOfThread, isDmChannel } from '../../../sessions/conversation-of.js';
import type { SessionManager } from '../../../sessions/manager.js';
import type { ThreadKey } from '../../../sessions/thread-key.js';
import type { AgentFeatures } from '../../../slack-out/agent-features.js';
import type { SlackWrites } from '../../../slack-out/writes.js';
import type { ThreadResets } from '../../resets.js';
import { type RequestRefusalDeps, requestRefusal } from './refusal.js';
import { type SessionsSummaryDeps, sessionsSummary } from './sessions-summary.js';

export interface SlashCommandDeps extends RequestRefusalDeps, SessionsSummaryDeps {
  command: string;
  sessions: Pick<SessionManager, 'list'>;
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
        const mine = await deps.sessions.list(dm ? where : { ...where, startedBy: command.user_id });
        const agentView = agentViewIn(deps.agentFeatures, command.team_id);
        // Each conversation is reset as a thread reset is: behind its answer in progress, cancelling what waits.
        for (const session of mine) {
          const thread: ThreadKey = {
            teamId: session.teamId,
            channelId: session.channelId,
            threadTs: session.threadTs,
            ...(session.enterpriseId ? { enterpriseId: session.enterpriseId } : {}),
          };
          await deps.resets.request(
            {
              thread,
              agentView: conversationOfThread(thread, agentView).agentView,
              silent: true,
              traceparent: deps.tracing.traceparent(),
            },
            `${command.trigger_id}:${thread.threadTs}`,
            command.user_id,
          );
        }
        await ephemeral(resetSummary(mine.length, dm));
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
