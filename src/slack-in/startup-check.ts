import { type Logger as SlackLogger, LogLevel as SlackLogLevel } from '@slack/bolt';
import { WebClient } from '@slack/web-api';
import { type Config, StartupError } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import { slackErrorCode } from '../slack-out/client.js';
import { AGENT_VIEW_SCOPES, missingScopes, scopePurpose } from './requirements.js';

/** Who the bot is in Slack, from auth.test. */
export interface BotIdentity {
  teamId?: string;
  botUserId: string;
  botId?: string;
  /** Workspace URL, e.g. https://acme.slack.com/ */
  url?: string;
  /** Bot scopes Slack reports as granted (x-oauth-scopes), when it reports them. */
  scopes?: string[];
}

/**
 * The check's client says nothing: its failure is the one start-up line below, not also a line for each of
 * the client's tries ("http request failed").
 */
const SILENT: SlackLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  setLevel: () => {},
  getLevel: () => SlackLogLevel.ERROR,
  setName: () => {},
};

/** A client for one start-up check: it fails fast instead of retrying for half an hour. */
function checkClient(config: Config, token: string): WebClient {
  return new WebClient(token, {
    slackApiUrl: config.slack.apiUrl,
    retryConfig: { retries: 2, factor: 2, minTimeout: 500, maxTimeout: 2000 },
    timeout: 10_000,
    logger: SILENT,
  });
}

/**
 * A failed check's one line: the variable whose token Slack refused, or Slack unreachable (the same line from
 * either check, so that it is reported once).
 */
function checkFailure(config: Config, variable: string, method: string, error: unknown): StartupError {
  const code = slackErrorCode(error);
  if (code) return new StartupError(`${variable} was rejected by Slack (${method}: ${code})`);
  return new StartupError(
    `cannot reach Slack at ${config.slack.apiUrl} (${error instanceof Error ? error.message : String(error)}); check SLACK_API_URL and the network`,
  );
}

/** auth.test with the bot token: a refused token or an unreachable Slack stops start-up with one line. */
export async function checkSlackIdentity(config: Config, botToken: string): Promise<BotIdentity> {
  let result: Awaited<ReturnType<WebClient['auth']['test']>>;
  try {
    result = await checkClient(config, botToken).auth.test();
  } catch (error) {
    throw checkFailure(config, 'SLACK_BOT_TOKEN', 'auth.test', error);
  }
  if (!result.user_id)
    throw new StartupError('auth.test did not return the bot user id; is SLACK_BOT_TOKEN a bot token?');
  return {
    teamId: result.team_id,
    botUserId: result.user_id,
    botId: result.bot_id,
    url: result.url,
    scopes: result.response_metadata?.scopes,
  };
}

/**
 * Socket Mode: the app-level token asked for a connection URL (apps.connections.open, the call the receiver
 * makes to connect; the URL is left unused), so a refused token is named at start-up with the other checks.
 */
export async function checkAppToken(config: Config, appToken: string): Promise<void> {
  try {
    await checkClient(config, appToken).apps.connections.open();
  } catch (error) {
    throw checkFailure(config, 'SLACK_APP_TOKEN', 'apps.connections.open', error);
  }
}

/** One clear line per scope the token lacks, naming the manifest entry that fixes it. */
export function reportMissingScopes(identity: BotIdentity, agentView: boolean, logger: Logger): void {
  const missing = missingScopes(identity.scopes, agentView);
  if (missing === undefined) {
    logger.info('Slack did not report the granted scopes; skipping the scope self-check');
    return;
  }
  for (const scope of missing) {
    const neededFor = scopePurpose(scope);
    logger.warn(
      { scope, neededFor },
      `Slack scope "${scope}" is not granted (needed for ${neededFor}): add it under oauth_config.scopes.bot in manifest.yml and reinstall the app` +
        (scope in AGENT_VIEW_SCOPES ? ', or set SLACK_AGENT_VIEW=false for the classic bot' : ''),
    );
  }
}
