import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** The nearest `name` above this module: the repository's, also when run compiled from dist/ (the bench). */
function findUp(name: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, name);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`FakeSlack: no ${name} above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/** The repository's default app manifest: what the fake's workspace has installed unless told otherwise. */
export const DEFAULT_MANIFEST = findUp('manifest.yml');

/** What an install of an app manifest grants, as far as the fake needs it. */
export interface InstalledManifest {
  /** oauth_config.scopes.bot: exactly the bot scopes Slack grants on install. */
  botScopes: string[];
  /** features.agent_view: the app is an agent app. */
  agentView: boolean;
  /** oauth_config.redirect_urls: where an install may send the installer back to. */
  redirectUrls: string[];
  /** settings.org_deploy_enabled: the app can be installed org-wide on Enterprise Grid. */
  orgDeployEnabled: boolean;
  /** settings.token_rotation_enabled: installs get expiring tokens and refresh tokens. */
  tokenRotation: boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Manifests parsed, by their text: a test run starts hundreds of fakes on the same few files. */
const parsed = new Map<string, unknown>();

/** Reads a manifest (a path or file URL; YAML, so JSON manifests too). */
export function readManifest(path: string | URL = DEFAULT_MANIFEST): InstalledManifest {
  const text = readFileSync(path, 'utf8');
  if (!parsed.has(text)) parsed.set(text, parse(text));
  const manifest = parsed.get(text);
  const oauth = isRecord(manifest) && isRecord(manifest.oauth_config) ? manifest.oauth_config : {};
  const scopes = isRecord(oauth.scopes) ? oauth.scopes : {};
  const bot = Array.isArray(scopes.bot) ? scopes.bot : [];
  if (!bot.every((scope): scope is string => typeof scope === 'string')) {
    throw new Error(`${String(path)}: oauth_config.scopes.bot is not a list of scopes`);
  }
  const features = isRecord(manifest) && isRecord(manifest.features) ? manifest.features : {};
  const settings = isRecord(manifest) && isRecord(manifest.settings) ? manifest.settings : {};
  const redirectUrls = Array.isArray(oauth.redirect_urls) ? oauth.redirect_urls : [];
  return {
    // A copy each time: the parsed manifest is shared.
    botScopes: [...bot],
    agentView: isRecord(features.agent_view),
    redirectUrls: redirectUrls.filter((url): url is string => typeof url === 'string'),
    orgDeployEnabled: settings.org_deploy_enabled === true,
    tokenRotation: settings.token_rotation_enabled === true,
  };
}
