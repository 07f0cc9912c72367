/** Identifies one Slack conversation: the unit that owns one agent session. */
export interface ThreadKey {
  teamId: string;
  channelId: string;
  /** The thread's root `ts` (a top-level message is the root of its own thread), or `dm` for a DM's main line. */
  threadTs: string;
}

/** Thread key of the one continuing top-level conversation in a 1:1 DM. */
export const DM_MAIN_THREAD = 'dm';

export function threadKeyString({ teamId, channelId, threadTs }: ThreadKey): string {
  return `${teamId}:${channelId}:${threadTs}`;
}

/** The workspace of a thread key string (a team id has no colon). */
export function teamOfThreadKey(key: string): string {
  return key.slice(0, key.indexOf(':'));
}

/** Storage key of a thread's session with one agent: sessions are keyed by agent too. */
export function sessionKeyString(thread: ThreadKey, agentId: string): string {
  return `${threadKeyString(thread)}:${agentId}`;
}
