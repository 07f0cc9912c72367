import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The workspace being served, as the ambient context of everything done for one event, command, button or
 * job: in OAuth mode every Slack call made in it goes out with that workspace's token (SlackWebClient asks
 * here), and the bot's own user is that installation's. Entered once where work starts (the Slack request
 * that brought it, the job the worker runs, the expired conversation the sweeper closes), so no write or read
 * of Slack has to be told whose it is. Single-workspace mode never enters one.
 */
export interface ServedWorkspace {
  /** The workspace of the conversation (a thread key's team). */
  teamId: string;
  /** Set when an organisation-wide installation serves it (Enterprise Grid). */
  enterpriseId?: string;
  /** The bot's user in this workspace (an org install has one for the whole organisation). */
  botUserId: string;
}

const scope = new AsyncLocalStorage<ServedWorkspace>();

export function inWorkspace<T>(workspace: ServedWorkspace, work: () => T): T {
  return scope.run(workspace, work);
}

/** The workspace being served here; undefined outside any (single-workspace mode, start-up, housekeeping). */
export function servedWorkspace(): ServedWorkspace | undefined {
  return scope.getStore();
}

/** The bot's user id where this runs: the served installation's, else the one token's (single-workspace mode). */
export function botUserIdHere(singleWorkspaceBotUserId: string): string {
  return scope.getStore()?.botUserId ?? singleWorkspaceBotUserId;
}
