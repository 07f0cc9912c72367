/** Identifies one Slack conversation: the unit that owns one agent session. */
export interface ThreadKey {
  teamId: string;
  /**
   * The org (Enterprise Grid) the workspace belongs to, when Slack names one: for per-org agents and org-wide
   * uninstalls. Not part of any key: a team id is unique across orgs.
   */
  enterpriseId?: string;
  channelId: string;
  /** The thread's root `ts` (a top-level message is the root of its own thread), or `dm` for a DM's main line. */
  threadTs: string;
}

/** Thread key of the one continuing top-level conversation in a 1:1 DM. */
export const DM_MAIN_THREAD = 'dm';

export function threadKeyString({ teamId, channelId, threadTs }: ThreadKey): string {
  return `${teamId}:${channelId}:${threadTs}`;
}

/** What the thread keys of one channel's conversations start with. */
export function channelKeyPrefix({ teamId, channelId }: Pick<ThreadKey, 'teamId' | 'channelId'>): string {
  return `${teamId}:${channelId}:`;
}

/** The workspace of a thread key string (a team id has no colon). */
export function teamOfThreadKey(key: string): string {
  return key.slice(0, key.indexOf(':'));
}

/** Storage key of a thread's session with one agent: sessions are keyed by agent too. */
export function sessionKeyString(thread: ThreadKey, agentId: string): string {
  return `${threadKeyString(thread)}:${agentId}`;
}
