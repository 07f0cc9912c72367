import type { AgentClient } from '../../../agent/client.js';
import { createdAtMs } from '../../../agent/session-list.js';
import type { Logger } from '../../../observability/logger.js';
import { isSlackThread } from '../../../sessions/conversation-of.js';
import type { SessionWithActivity } from '../../../sessions/store.js';

/** Pages of the agent's session list read for `/agent sessions` (creation times): a bounded look-up. */
const SESSION_LIST_PAGES = 3;
/** Conversations listed at most: a line is about 250 characters, and Slack takes 40,000 in a message. */
const MAX_LISTED = 50;

export interface SessionsSummaryDeps {
  agent: Pick<AgentClient, 'listSessions'>;
  /** Workspace URL from auth.test, for links to threads. */
  workspaceUrl?: string;
  logger: Pick<Logger, 'warn'>;
}

/** `/agent sessions`: the person's conversations here, with when each started and was last active. */
export async function sessionsSummary(
  deps: SessionsSummaryDeps,
  mine: SessionWithActivity[],
): Promise<string> {
  if (mine.length === 0) return 'You have no conversations with the agent here yet.';
  const listed = [...mine]
    .sort((a, b) => Date.parse(b.lastActiveAt) - Date.parse(a.lastActiveAt))
    .slice(0, MAX_LISTED);
  const createdOnService = await serviceCreationTimes(deps, listed);
  const lines = listed.map((session) => {
    const started = createdOnService.get(session.sessionId) ?? session.createdAt;
    return `• ${threadLabel(deps.workspaceUrl, session)}: started ${slackDate(started)}, last active ${slackDate(session.lastActiveAt)}`;
  });
  const count = mine.length === 1 ? '1 conversation' : `${mine.length} conversations`;
  if (listed.length === mine.length) return [`You have ${count} with the agent here:`, ...lines].join('\n');
  return [
    `You have ${count} with the agent here; the ${listed.length} most recently active:`,
    ...lines,
    `…and ${mine.length - listed.length} less recently active.`,
  ].join('\n');
}

/** Creation times as the service reports them (List Sessions, a few pages at most), where its ids match ours. */
async function serviceCreationTimes(
  deps: SessionsSummaryDeps,
  sessions: SessionWithActivity[],
): Promise<Map<string, string>> {
  const times = new Map<string, string>();
  for (const agentId of new Set(sessions.map((session) => session.agentId))) {
    try {
      for (const record of await deps.agent.listSessions(agentId, SESSION_LIST_PAGES)) {
        const created = createdAtMs(record);
        if (created !== undefined) times.set(record.uuid, new Date(created).toISOString());
      }
    } catch (error) {
      deps.logger.warn({ err: error, agentId }, 'could not list sessions; showing recorded times');
    }
  }
  return times;
}

export function threadLabel(workspaceUrl: string | undefined, session: SessionWithActivity): string {
  if (!isSlackThread(session)) return 'this conversation';
  if (!workspaceUrl) return `thread ${session.threadTs}`;
  const base = workspaceUrl.endsWith('/') ? workspaceUrl : `${workspaceUrl}/`;
  return `<${base}archives/${session.channelId}/p${session.threadTs.replace('.', '')}|thread>`;
}

/** A Slack date token: each reader sees it in their own time zone. */
export function slackDate(value: string): string {
  const millis = Date.parse(value);
  if (Number.isNaN(millis)) return value;
  return `<!date^${Math.floor(millis / 1000)}^{date_short_pretty} {time}|${new Date(millis).toISOString()}>`;
}
