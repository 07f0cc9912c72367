import { randomBytes } from 'node:crypto';
import { nextTs, type SlackEventEnvelope } from '../helpers/slack-events.js';

/**
 * The fake Slack's workspaces, Enterprise Grid organisations, the app's installations in them and the tokens
 * those installations hold. FakeSlack asks it who a token acts for, and whether that reaches a channel.
 *
 * Sources: oauth.v2.access (https://docs.slack.dev/reference/methods/oauth.v2.access: response fields and
 * examples, in slack-ruby/slack-api-ref docs.slack.dev/methods/oauth.v2.access.json), token rotation
 * (https://docs.slack.dev/authentication/using-token-rotation), org-wide apps
 * (https://docs.slack.dev/enterprise/organization-ready-apps), the events app_uninstalled and tokens_revoked
 * (https://docs.slack.dev/reference/events/app_uninstalled, …/tokens_revoked), an org-wide app added to or
 * removed from one of the org's workspaces (https://docs.slack.dev/reference/events/team_access_granted,
 * …/team_access_revoked; @slack/types TeamAccessGrantedEvent: `team_ids`, `event_ts`) and the Events API envelope as
 * @slack/bolt types it (EnvelopedEvent: team_id, enterprise_id, context_team_id, context_enterprise_id,
 * authorizations[].{enterprise_id, team_id, user_id, is_bot, is_enterprise_install}).
 */

export interface FakeWorkspace {
  teamId: string;
  name: string;
  /** The Enterprise Grid organisation it belongs to, if any. */
  enterpriseId?: string;
  /** The app's bot user here (each workspace install has its own); default `U0BOT<teamId>`. */
  botUserId?: string;
}

export interface FakeOrg {
  enterpriseId: string;
  name: string;
  /** The org-wide app's one bot user, in every workspace it is added to; default `U0BOT<enterpriseId>`. */
  botUserId?: string;
}

/**
 * What a calling token answers instead of working, once revoked: Slack's common errors read `token_revoked`
 * ("the app has been removed"), `account_inactive` ("deleted user or workspace when using a bot token") and
 * `invalid_auth` ("the provided token is invalid"). Slack does not say which a bot token gets after an
 * uninstall. `invalid_auth` is also the answer to a disallowed IP address (refuseAddress), so the bot takes only
 * the first two as the workspace gone, and learns of an uninstall answered `invalid_auth` from Slack's events.
 */
export type RevokedAnswer = 'token_revoked' | 'account_inactive' | 'invalid_auth';

/** One installation of the app: a workspace install (by team id) or an org-wide install (by enterprise id). */
export interface FakeInstallation {
  /** The team id of a workspace install, the enterprise id of an org install (Slack keys them so). */
  readonly key: string;
  readonly teamId?: string;
  readonly enterpriseId?: string;
  readonly isEnterpriseInstall: boolean;
  readonly botUserId: string;
  readonly botId: string;
  readonly installerUserId: string;
  readonly scopes: readonly string[];
  /** The workspaces it acts in: its own, or those of the org the admin added the org-wide app to. */
  readonly teams: ReadonlySet<string>;
}

/** Who made a Web API call, as recorded on SlackApiCall. */
export interface FakeCaller {
  installation: string;
  teamId?: string;
  enterpriseId?: string;
  isEnterpriseInstall: boolean;
  botUserId: string;
}

export interface IssuedTokens {
  installation: FakeInstallation;
  accessToken: string;
  /** Set when the app has token rotation on. */
  refreshToken?: string;
  expiresIn?: number;
}

export interface TokenRotation {
  /** `expires_in` of each access token; Slack's is 43200 (12 hours). */
  lifetimeSeconds: number;
  /**
   * Whether an access token keeps working until its own expiry once a refresh has issued the next one. Slack
   * says the spent refresh token is revoked and is silent on the access token it replaces; the fake is strict by
   * default (false: it answers `token_expired` at once), so a replica using a superseded token is caught.
   */
  keepSupersededTokens: boolean;
}

interface AccessToken {
  installation: FakeInstallation;
  /** ms since epoch; undefined: never expires (no rotation). */
  expiresAt?: number;
  superseded: boolean;
  revoked?: RevokedAnswer;
}

interface RefreshToken {
  installation: FakeInstallation;
  spent: boolean;
  revoked: boolean;
}

export type TokenCheck = { installation: FakeInstallation } | { error: string };

/** A workspace or an org, as tests name the target of an install or an uninstall. */
export type InstallTarget = { teamId: string } | { enterpriseId: string };

const token = (prefix: string) => `${prefix}${randomBytes(12).toString('hex')}`;

