import type { EnvReader } from './env-reader.js';
import { ConfigError } from './errors.js';
import { parseTokenKeys, type TokenKey } from './token-keys.js';
import type { SlackAuth } from './types.js';

/**
 * Which Slack credentials the bot runs on: one workspace's bot token (SLACK_BOT_TOKEN, the default), or
 * OAuth installations in many workspaces (SLACK_CLIENT_ID and SLACK_CLIENT_SECRET). One mode at a time: a
 * bot token next to OAuth would leave it unclear which workspace's token answers.
 */
export function readSlackAuth(reader: EnvReader): SlackAuth {
  const clientId = reader.read('SLACK_CLIENT_ID');
  const clientSecret = reader.read('SLACK_CLIENT_SECRET');
  if (clientId === undefined && clientSecret === undefined)
    return { mode: 'single', botToken: botToken(reader) };

  if (reader.read('SLACK_BOT_TOKEN') !== undefined) {
    reader.fail(
      'SLACK_BOT_TOKEN',
      'must be unset when SLACK_CLIENT_ID and SLACK_CLIENT_SECRET are set: OAuth mode answers each workspace with the token of its installation (one mode at a time)',
    );
  }
  const oauthHint = 'OAuth mode: both SLACK_CLIENT_ID and SLACK_CLIENT_SECRET, from Basic Information';
  const id = reader.required('SLACK_CLIENT_ID', oauthHint);
  if (id !== '' && !reader.placeholder('SLACK_CLIENT_ID') && !/^[0-9]+\.[0-9]+$/.test(id)) {
    reader.fail('SLACK_CLIENT_ID', `must look like 1234567890.1234567890 (got "${id}")`);
  }
  reader.placeholder('SLACK_CLIENT_SECRET');
  const secret = reader.required('SLACK_CLIENT_SECRET', oauthHint);
  reader.placeholder('SLACK_STATE_SECRET');
  const stateSecret = reader.required(
    'SLACK_STATE_SECRET',
    'in OAuth mode: a random string that signs the install flow, e.g. openssl rand -hex 32',
  );
  if (stateSecret !== '' && stateSecret.length < 16) {
    reader.fail('SLACK_STATE_SECRET', 'must be at least 16 characters (openssl rand -hex 32 makes one)');
  }
  return {
    mode: 'oauth',
    clientId: id,
    clientSecret: secret,
    stateSecret,
    tokenKeys: readTokenKeys(reader),
  };
}

function botToken(reader: EnvReader): string {
  const token = reader.required('SLACK_BOT_TOKEN', 'the Bot User OAuth Token, xoxb-…');
  if (!reader.placeholder('SLACK_BOT_TOKEN') && token !== '' && !token.startsWith('xoxb-')) {
    reader.fail('SLACK_BOT_TOKEN', 'must be a bot token starting with "xoxb-"');
  }
  return token;
}

/** TOKEN_ENCRYPTION_KEYS, required: OAuth mode and the installations command read it. */
export function readTokenKeys(reader: EnvReader): TokenKey[] {
  const value = reader.required(
    'TOKEN_ENCRYPTION_KEYS',
    'in OAuth mode: the keys that seal stored tokens, e.g. k1:$(openssl rand -base64 32)',
  );
  if (value === '') return [];
  try {
    return parseTokenKeys(value);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const { problem } of error.problems) reader.fail('TOKEN_ENCRYPTION_KEYS', problem);
    return [];
  }
}
