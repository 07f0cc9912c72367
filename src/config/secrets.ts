import type { Config, OperatorConfig } from './types.js';

/**
 * Every configured secret value, for log redaction: tokens, the signing secret, the OAuth client and state
 * secrets, the API key, the database URL. Installation tokens are redacted by shape (see the logger).
 */
export function secretsOf(config: Config | OperatorConfig): string[] {
  const { agent, store } = config;
  const secrets = [agent.apiKey];
  if ('slack' in config) {
    const { slack } = config;
    if (slack.auth.mode === 'single') secrets.push(slack.auth.botToken);
    else {
      const { clientSecret, stateSecret, tokenKeys } = slack.auth;
      secrets.push(clientSecret, stateSecret, ...tokenKeys.map(({ key }) => key.toString('base64')));
    }
    if (slack.connection.mode === 'socket') secrets.push(slack.connection.appToken);
    if (slack.connection.signingSecret) secrets.push(slack.connection.signingSecret);
  }
  if (store.kind === 'postgres') secrets.push(...databaseSecrets(store.databaseUrl));
  return secrets.filter((secret) => secret.length >= 4);
}

/**
 * The whole URL and its password, as written (URL-encoded) and decoded; pg reads the password from the
 * user-info part or from a `password` parameter.
 */
function databaseSecrets(databaseUrl: string): string[] {
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    // Not a URL: the whole value is the secret.
    return [databaseUrl];
  }
  const written = [
    url.password,
    ...url.search
      .slice(1)
      .split('&')
      .filter((pair) => pair.startsWith('password='))
      .map((pair) => pair.slice('password='.length)),
  ];
  return [databaseUrl, ...written, decodedOrSelf(url.password), ...url.searchParams.getAll('password')];
}

/** A URL component decoded; as written when it is not valid percent-encoding (it is still the secret). */
function decodedOrSelf(component: string): string {
  try {
    return decodeURIComponent(component);
  } catch {
    return component;
  }
}
