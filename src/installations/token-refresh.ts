import type { Installation } from '@slack/bolt';
import { WebClient } from '@slack/web-api';

/** Slack's access tokens under rotation last 12 hours; one is renewed when less than this is left… */
const REFRESH_AHEAD_S = 2 * 60 * 60;
/** …or less than this share of its life, for tokens that live shorter than that window (a test's). */
const REFRESH_AHEAD_SHARE = 0.5;
/** A refresh is one small call: a slow one is better failed, and the current token used meanwhile. */
const REFRESH_TIMEOUT_MS = 10_000;

/** When the bot token of an installation was issued and expires (epoch seconds); none without rotation. */
export interface TokenLife {
  issuedAt: number;
  expiresAt: number;
}

export function needsRefresh(life: TokenLife | undefined, nowS = Date.now() / 1000): boolean {
  if (life === undefined) return false;
  const ahead = Math.min(REFRESH_AHEAD_S, (life.expiresAt - life.issuedAt) * REFRESH_AHEAD_SHARE);
  return life.expiresAt - nowS <= ahead;
}

/** Whether the token may still be used (it has not expired). */
export function stillValid(life: TokenLife | undefined, nowS = Date.now() / 1000): boolean {
  return life === undefined || life.expiresAt > nowS;
}

/** A refresh Slack refused; `code` is Slack's error (e.g. `invalid_refresh_token`), never a token. */
export class TokenRefreshError extends Error {
  override readonly name = 'TokenRefreshError';
  constructor(readonly code: string) {
    super(`Slack refused to refresh the bot token (oauth.v2.access: ${code})`);
  }
}

/**
 * Spends an installation's bot refresh token (oauth.v2.access, grant `refresh_token`) and returns the
 * installation with the new token, refresh token and expiry. Slack accepts each refresh token once: callers
 * hold the installation's lock.
 */
export class TokenRefresher {
  private readonly client: WebClient;

  constructor(
    private readonly app: { clientId: string; clientSecret: string },
    slackApiUrl: string,
  ) {
    this.client = new WebClient(undefined, {
      slackApiUrl,
      timeout: REFRESH_TIMEOUT_MS,
      // A refresh token Slack may have spent must not be sent again: the caller reads the store first.
      retryConfig: { retries: 0 },
    });
  }

  async refresh(installation: Installation): Promise<{ installation: Installation; life: TokenLife }> {
    const refreshToken = installation.bot?.refreshToken;
    if (!installation.bot || refreshToken === undefined) throw new TokenRefreshError('no_refresh_token');
    let answer: Awaited<ReturnType<WebClient['oauth']['v2']['access']>>;
    try {
      answer = await this.client.oauth.v2.access({
        client_id: this.app.clientId,
        client_secret: this.app.clientSecret,
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
      });
    } catch (error) {
      throw new TokenRefreshError(slackCodeOf(error) ?? (error instanceof Error ? error.message : 'failed'));
    }
    const { access_token: token, refresh_token: nextRefresh, expires_in: expiresIn } = answer;
    if (!token || !nextRefresh || expiresIn === undefined) throw new TokenRefreshError('incomplete_answer');
    const issuedAt = Math.floor(Date.now() / 1000);
    const life = { issuedAt, expiresAt: issuedAt + expiresIn };
    return {
      installation: {
        ...installation,
        bot: { ...installation.bot, token, refreshToken: nextRefresh, expiresAt: life.expiresAt },
      },
      life,
    };
  }
}

/** Slack's error code of a refused call (WebClient's platform error), when that is how it failed. */
function slackCodeOf(error: unknown): string | undefined {
  const code = (error as { data?: { error?: unknown } } | undefined)?.data?.error;
  return typeof code === 'string' ? code : undefined;
}
