import type { EnvReader } from './env-reader.js';
import { readSlackAuth } from './slack-auth.js';
import type { SlackConfig, SlackConnection } from './types.js';

export function readSlackConfig(reader: EnvReader): SlackConfig {
  const auth = readSlackAuth(reader);
  const connection = readConnection(reader);
  const apiUrl =
    reader.httpUrl('SLACK_API_URL', reader.read('SLACK_API_URL') ?? 'https://slack.com/api/') ?? '';
  return {
    auth,
    connection,
    apiUrl: apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`,
    callTimeoutMs: reader.integer('SLACK_CALL_TIMEOUT_MS', 20_000, 1_000, 120_000),
  };
}

function readConnection(reader: EnvReader): SlackConnection {
  const appToken = reader.read('SLACK_APP_TOKEN');
  if (appToken !== undefined) {
    if (!reader.placeholder('SLACK_APP_TOKEN') && !appToken.startsWith('xapp-')) {
      reader.fail('SLACK_APP_TOKEN', 'must be an app-level token starting with "xapp-"');
    }
    reader.placeholder('SLACK_SIGNING_SECRET');
    return { mode: 'socket', appToken, signingSecret: reader.read('SLACK_SIGNING_SECRET') };
  }
  reader.placeholder('SLACK_SIGNING_SECRET');
  return {
    mode: 'http',
    signingSecret: reader.required(
      'SLACK_SIGNING_SECRET',
      'needed in HTTP mode; set SLACK_APP_TOKEN instead to use Socket Mode',
    ),
  };
}

export function readSlashCommand(reader: EnvReader): string {
  const slashCommand = reader.read('SLASH_COMMAND') ?? '/agent';
  if (!/^\/[a-z0-9_-]{1,31}$/.test(slashCommand)) {
    reader.fail(
      'SLASH_COMMAND',
      `must look like /agent: a slash and up to 31 lowercase letters, digits, - or _ (got "${slashCommand}")`,
    );
  }
  return slashCommand;
}
