import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FakeSlackTenancy, InstallTarget, IssuedTokens } from './slack-tenancy.js';

/**
 * The fake Slack's side of OAuth v2 (https://docs.slack.dev/authentication/installing-with-oauth): the consent
 * page at `/oauth/v2/authorize` and the method `oauth.v2.access` (its errors are the method page's, checked by
 * the contracts in slack-contracts/methods.json).
 *
 * The consent page (GET) shows what the app asks for and where it would be installed; Allow (POST) redirects
 * the browser to `redirect_uri?code=…&state=…`, Cancel to `redirect_uri?error=access_denied&state=…`. A bad
 * `client_id`, a `redirect_uri` the app does not list, or no `scope` get an error page instead, as Slack shows
 * one rather than redirecting. Tests without a browser call `approve(authorizeUrl, choice)`.
 */

export interface FakeOAuthAppOptions {
  clientId?: string;
  clientSecret?: string;
  /**
   * The app's configured Redirect URLs (oauth_config.redirect_urls). A `redirect_uri` must match one of them
   * or be a subdirectory of it (https://docs.slack.dev/authentication/installing-with-oauth, "Asking for
   * scopes": redirect_uri); see `isAtOrBeneath`. Unset: none, and every install is refused, as Slack refuses an
   * app with no Redirect URL. A test whose bot's port is known only later sets them with setRedirectUrls.
   */
  redirectUrls?: readonly string[];
  /** settings.org_deploy_enabled: whether the app may be installed org-wide on Enterprise Grid. */
  orgDeployEnabled?: boolean;
}

/** Where and by whom the app is installed on the consent page. */
export type InstallChoice = InstallTarget & { userId?: string };

interface PendingCode {
  target: InstallTarget;
  installerUserId: string;
  scopes: string[];
  redirectUri?: string;
  expiresAt: number;
}

type Args = Record<string, unknown>;
type ApiBody = { ok: true; [key: string]: unknown } | { ok: false; error: string };

/** "Authorization codes … expire after ten minutes" (installing with OAuth, step 3). */
const CODE_LIFETIME_MS = 10 * 60_000;
const DEFAULT_INSTALLER = 'U0ADMIN';

export class FakeSlackOAuth {
  readonly clientId: string;
  readonly clientSecret: string;
  private redirectUrls: readonly string[];
  private readonly orgDeployEnabled: boolean;
  private readonly codes = new Map<string, PendingCode>();

  constructor(
    private readonly tenancy: FakeSlackTenancy,
    options: FakeOAuthAppOptions = {},
  ) {
    this.clientId = options.clientId ?? '1111111111.2222222222';
    this.clientSecret = options.clientSecret ?? 'fake-client-secret';
    this.redirectUrls = options.redirectUrls ?? [];
    this.orgDeployEnabled = options.orgDeployEnabled ?? false;
  }

  /**
   * Changes the app's Redirect URLs, as on its *OAuth & Permissions* page: for a bot whose address is known only
   * once it runs. An install that names no `redirect_uri` goes to the one configured.
   */
  setRedirectUrls(urls: readonly string[]): void {
    this.redirectUrls = [...urls];
  }

  /** Serves `/oauth/v2/authorize`: the consent page, and its Allow / Cancel. */
  async handleAuthorizePage(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const params = req.method === 'POST' ? await readForm(req) : url.searchParams;
    const problem = this.checkRequest(params);
    if (problem) {
      res
        .writeHead(400, { 'content-type': 'text/html; charset=utf-8' })
        .end(page('Something went wrong', problem));
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(this.consentPage(params));
      return;
    }
    const install = params.get('install_on') ?? '';
    const choice: InstallChoice | undefined = install.startsWith('org:')
      ? { enterpriseId: install.slice(4) }
      : install.startsWith('team:')
        ? { teamId: install.slice(5) }
        : undefined;
    const location =
      params.get('decision') === 'allow' && choice
        ? this.allow(params, { ...choice, userId: params.get('user') ?? DEFAULT_INSTALLER })
        : this.redirect(params, { error: 'access_denied' });
    res.writeHead(302, { location }).end();
  }

