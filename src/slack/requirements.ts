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

/** Scopes the bot needs that the token lacks; undefined when Slack did not report the granted scopes. */
export function missingScopes(granted: readonly string[] | undefined): string[] | undefined {
  if (!granted) return undefined;
  const have = new Set(granted);
  return Object.keys(REQUIRED_BOT_SCOPES).filter((scope) => !have.has(scope));
}
