/**
 * The bot scopes the bot needs, with what each is for. manifest.yml must request all of them (a test
 * checks), and at start-up the scopes Slack reports for the token are compared with this list.
 */
export const REQUIRED_BOT_SCOPES: Readonly<Record<string, string>> = {
  'app_mentions:read': 'receiving @mentions',
  'channels:history': 'thread replies in public channels',
  'groups:history': 'thread replies in private channels',
  'im:history': 'direct messages',
  'mpim:history': 'group direct messages',
  'channels:read': 'knowing when a public channel is archived or deleted',
  'groups:read': 'knowing when a private channel is archived or deleted',
  'chat:write': 'posting replies',
  'reactions:write': 'the working and queued indicators',
  'users:read': 'showing mentioned people as @name',
  commands: 'the slash command and the Reset conversation shortcut',
};

/** Needed only with the agent view (SLACK_AGENT_VIEW, manifest.yml's features.agent_view). */
export const AGENT_VIEW_SCOPES: Readonly<Record<string, string>> = {
  'assistant:write': 'the status, title and suggested prompts of Messages-tab conversations',
};

/** The bot scopes the "Add to Slack" page asks for (OAuth mode). */
export function installScopes(agentView: boolean): string[] {
  return [...Object.keys(REQUIRED_BOT_SCOPES), ...(agentView ? Object.keys(AGENT_VIEW_SCOPES) : [])];
}

/** What a scope is needed for. */
export function scopePurpose(scope: string): string | undefined {
  return REQUIRED_BOT_SCOPES[scope] ?? AGENT_VIEW_SCOPES[scope];
}

/** Scopes the bot needs that the token lacks; undefined when Slack did not report the granted scopes. */
export function missingScopes(
  granted: readonly string[] | undefined,
  agentView = false,
): string[] | undefined {
  if (!granted) return undefined;
  const have = new Set(granted);
  const needed = [...Object.keys(REQUIRED_BOT_SCOPES), ...(agentView ? Object.keys(AGENT_VIEW_SCOPES) : [])];
  return needed.filter((scope) => !have.has(scope));
}