  /**
   * What pressing Allow on the consent page for `authorizeUrl` does, without a browser: the URL Slack
   * redirects to (`redirect_uri?code=…&state=…`). Throws with the page's problem if Slack would show an error.
   */
  approve(authorizeUrl: string, choice: InstallChoice): string {
    const params = new URL(authorizeUrl).searchParams;
    const problem = this.checkRequest(params);
    if (problem) throw new Error(`FakeSlack: the consent page shows an error: ${problem}`);
    return this.allow(params, choice);
  }

  /** oauth.v2.access: the `authorization_code` and `refresh_token` grants. */
  access(args: Args): ApiBody {
    if (args.client_id !== this.clientId) return fail('invalid_client_id');
    if (args.client_secret !== this.clientSecret) return fail('bad_client_secret');
    const grantType = typeof args.grant_type === 'string' ? args.grant_type : 'authorization_code';
    if (grantType === 'refresh_token') {
      const issued = this.tenancy.refresh(typeof args.refresh_token === 'string' ? args.refresh_token : '');
      return issued === 'invalid_refresh_token' ? fail(issued) : this.tokenResponse(issued, false);
    }
    if (grantType !== 'authorization_code') return fail('invalid_grant_type');
    const code = typeof args.code === 'string' ? this.codes.get(args.code) : undefined;
    // A code is good once, for ten minutes.
    if (code) this.codes.delete(String(args.code));
    if (!code || Date.now() >= code.expiresAt) return fail('invalid_code');
    // "did not match the redirect_uri in the original request" (only when one was sent).
    const redirectUri = typeof args.redirect_uri === 'string' ? args.redirect_uri : undefined;
    if (code.redirectUri !== undefined && redirectUri !== code.redirectUri) return fail('bad_redirect_uri');
    if ('teamId' in code.target) {
      // "the org-installed app cannot be installed on a workspace"
      const enterpriseId = this.tenancy.workspaces.get(code.target.teamId)?.enterpriseId;
      if (enterpriseId !== undefined && this.tenancy.installation(enterpriseId))
        return fail('cannot_install_an_org_installed_app');
    }
    const issued = this.tenancy.install(code.target, {
      installerUserId: code.installerUserId,
      scopes: code.scopes,
    });
    return this.tokenResponse(issued, true);
  }

  /** The problem Slack's page shows for an authorize request, or undefined when it shows consent. */
  private checkRequest(params: URLSearchParams): string | undefined {
    if (params.get('client_id') !== this.clientId) return 'Invalid client_id parameter';
    if (!params.get('scope')) return 'Invalid scope: the app asked for no scopes';
    const redirectUri = params.get('redirect_uri') ?? undefined;
    if (redirectUri === undefined && this.redirectUrls.length !== 1)
      return 'redirect_uri is missing, and the app has not exactly one Redirect URL';
    if (redirectUri !== undefined && !this.redirectUrls.some((url) => isAtOrBeneath(redirectUri, url)))
      return 'redirect_uri did not match any configured URIs';
    return undefined;
  }

  private allow(params: URLSearchParams, choice: InstallChoice): string {
    if ('enterpriseId' in choice) {
      if (!this.orgDeployEnabled)
        throw new Error('FakeSlack: org-wide install of an app without org_deploy_enabled');
      if (!this.tenancy.orgs.has(choice.enterpriseId))
        throw new Error(`FakeSlack: no org ${choice.enterpriseId}`);
    } else if (!this.tenancy.workspaces.has(choice.teamId)) {
      throw new Error(`FakeSlack: no workspace ${choice.teamId}`);
    }
    const code = `${Date.now()}.${randomBytes(16).toString('hex')}`;
    const redirectUri = params.get('redirect_uri') ?? undefined;
    this.codes.set(code, {
      target: 'teamId' in choice ? { teamId: choice.teamId } : { enterpriseId: choice.enterpriseId },
      installerUserId: choice.userId ?? DEFAULT_INSTALLER,
      scopes: (params.get('scope') ?? '').split(',').filter(Boolean),
      ...(redirectUri !== undefined && { redirectUri }),
      expiresAt: Date.now() + CODE_LIFETIME_MS,
    });
    return this.redirect(params, { code });
  }

