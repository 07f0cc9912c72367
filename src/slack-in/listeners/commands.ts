import type { App } from '@slack/bolt';
import type { AgentClient } from '../../agent/client.js';
import {
  RESET_FAILED_TEXT,
  rateLimitedText,
  refusalText,
  resetNotAllowedText,
} from '../../conversation/notices.js';
import type { Logger } from '../../observability/logger.js';
import type { Tracing } from '../../observability/tracing.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { SessionWithActivity } from '../../sessions/store.js';
import { DM_MAIN_THREAD } from '../../sessions/thread-key.js';
import type { SlackWrites } from '../../slack-out/writes.js';
import type { AccessPolicy, AccessRequest } from '../access.js';
import type { AgentViewConversations } from '../agent-view.js';
import type { ThreadResets } from '../resets.js';

export const RESET_SHORTCUT_CALLBACK_ID = 'reset_conversation';

/** Pages of the agent's session list read for `/agent sessions` (creation times): a bounded look-up. */
const SESSION_LIST_PAGES = 3;

export interface CommandOptions {
  command: string;
  sessions: SessionManager;
  resets: ThreadResets;
  agent: AgentClient;
  /** Workspace URL from auth.test, for links to threads. */
  workspaceUrl?: string;
  access: AccessPolicy;
  /** Counts a request against the person's per-minute limit; false when over it. */
  chargeUser: (userId: string) => Promise<boolean>;
  userRateLimit: number;
  /** In a Messages-tab conversation a top-level DM message starts its own thread, so it is reset as one. */
  agentViewConversations: AgentViewConversations;
  tracing: Pick<Tracing, 'traceparent'>;
  /** Answers privately through the request's response_url. */
  replies: Pick<SlackWrites, 'respond'>;
  logger: Logger;
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

const isDirectMessage = (channelId: string) => channelId.startsWith('D');

/** The slash command and the "Reset conversation" message shortcut. Every answer is ephemeral. */
export function registerCommands(app: App, options: CommandOptions): void {
  const { logger } = options;

  /** Access and the per-user limit, with the sentence for a refusal. */
  const refusal = async (request: AccessRequest): Promise<string | undefined> => {
    const decision = options.access.check(request);
    if (decision !== 'allowed')
      return refusalText(decision === 'channel-not-allowed' ? decision : 'user-not-allowed');
    if (!(await options.chargeUser(request.userId))) return rateLimitedText(options.userRateLimit);
    return undefined;
  };

  app.command(options.command, async ({ command, ack }) => {
    // Acknowledged first: Slack gives up after 3 s, and the work talks to the store and the agent service.
    await ack();
    const ephemeral = (text: string) => options.replies.respond(command.response_url, text);
    try {
      const refused = await refusal({
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
      const dm = isDirectMessage(command.channel_id);
      if (subcommand === 'reset') {
        const mine = await options.sessions.list(dm ? where : { ...where, startedBy: command.user_id });
        const agentView = dm
          ? await options.agentViewConversations.isAgentView(command.team_id, command.channel_id)
          : await options.agentViewConversations.isAgentApp(command.team_id);
        // Each conversation is reset as a thread reset is: behind its answer in progress, cancelling what waits.
        for (const session of mine) {
          const thread = { teamId: session.teamId, channelId: session.channelId, threadTs: session.threadTs };
          await options.resets.request(
            {
              thread,
              agentSession: agentView && thread.threadTs !== DM_MAIN_THREAD,
              silent: true,
              traceparent: options.tracing.traceparent(),
            },
            `${command.trigger_id}:${thread.threadTs}`,
            command.user_id,
          );
        }
        await ephemeral(resetSummary(mine.length, dm));
      } else if (subcommand === 'sessions') {
        const mine = await options.sessions.list(dm ? where : { ...where, startedBy: command.user_id });
        await ephemeral(await sessionsSummary(options, mine));
      } else {
        const prefix = subcommand === 'help' ? '' : `I don't know \`${subcommand}\`.\n`;
        await ephemeral(`${prefix}${usageText(options.command)}`);
      }
    } catch (error) {
      logger.error({ err: error }, 'slash command failed');
      await ephemeral(
        ':warning: That did not work: I could not reach my storage or the agent service. Please try again shortly.',
      ).catch(() => {});
    }
  });

  app.shortcut(RESET_SHORTCUT_CALLBACK_ID, async ({ shortcut, ack }) => {
    if (shortcut.type !== 'message_action') {
      await ack();
      return;
    }
    const message = shortcut.message as { ts: string; thread_ts?: string };
    const channelId = shortcut.channel.id;
    const teamId = shortcut.team?.id ?? shortcut.user.team_id ?? '';
    const userId = shortcut.user.id;
    const answer = (text: string) => options.replies.respond(shortcut.response_url, text);
    try {
      const refused = await refusal({ teamId, userTeamId: shortcut.user.team_id, channelId, userId });
      if (refused) {
        await ack();
        await answer(refused);
        return;
      }
      // A message with thread_ts is in (or is the root of) a thread: that thread is reset. In a classic 1:1 DM,
      // a plain top-level message belongs to the DM's main conversation.
      const rootTs = message.thread_ts ?? message.ts;
      const inDmMain =
        isDirectMessage(channelId) &&
        message.thread_ts === undefined &&
        !(await options.agentViewConversations.isAgentView(teamId, channelId));
      const thread = { teamId, channelId, threadTs: inDmMain ? DM_MAIN_THREAD : rootTs };
      const agentSession = isDirectMessage(channelId)
        ? !inDmMain && (await options.agentViewConversations.isAgentView(teamId, channelId))
        : await options.agentViewConversations.isAgentApp(teamId);
      // Recorded before the acknowledgement, like events: a crash right after it still resets the thread.
      const decided = await options.resets.request(
        {
          thread,
          replyThreadTs: inDmMain ? undefined : rootTs,
          responseUrl: shortcut.response_url,
          agentSession,
          traceparent: options.tracing.traceparent(),
        },
        shortcut.action_ts,
        userId,
      );
      await ack();
      if (decided.outcome === 'not-allowed') await answer(resetNotAllowedText(decided.starter));
    } catch (error) {
      logger.error({ err: error }, 'could not record a conversation reset');
      await ack();
      await answer(RESET_FAILED_TEXT);
    }
  });
}

function resetSummary(count: number, dm: boolean): string {
  if (count === 0) {
    return dm
      ? 'There was no conversation to reset here. Your next message starts a fresh one.'
      : 'You have no conversations with the agent in this channel to reset.';
  }
  if (dm) return ':broom: Done. Your next message here starts a fresh conversation with the agent.';
  const threads = count === 1 ? '1 thread' : `${count} threads`;
  return `:broom: Reset ${threads} you started in this channel. The next message in each starts a fresh conversation.`;
}

async function sessionsSummary(options: CommandOptions, mine: SessionWithActivity[]): Promise<string> {
  if (mine.length === 0) return 'You have no conversations with the agent here yet.';
  const createdOnService = await serviceCreationTimes(options, mine);
  const lines = mine.map((session) => {
    const started = createdOnService.get(session.sessionId) ?? session.createdAt;
    return `• ${threadLabel(options.workspaceUrl, session)}: started ${slackDate(started)}, last active ${slackDate(session.lastActiveAt)}`;
  });
  const count = mine.length === 1 ? '1 conversation' : `${mine.length} conversations`;
  return [`You have ${count} with the agent here:`, ...lines].join('\n');
}

/** Creation times as the service reports them (List Sessions, a few pages at most), where its ids match ours. */
async function serviceCreationTimes(
  options: CommandOptions,
  sessions: SessionWithActivity[],
): Promise<Map<string, string>> {
  const times = new Map<string, string>();
  for (const agentId of new Set(sessions.map((session) => session.agentId))) {
    try {
      for (const record of await options.agent.listSessions(agentId, SESSION_LIST_PAGES)) {
        if (record.createdAt) times.set(record.uuid, record.createdAt);
      }
    } catch (error) {
      options.logger.warn({ err: error, agentId }, 'could not list sessions; showing recorded times');
    }
  }
  return times;
}

function threadLabel(workspaceUrl: string | undefined, session: SessionWithActivity): string {
  if (session.threadTs === DM_MAIN_THREAD) return 'this conversation';
  if (!workspaceUrl) return `thread ${session.threadTs}`;
  const base = workspaceUrl.endsWith('/') ? workspaceUrl : `${workspaceUrl}/`;
  return `<${base}archives/${session.channelId}/p${session.threadTs.replace('.', '')}|thread>`;
}

/** A Slack date token: each reader sees it in their own time zone. */
function slackDate(value: string): string {
  const millis = Date.parse(value);
  if (Number.isNaN(millis)) return value;
  return `<!date^${Math.floor(millis / 1000)}^{date_short_pretty} {time}|${new Date(millis).toISOString()}>`;
}