export class FakeSlackTenancy {
  readonly workspaces = new Map<string, FakeWorkspace>();
  readonly orgs = new Map<string, FakeOrg>();
  private readonly current = new Map<string, FakeInstallation>();
  private readonly accessTokens = new Map<string, AccessToken>();
  private readonly refreshTokens = new Map<string, RefreshToken>();
  /** Installations whose tokens are used from an address an allowlist of them does not include. */
  private readonly addressRefused = new Set<string>();
  private botCounter = 0;

  constructor(
    readonly appId: string,
    /** undefined: the app has token rotation off, and its tokens never expire. */
    readonly rotation: TokenRotation | undefined,
  ) {}

  addWorkspace(workspace: FakeWorkspace): void {
    if (workspace.enterpriseId !== undefined && !this.orgs.has(workspace.enterpriseId))
      throw new Error(
        `FakeSlack: add org ${workspace.enterpriseId} before its workspace ${workspace.teamId}`,
      );
    this.workspaces.set(workspace.teamId, workspace);
  }

  addOrg(org: FakeOrg): void {
    this.orgs.set(org.enterpriseId, org);
  }

  /** The installation serving `teamId` now: its workspace install, else its org's install if added there. */
  installationFor(teamId: string): FakeInstallation | undefined {
    const own = this.current.get(teamId);
    if (own) return own;
    const enterpriseId = this.workspaces.get(teamId)?.enterpriseId;
    const org = enterpriseId === undefined ? undefined : this.current.get(enterpriseId);
    return org?.teams.has(teamId) ? org : undefined;
  }

  installation(key: string): FakeInstallation | undefined {
    return this.current.get(key);
  }

  /**
   * Installs the app (what the consent page's Allow does) and issues its bot token, with a refresh token when
   * rotation is on. An org-wide install serves `teams` (default: every workspace of the org); the admin adds
   * it to more later with addToWorkspace. Installing again replaces the installation; earlier tokens go on
   * working (Slack documents nothing else).
   */
  install(
    target: InstallTarget,
    options: {
      installerUserId: string;
      scopes: readonly string[];
      teams?: readonly string[];
      /** A fixed bot token and bot id (the fake's preinstalled default workspace); else fresh ones. */
      token?: string;
      botId?: string;
    },
  ): IssuedTokens {
    let installation: FakeInstallation;
    if ('teamId' in target) {
      const workspace = this.workspaces.get(target.teamId);
      if (!workspace) throw new Error(`FakeSlack: no workspace ${target.teamId}`);
      installation = {
        key: workspace.teamId,
        teamId: workspace.teamId,
        ...(workspace.enterpriseId !== undefined && { enterpriseId: workspace.enterpriseId }),
        isEnterpriseInstall: false,
        botUserId: workspace.botUserId ?? `U0BOT${workspace.teamId}`,
        botId: options.botId ?? this.nextBotId(),
        installerUserId: options.installerUserId,
        scopes: [...options.scopes],
        teams: new Set([workspace.teamId]),
      };
    } else {
      const org = this.orgs.get(target.enterpriseId);
      if (!org) throw new Error(`FakeSlack: no org ${target.enterpriseId}`);
      const teams = options.teams ?? this.teamsOf(org.enterpriseId);
      installation = {
        key: org.enterpriseId,
        enterpriseId: org.enterpriseId,
        isEnterpriseInstall: true,
        botUserId: org.botUserId ?? `U0BOT${org.enterpriseId}`,
        botId: options.botId ?? this.nextBotId(),
        installerUserId: options.installerUserId,
        scopes: [...options.scopes],
        teams: new Set(teams),
      };
    }
    this.current.set(installation.key, installation);
    return this.issue(installation, options.token);
  }

  /**
   * An org admin adds the org-wide app to one more of the org's workspaces. Returns the `team_access_granted`
   * event Slack sends the app.
   */
  addToWorkspace(enterpriseId: string, teamId: string): SlackEventEnvelope<unknown> {
    const installation = this.orgInstallOf(enterpriseId, teamId);
    (installation.teams as Set<string>).add(teamId);
    return this.teamAccessEvent(installation, 'team_access_granted', [teamId]);
  }

  /**
   * An org admin removes the org-wide app from one of the org's workspaces: its token no longer reaches there
   * ("in other words, it's been uninstalled from a workspace", team_access_revoked). Returns that event.
   */
  removeFromWorkspace(enterpriseId: string, teamId: string): SlackEventEnvelope<unknown> {
    const installation = this.orgInstallOf(enterpriseId, teamId);
    (installation.teams as Set<string>).delete(teamId);
    return this.teamAccessEvent(installation, 'team_access_revoked', [teamId]);
  }

  private orgInstallOf(enterpriseId: string, teamId: string): FakeInstallation {
    const installation = this.current.get(enterpriseId);
    if (!installation?.isEnterpriseInstall) throw new Error(`FakeSlack: ${enterpriseId} has no org install`);
    if (this.workspaces.get(teamId)?.enterpriseId !== enterpriseId)
      throw new Error(`FakeSlack: ${teamId} is not a workspace of ${enterpriseId}`);
    return installation;
  }

