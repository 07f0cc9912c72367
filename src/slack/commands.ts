import type { App } from '@slack/bolt';
import type { AgentClient } from '../agent/client.js';
import { threadResetText } from '../conversation/notices.js';
import type { Intake } from '../delivery/intake.js';
import type { Logger } from '../observability/logger.js';
import type { SessionManager } from '../sessions/session-manager.js';
import type { ThreadSession } from '../sessions/session-store.js';
import { DM_MAIN_THREAD } from '../sessions/thread-key.js';
import { type AccessPolicy, refusalText } from './access-policy.js';
import type { AgentViewConversations } from './agent-view.js';

export const RESET_SHORTCUT_CALLBACK_ID = 'reset_conversation';

export interface CommandOptions {
  command: string;
  intake: Intake;
  sessions: SessionManager;
  agent: AgentClient;
  /** Workspace URL from auth.test, for links to threads. */
  workspaceUrl?: string;
  access: AccessPolicy;
  /** In a Messages-tab conversation a top-level DM message starts its own thread, so it is reset as one. */
  agentViewConversations: AgentViewConversations;
  logger: Logger;
}

export function usageText(command: string): string {
  return [
    `*${command}*: your conversations with the agent`,
    `• \`${command} reset\`: in a DM, start over (ends this DM's conversations). In a channel, ends the conversations in the threads you started here.`,
    `• \`${command} sessions\`: your conversations here, and when they started`,
    `• \`${command} help\`: this text`,
    'To reset a single thread, mention me in it with just `reset`, or use the message shortcut *Reset conversation* on any of its messages. Mention me with just `stop` to cancel messages still waiting for an answer.',
  ].join('\n');
}

const isDirectMessage = (channelId: string) => channelId.startsWith('D');

/** The slash command and the "Reset conversation" message shortcut. Every answer is ephemeral. */
export function registerCommands(app: App, options: CommandOptions): void {
  const { logger } = options;

  app.command(options.command, async ({ command, ack, respond }) => {
    // Acknowledge first: Slack gives up after 3 s, and resets talk to the agent service.
    await ack();
    const decision = options.access.check({
      teamId: command.team_id,
      channelId: command.channel_id,
      userId: command.user_id,
    });
    if (decision !== 'allowed') {
      const text = decision === 'team-not-allowed' ? refusalText('user-not-allowed') : refusalText(decision);
      await respond({ response_type: 'ephemeral', text });
      return;
    }
    const [subcommand = 'help'] = command.text.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const where = { teamId: command.team_id, channelId: command.channel_id };
    try {
      if (subcommand === 'reset') {
        const dm = isDirectMessage(command.channel_id);
        const count = await options.sessions.retireWhere(
          dm ? where : { ...where, startedBy: command.user_id },
          'reset',
        );
        await respond({ response_type: 'ephemeral', text: resetSummary(count, dm) });
      } else if (subcommand === 'sessions') {
        await respond({
          response_type: 'ephemeral',
          text: await sessionsSummary(options, command.user_id, where),
        });
      } else {
        const prefix = subcommand === 'help' ? '' : `I don't know \`${subcommand}\`.\n`;
        await respond({ response_type: 'ephemeral', text: `${prefix}${usageText(options.command)}` });
      }
    } catch (error) {
      logger.error({ err: error, subcommand }, 'slash command failed');
      await respond({
        response_type: 'ephemeral',
        text: ':warning: That did not work: I could not reach my storage or the agent service. Please try again shortly.',
      }).catch(() => {});
    }
  });

  app.shortcut(RESET_SHORTCUT_CALLBACK_ID, async ({ shortcut, ack, respond }) => {
    if (shortcut.type !== 'message_action') {
      await ack();
      return;
    }
    const message = shortcut.message as { ts: string; thread_ts?: string };
    const channelId = shortcut.channel.id;
    const teamId = shortcut.team?.id ?? shortcut.user.team_id ?? '';
    const decision = options.access.check({ teamId, channelId, userId: shortcut.user.id });
    if (decision !== 'allowed') {
      await ack();
      const text = decision === 'team-not-allowed' ? refusalText('user-not-allowed') : refusalText(decision);
      await respond({ response_type: 'ephemeral', text }).catch(() => {});
      return;
    }
    // A message with thread_ts is in (or is the root of) a thread: that thread is reset. In a 1:1 DM, a plain
    // top-level message belongs to the DM's main conversation.
    const rootTs = message.thread_ts ?? message.ts;
    const inDmMain =
      isDirectMessage(channelId) &&
      message.thread_ts === undefined &&
      !(await options.agentViewConversations.isAgentView(teamId, channelId).catch(() => false));
    const thread = { teamId, channelId, threadTs: inDmMain ? DM_MAIN_THREAD : rootTs };
    const replyThreadTs = inDmMain ? undefined : rootTs;
    try {
      // Recorded before the acknowledgement, like events: a crash right after it still resets the thread.
      await options.intake.enqueueReset(
        { thread, replyThreadTs, responseUrl: shortcut.response_url },
        shortcut.action_ts,
      );
      await ack();
    } catch (error) {
      logger.error({ err: error }, 'could not record a conversation reset');
      await ack();
      await respond({ response_type: 'ephemeral', text: threadResetText(-1) }).catch(() => {});
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

async function sessionsSummary(
  options: CommandOptions,
  userId: string,
  where: { teamId: string; channelId: string },
): Promise<string> {
  const dm = isDirectMessage(where.channelId);
  const mine = await options.sessions.list(dm ? where : { ...where, startedBy: userId });
  if (mine.length === 0) return 'You have no conversations with the agent here yet.';
  const createdOnService = await serviceCreationTimes(options, mine);
  const lines = mine
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
    .map((session) => {
      const started = createdOnService.get(session.sessionId) ?? session.createdAt;
      return `• ${threadLabel(options.workspaceUrl, session)}: started ${slackDate(started)}, last active ${slackDate(session.lastActiveAt)}`;
    });
  const count = mine.length === 1 ? '1 conversation' : `${mine.length} conversations`;
  return [`You have ${count} with the agent here:`, ...lines].join('\n');
}

/** Creation times as the service reports them (List Sessions), where its ids match ours. */
async function serviceCreationTimes(
  options: CommandOptions,
  sessions: ThreadSession[],
): Promise<Map<string, string>> {
  const times = new Map<string, string>();
  for (const agentId of new Set(sessions.map((session) => session.agentId))) {
    try {
      for (const record of await options.agent.listSessions(agentId)) {
        if (record.createdAt) times.set(record.uuid, record.createdAt);
      }
    } catch (error) {
      options.logger.warn({ err: error, agentId }, 'could not list sessions; showing recorded times');
    }
  }
  return times;
}

function threadLabel(workspaceUrl: string | undefined, session: ThreadSession): string {
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