  private redirect(params: URLSearchParams, add: Record<string, string>): string {
    const target = new URL(params.get('redirect_uri') ?? this.redirectUrls[0] ?? '');
    for (const [key, value] of Object.entries(add)) target.searchParams.set(key, value);
    const state = params.get('state');
    if (state !== null) target.searchParams.set('state', state);
    return target.toString();
  }

  /** Fields as oauth.v2.access's examples show them (success, success_with_token_rotation). */
  private tokenResponse(
    { installation, accessToken, refreshToken, expiresIn }: IssuedTokens,
    withUser: boolean,
  ): ApiBody {
    const team =
      installation.teamId === undefined
        ? null
        : { id: installation.teamId, name: this.teamName(installation.teamId) };
    const enterprise =
      installation.enterpriseId === undefined
        ? null
        : { id: installation.enterpriseId, name: this.tenancy.orgs.get(installation.enterpriseId)?.name };
    return {
      ok: true,
      access_token: accessToken,
      token_type: 'bot',
      scope: installation.scopes.join(','),
      bot_user_id: installation.botUserId,
      app_id: this.tenancy.appId,
      ...(expiresIn !== undefined && { expires_in: expiresIn, refresh_token: refreshToken }),
      team,
      enterprise,
      is_enterprise_install: installation.isEnterpriseInstall,
      // No user scopes are asked for: the installer is named, without a user token.
      ...(withUser && { authed_user: { id: installation.installerUserId } }),
    };
  }

  private teamName(teamId: string): string | undefined {
    return this.tenancy.workspaces.get(teamId)?.name;
  }

  private consentPage(params: URLSearchParams): string {
    const hidden = [...params]
      .map(([key, value]) => `<input type="hidden" name="${html(key)}" value="${html(value)}">`)
      .join('');
    const places = [
      ...[...this.tenancy.workspaces.values()].map(
        (w) => `<option value="team:${html(w.teamId)}">${html(w.name)} (${html(w.teamId)})</option>`,
      ),
      ...(this.orgDeployEnabled
        ? [...this.tenancy.orgs.values()].map(
            (o) =>
              `<option value="org:${html(o.enterpriseId)}">All of ${html(o.name)} (${html(o.enterpriseId)})</option>`,
          )
        : []),
    ].join('');
    const scopes = (params.get('scope') ?? '')
      .split(',')
      .map((scope) => `<li>${html(scope)}</li>`)
      .join('');
    return page(
      'Allow the app to access Slack',
      `<form method="post">${hidden}
<label>Install on <select name="install_on">${places}</select></label>
<label>As <input name="user" value="${DEFAULT_INSTALLER}"></label>
<p>It asks to:</p><ul>${scopes}</ul>
<button name="decision" value="cancel">Cancel</button>
<button name="decision" value="allow">Allow</button></form>`,
    );
  }
}

/**
 * Whether `redirectUri` is the configured Redirect URL `configured` or a subdirectory of it. Slack's pages say
 * only "match, or be a subdirectory of"; strict where they are silent: the same scheme, host and port (a
 * default port written out is the same port), no user info, the same query (none), and a path equal to the
 * configured one or under it by whole segments, once `..` and `.` are resolved (so `…/oauth_redirect_evil`
 * and `…/oauth_redirect/../install` are refused). A URL that does not parse matches nothing.
 */
export function isAtOrBeneath(redirectUri: string, configured: string): boolean {
  if (!URL.canParse(redirectUri) || !URL.canParse(configured)) return false;
  const sent = new URL(redirectUri);
  const allowed = new URL(configured);
  if (sent.protocol !== allowed.protocol || sent.host !== allowed.host) return false;
  if (sent.username !== '' || sent.password !== '' || sent.search !== allowed.search) return false;
  const base = allowed.pathname.endsWith('/') ? allowed.pathname : `${allowed.pathname}/`;
  return sent.pathname === allowed.pathname || sent.pathname.startsWith(base);
}

function fail(error: string): ApiBody {
  return { ok: false, error };
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function html(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${html(title)}</title></head><body><h1>${html(title)}</h1>${body}</body></html>`;
}