  /**
   * The reference pages' payload: an org-level envelope (`team_id: null`, the org as `enterprise_id`) around
   * `{ type, team_ids }`, with `event_ts` as @slack/types has it.
   */
  private teamAccessEvent(
    installation: FakeInstallation,
    type: 'team_access_granted' | 'team_access_revoked',
    teamIds: string[],
  ): SlackEventEnvelope<unknown> {
    const envelope = this.envelopeFor(installation, { type, team_ids: teamIds, event_ts: nextTs() });
    return { ...envelope, enterprise_id: installation.enterpriseId };
  }

  /**
   * The `refresh_token` grant: the refresh token is spent (it "is then revoked", token rotation page) and a new
   * access token and refresh token are issued. A spent, revoked or unknown one answers `invalid_refresh_token`.
   */
  refresh(refreshToken: string): IssuedTokens | 'invalid_refresh_token' {
    const stored = this.refreshTokens.get(refreshToken);
    if (!stored || stored.spent || stored.revoked) return 'invalid_refresh_token';
    stored.spent = true;
    if (!this.rotation?.keepSupersededTokens) {
      for (const access of this.accessTokens.values())
        if (access.installation === stored.installation) access.superseded = true;
    }
    return this.issue(stored.installation);
  }

  /** Whether an installation was ever given this access token (revoked and expired ones included). */
  issued(accessToken: string): boolean {
    return this.accessTokens.has(accessToken);
  }

  /** Whom a token acts for, or the error Slack answers for it. */
  check(accessToken: string): TokenCheck {
    const stored = this.accessTokens.get(accessToken);
    if (!stored) return { error: 'invalid_auth' };
    if (stored.revoked) return { error: stored.revoked };
    if (this.addressRefused.has(stored.installation.key)) return { error: 'invalid_auth' };
    // "Authentication token has expired" (token_expired, common errors).
    if (stored.superseded || (stored.expiresAt !== undefined && Date.now() >= stored.expiresAt))
      return { error: 'token_expired' };
    return { installation: stored.installation };
  }

  /** Whether an installation reaches a channel of `channelTeam` (shared with `sharedWith` too). */
  reaches(installation: FakeInstallation, channelTeam: string, sharedWith: readonly string[] = []): boolean {
    return [channelTeam, ...sharedWith].some((team) => installation.teams.has(team));
  }

  /**
   * Revokes every token of an installation (as an admin revoking them, or Slack on an uninstall); afterwards
   * its calls answer `answer`. Returns the `tokens_revoked` event Slack sends, which names the bot user, not
   * the token. No-op returning the event again if already revoked.
   */
  revokeTokens(target: InstallTarget, answer: RevokedAnswer = 'token_revoked'): SlackEventEnvelope<unknown> {
    const installation = this.current.get(keyOf(target));
    if (!installation) throw new Error(`FakeSlack: ${keyOf(target)} has no installation`);
    for (const access of this.accessTokens.values())
      if (access.installation.key === installation.key) access.revoked ??= answer;
    for (const refresh of this.refreshTokens.values())
      if (refresh.installation.key === installation.key) refresh.revoked = true;
    return this.envelopeFor(installation, {
      type: 'tokens_revoked',
      tokens: { oauth: [], bot: [installation.botUserId] },
      event_ts: nextTs(),
    });
  }

  /**
   * The installation's tokens are restricted to IP addresses the bot does not call from: every call answers
   * `invalid_auth`, which Slack's common errors (on every token-authenticated method's page on docs.slack.dev,
   * e.g. reference/methods/chat.postMessage, and in slack-ruby/slack-api-ref's method files) give for a request
   * that "originates from an IP address disallowed from making the request" as for an invalid token. Who sets
   * such an allowlist, and how it is scoped, those pages do not say; the installation and its tokens stay as
   * they were, and `allowAddress` lifts it.
   */
  refuseAddress(target: InstallTarget): void {
    this.addressRefused.add(keyOf(target));
  }

  allowAddress(target: InstallTarget): void {
    this.addressRefused.delete(keyOf(target));
  }

  /**
   * Uninstalls the app: its tokens are revoked and the installation is gone. Returns both events Slack sends;
   * their order "is not guaranteed" (app_uninstalled page), so the test delivers them in the order it wants.
   */
  uninstall(
    target: InstallTarget,
    answer: RevokedAnswer = 'token_revoked',
  ): { appUninstalled: SlackEventEnvelope<unknown>; tokensRevoked: SlackEventEnvelope<unknown> } {
    const installation = this.current.get(keyOf(target));
    if (!installation) throw new Error(`FakeSlack: ${keyOf(target)} has no installation`);
    const tokensRevoked = this.revokeTokens(target, answer);
    this.current.delete(installation.key);
    const appUninstalled = this.envelopeFor(installation, { type: 'app_uninstalled', event_ts: nextTs() });
    return { appUninstalled, tokensRevoked };
  }

  /**
   * An event envelope as Slack delivers it to the installation serving `envelope.team_id` (the workspace the
   * event happened in): `enterprise_id` and `context_*` for a workspace of an org, and `authorizations[0]`
   * naming the installation, `team_id: null` and `is_enterprise_install: true` for an org-wide one. Throws
   * when the app is not installed there: Slack would deliver nothing.
   */
  addressed<E>(envelope: SlackEventEnvelope<E>): SlackEventEnvelope<E> {
    const teamId = envelope.team_id;
    if (teamId === null) throw new Error('FakeSlack: an event addressed to a workspace names its team_id');
    const installation = this.installationFor(teamId);
    if (!installation)
      throw new Error(`FakeSlack: the app is not installed in ${teamId}; Slack sends nothing`);
    const enterpriseId = this.workspaces.get(teamId)?.enterpriseId;
    return {
      ...envelope,
      ...(enterpriseId !== undefined && { enterprise_id: enterpriseId }),
      context_team_id: teamId,
      context_enterprise_id: enterpriseId ?? null,
      authorizations: [authorizationOf(installation)],
      authed_users: [installation.botUserId],
    };
  }

  private envelopeFor<E>(installation: FakeInstallation, event: E): SlackEventEnvelope<E> {
    // An org-wide install's uninstall happens in no one workspace, and Slack's pages are silent on its
    // envelope. Strict reading: as its org-level events (team_access_granted's reference page), `team_id: null`;
    // and the org named only in authorizations[0], as the sample payload of Slack's reference for org-wide
    // apps does (api.slack.com/enterprise/apps/reference). The bot reads both that and an envelope naming it.
    const teamId = installation.teamId ?? null;
    return {
      token: 'fake-verification-token',
      team_id: teamId,
      ...(installation.enterpriseId !== undefined &&
        installation.teamId !== undefined && { enterprise_id: installation.enterpriseId }),
      api_app_id: this.appId,
      event,
      type: 'event_callback',
      event_id: `Ev${randomBytes(6).toString('hex').toUpperCase()}`,
      event_time: Math.floor(Date.now() / 1000),
      authorizations: [authorizationOf(installation)],
      authed_users: [],
      is_ext_shared_channel: false,
      event_context: `4-${Buffer.from(JSON.stringify({ tid: teamId ?? installation.enterpriseId, aid: this.appId })).toString('base64url')}`,
    };
  }

  private issue(installation: FakeInstallation, fixedToken?: string): IssuedTokens {
    const rotation = this.rotation;
    // Token shapes from oauth.v2.access's examples: `xoxb-…`, and with rotation `xoxe.xoxb-1-…` / `xoxe-1-…`.
    const accessToken = fixedToken ?? token(rotation ? 'xoxe.xoxb-1-' : 'xoxb-');
    if (!rotation) {
      this.accessTokens.set(accessToken, { installation, superseded: false });
      return { installation, accessToken };
    }
    const refreshToken = token('xoxe-1-');
    const expiresAt = Date.now() + rotation.lifetimeSeconds * 1000;
    this.accessTokens.set(accessToken, { installation, expiresAt, superseded: false });
    this.refreshTokens.set(refreshToken, { installation, spent: false, revoked: false });
    return { installation, accessToken, refreshToken, expiresIn: rotation.lifetimeSeconds };
  }

  private teamsOf(enterpriseId: string): string[] {
    return [...this.workspaces.values()].filter((w) => w.enterpriseId === enterpriseId).map((w) => w.teamId);
  }

  private nextBotId(): string {
    this.botCounter += 1;
    return `B0BOT${this.botCounter}`;
  }
}

function keyOf(target: InstallTarget): string {
  return 'teamId' in target ? target.teamId : target.enterpriseId;
}

function authorizationOf(
  installation: FakeInstallation,
): SlackEventEnvelope<unknown>['authorizations'][number] {
  return {
    enterprise_id: installation.enterpriseId ?? null,
    team_id: installation.isEnterpriseInstall ? null : (installation.teamId ?? null),
    user_id: installation.botUserId,
    is_bot: true,
    is_enterprise_install: installation.isEnterpriseInstall,
  };
}

/** What SlackApiCall records of the caller. */
export function callerOf(installation: FakeInstallation): FakeCaller {
  return {
    installation: installation.key,
    ...(installation.teamId !== undefined && { teamId: installation.teamId }),
    ...(installation.enterpriseId !== undefined && { enterpriseId: installation.enterpriseId }),
    isEnterpriseInstall: installation.isEnterpriseInstall,
    botUserId: installation.botUserId,
  };
}
