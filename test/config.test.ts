import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, secretsOf } from '../src/config/index.js';
import { startEntryPoint } from './helpers/entry-point.js';

const valid = {
  SLACK_BOT_TOKEN: 'xoxb-1-abc',
  SLACK_SIGNING_SECRET: 'shh-signing',
  AGENT_BASE_URL: 'https://agent-service.internal/v1/',
  AGENT_API_KEY: 'key-123',
  AGENT_ID: 'agent-1',
};

function errorFor(env: Record<string, string | undefined>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig(valid);
    expect(config.port).toBe(3000);
    expect(config.slack.apiUrl).toBe('https://slack.com/api/');
    expect(config.slack.connection).toEqual({ mode: 'http', signingSecret: 'shh-signing' });
    expect(config.agent).toEqual({
      baseUrl: 'https://agent-service.internal/v1',
      apiKey: 'key-123',
      agentId: 'agent-1',
      channelAgents: new Map(),
      workspaceAgents: new Map(),
      orgAgents: new Map(),
      timeoutMs: 90_000,
    });
    expect(config.sessions).toEqual({ idleTtlMs: 30 * 86_400_000, deleteRetryMs: 5_000 });
    expect(config.slashCommand).toBe('/agent');
    expect(config.conversation).toEqual({
      mentionOnly: false,
      maxPromptChars: 8_000,
      slowNoticeMs: 20_000,
      workingIndicatorDelayMs: 1_000,
      threadContextMessages: 20,
      feedbackButtons: true,
    });
    expect(config.adminPort).toBe(9090);
    expect(config.delivery).toEqual({
      concurrency: 200,
      leaseMs: 10_000,
      shutdownTimeoutMs: 20_000,
      replyRetryWindowMs: 3_600_000,
      storeOutageAckMs: 120_000,
      storeRetryWindowMs: 180_000,
      storeWriteRetryMs: 20_000,
    });
    expect(config.slack.callTimeoutMs).toBe(20_000);
    expect(config.tracing).toEqual({ endpoint: undefined, serviceName: 'slack-agent-bridge' });
    expect(config.agentView.mode).toBe('auto');
    expect(config.agentView.suggestedPrompts).toHaveLength(3);
    expect(config.store).toEqual({ kind: 'embedded', dataDir: path.resolve('data') });
    expect(config.logLevel).toBe('info');
  });

  it('reads suggested prompts as title::message entries, at most four', () => {
    const config = loadConfig({
      ...valid,
      SLACK_AGENT_VIEW: 'false',
      SUGGESTED_PROMPTS: 'Plan::Plan my week| Just ask ',
    });
    expect(config.agentView.mode).toBe('off');
    expect(loadConfig({ ...valid, SLACK_AGENT_VIEW: 'true' }).agentView.mode).toBe('on');
    expect(() => loadConfig({ ...valid, SLACK_AGENT_VIEW: 'maybe' })).toThrow(
      /SLACK_AGENT_VIEW must be auto, true or false/,
    );
    expect(config.agentView.suggestedPrompts).toEqual([
      { title: 'Plan', message: 'Plan my week' },
      { title: 'Just ask', message: 'Just ask' },
    ]);
    expect(() => loadConfig({ ...valid, SUGGESTED_PROMPTS: 'a|b|c|d|e' })).toThrow(
      /SUGGESTED_PROMPTS.*at most 4/,
    );
  });

  it('uses Socket Mode when SLACK_APP_TOKEN is set, without needing the signing secret', () => {
    const config = loadConfig({ ...valid, SLACK_SIGNING_SECRET: undefined, SLACK_APP_TOKEN: 'xapp-1-x' });
    expect(config.slack.connection).toMatchObject({ mode: 'socket', appToken: 'xapp-1-x' });
  });

  it('prefers PostgreSQL when both DATABASE_URL and DATA_DIR are set', () => {
    const config = loadConfig({ ...valid, DATABASE_URL: 'postgres://u:p@db/x', DATA_DIR: '/tmp/x' });
    expect(config.store).toEqual({ kind: 'postgres', databaseUrl: 'postgres://u:p@db/x', poolSize: 10 });
    const withPassword = loadConfig({ ...valid, DATABASE_URL: 'postgres://u:longpassword@db/x' });
    expect(secretsOf(withPassword)).toContain('longpassword');
  });

  it('reads per-channel, per-workspace and per-org agent routes, and durations', () => {
    const config = loadConfig({
      ...valid,
      AGENT_ROUTES: 'C01=agent-b, C02 = agent-c',
      AGENT_WORKSPACE_ROUTES: 'T01=agent-t',
      AGENT_ORG_ROUTES: 'E01=agent-e,E02=agent-f',
      SESSION_IDLE_TTL: '12h',
    });
    expect([...config.agent.channelAgents]).toEqual([
      ['C01', 'agent-b'],
      ['C02', 'agent-c'],
    ]);
    expect([...config.agent.workspaceAgents]).toEqual([['T01', 'agent-t']]);
    expect([...config.agent.orgAgents]).toEqual([
      ['E01', 'agent-e'],
      ['E02', 'agent-f'],
    ]);
    expect(config.sessions.idleTtlMs).toBe(12 * 3_600_000);
    expect(loadConfig({ ...valid, SESSION_IDLE_TTL: '0' }).sessions.idleTtlMs).toBe(0);
    expect(loadConfig({ ...valid, STORE_RETRY_WINDOW: '90s' }).delivery.storeRetryWindowMs).toBe(90_000);
  });

  it('adds the trailing slash WebClient needs to SLACK_API_URL', () => {
    expect(loadConfig({ ...valid, SLACK_API_URL: 'http://127.0.0.1:9/api' }).slack.apiUrl).toBe(
      'http://127.0.0.1:9/api/',
    );
  });

  it.each([
    [{ SLACK_BOT_TOKEN: undefined }, /^SLACK_BOT_TOKEN is required/],
    [{ SLACK_BOT_TOKEN: 'xapp-oops' }, /^SLACK_BOT_TOKEN must be a bot token/],
    [{ SLACK_SIGNING_SECRET: '' }, /^SLACK_SIGNING_SECRET is required/],
    [{ SLACK_APP_TOKEN: 'xoxb-wrong' }, /^SLACK_APP_TOKEN must be/],
    [{ PORT: 'eighty' }, /^PORT must be a whole number from 1 to 65535 \(got "eighty"\)/],
    [{ PORT: '70000' }, /^PORT must be/],
    [{ AGENT_BASE_URL: 'ftp://x' }, /^AGENT_BASE_URL must be an http\(s\) URL/],
    // Never the credentials a URL may hold.
    [
      { AGENT_BASE_URL: 'ftp://bridge:s3cret@agents.internal/v1' },
      /^AGENT_BASE_URL must be an http\(s\) URL \(got "\(not shown: it has an @\)"\)$/,
    ],
    [
      { AGENT_BASE_URL: 'bridge:s3cret@agents internal' },
      /^AGENT_BASE_URL must be an http\(s\) URL \(got "\(not shown: it has an @\)"\)$/,
    ],
    [{ AGENT_API_KEY: undefined }, /^AGENT_API_KEY is required/],
    [{ AGENT_ID: ' ' }, /^AGENT_ID is required/],
    [{ AGENT_TIMEOUT_MS: '-1' }, /^AGENT_TIMEOUT_MS must be/],
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL must be a postgres/],
    [{ DATABASE_POOL_SIZE: '1' }, /^DATABASE_POOL_SIZE must be a whole number from 2 to 1000/],
    // A password with an unencoded '#' (the rest reads as a fragment) or a port that is not a number; the line
    // never echoes the value, which holds the password.
    [
      { DATABASE_URL: 'postgres://user:s3cret#pw@db:5432/bridge' },
      /^DATABASE_URL is not a valid URL \(percent-encode/,
    ],
    [{ DATABASE_URL: 'postgres://user:pw@db:port/bridge' }, /^DATABASE_URL is not a valid URL/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of/],
    [{ SLACK_API_URL: 'not a url' }, /^SLACK_API_URL must be an http\(s\) URL/],
    [{ AGENT_ROUTES: 'C01:agent-b' }, /^AGENT_ROUTES must be a comma-separated list of CHANNEL_ID=AGENT_ID/],
    [
      { AGENT_WORKSPACE_ROUTES: 't01=agent-b' },
      /^AGENT_WORKSPACE_ROUTES must be a comma-separated list of TEAM_ID=AGENT_ID \(bad entry "t01=agent-b"\)/,
    ],
    [
      { AGENT_ROUTES: 'T01=agent-b' },
      /^AGENT_ROUTES must be a comma-separated list of CHANNEL_ID=AGENT_ID \(bad entry "T01=agent-b"\)/,
    ],
    [
      { AGENT_WORKSPACE_ROUTES: 'C01=agent-b' },
      /^AGENT_WORKSPACE_ROUTES must be a comma-separated list of TEAM_ID=AGENT_ID \(bad entry "C01=agent-b"\)/,
    ],
    [
      { AGENT_ORG_ROUTES: 'T01=agent-b' },
      /^AGENT_ORG_ROUTES must be a comma-separated list of ENTERPRISE_ID=AGENT_ID \(bad entry "T01=agent-b"\)/,
    ],
    [
      { AGENT_ROUTES: 'C01=agent-b,G01=agent-c,C01=agent-d' },
      /^AGENT_ROUTES names C01 twice; give each CHANNEL_ID one agent/,
    ],
    [
      { AGENT_ORG_ROUTES: 'E01=' },
      /^AGENT_ORG_ROUTES must be a comma-separated list of ENTERPRISE_ID=AGENT_ID/,
    ],
    [{ SESSION_IDLE_TTL: '30 days' }, /^SESSION_IDLE_TTL must be a duration like 30d/],
    [
      { STORE_RETRY_WINDOW: '0' },
      /^STORE_RETRY_WINDOW must be a duration from 1s to 1h, like 3m or 90s \(got "0"\)/,
    ],
    [{ STORE_RETRY_WINDOW: '2h' }, /^STORE_RETRY_WINDOW must be a duration from 1s to 1h/],
    [{ STORE_RETRY_WINDOW: 'soon' }, /^STORE_RETRY_WINDOW must be a duration from 1s to 1h/],
    [{ SLASH_COMMAND: 'agent' }, /^SLASH_COMMAND must look like \/agent/],
    [{ MENTION_ONLY: 'maybe' }, /^MENTION_ONLY must be true or false/],
    [{ MAX_PROMPT_CHARS: '0' }, /^MAX_PROMPT_CHARS must be/],
  ])('rejects %o with a message naming the variable', (override, expected) => {
    expect(errorFor({ ...valid, ...override })).toMatch(expected);
  });

  it('never echoes a secret value in its message', () => {
    expect(errorFor({ ...valid, SLACK_BOT_TOKEN: 'secret-looking-value' })).not.toContain(
      'secret-looking-value',
    );
  });
});

describe('the placeholders of .env.example', () => {
  it('are refused as placeholders, one line each, instead of as malformed or as refused by Slack', () => {
    const problems = (() => {
      try {
        loadConfig({
          ...valid,
          SLACK_BOT_TOKEN: 'xoxb-...',
          SLACK_APP_TOKEN: 'xapp-...',
          AGENT_API_KEY: 'sk-…',
        });
      } catch (error) {
        return (error as ConfigError).lines;
      }
      return [];
    })();
    expect(problems).toEqual([
      'Configuration error: SLACK_BOT_TOKEN is still the placeholder ("xoxb-...") from .env.example: set the real value',
      'Configuration error: SLACK_APP_TOKEN is still the placeholder ("xapp-...") from .env.example: set the real value',
      'Configuration error: AGENT_API_KEY is still the placeholder ("sk-…") from .env.example: set the real value',
    ]);
  });

  it.each([
    'https://agents.example.com/v1',
    'https://example.com/v1',
    'http://Agents.Example.COM:8080/v1',
    'https://agents.example.org/v1',
  ])('refuses an AGENT_BASE_URL on a domain reserved for examples (%s), naming the variable', (url) => {
    const domain = /example\.(com|org)/i.exec(url)?.[0].toLowerCase();
    expect(errorFor({ ...valid, AGENT_BASE_URL: url })).toBe(
      `AGENT_BASE_URL is a placeholder ("${url}"): ${domain} is reserved for examples, so no real service is there; set the real URL`,
    );
  });

  it.each(['https://notexample.com/v1', 'https://example.com.agents.internal/v1'])(
    'accepts an AGENT_BASE_URL that only looks like one (%s)',
    (url) => {
      expect(loadConfig({ ...valid, AGENT_BASE_URL: url }).agent.baseUrl).toBe(url);
    },
  );

  it('never echoes a longer value that only ends in dots', () => {
    expect(errorFor({ ...valid, AGENT_API_KEY: 'a-real-looking-key...' })).toBe(
      'AGENT_API_KEY is still the placeholder from .env.example: set the real value',
    );
  });
});

describe('start-up with bad configuration', () => {
  it('prints one line naming the variable and exits non-zero, without a stack trace', async () => {
    const run = startEntryPoint('src/main.ts', [], { ...valid, PORT: 'abc' }, { timeoutMs: 20_000 });
    expect((await run.exited).code).toBe(1);
    const lines = run.stderr().trim().split('\n');
    expect(lines).toEqual(['Configuration error: PORT must be a whole number from 1 to 65535 (got "abc")']);
    expect(run.stdout()).toBe('');
  });
});

describe('OAuth (multi-workspace) mode', () => {
  const key = Buffer.alloc(32, 7).toString('base64');
  const oauth = {
    SLACK_SIGNING_SECRET: 'shh-signing',
    AGENT_BASE_URL: 'https://agent-service.internal/v1/',
    AGENT_API_KEY: 'key-123',
    AGENT_ID: 'agent-1',
    SLACK_CLIENT_ID: '1111111111.2222222222',
    SLACK_CLIENT_SECRET: 'client-secret-value',
    SLACK_STATE_SECRET: 'state-secret-0123456789',
    TOKEN_ENCRYPTION_KEYS: `k2:${key},k1:${Buffer.alloc(32, 1).toString('base64')}`,
  };

  it('is chosen by SLACK_CLIENT_ID and SLACK_CLIENT_SECRET, with every key, the first sealing', () => {
    const { auth } = loadConfig(oauth).slack;
    expect(auth.mode).toBe('oauth');
    if (auth.mode !== 'oauth') return;
    expect(auth.clientId).toBe('1111111111.2222222222');
    expect(auth.tokenKeys.map((tokenKey) => tokenKey.id)).toEqual(['k2', 'k1']);
    expect(loadConfig(valid).slack.auth).toEqual({ mode: 'single', botToken: 'xoxb-1-abc' });
  });

  it('refuses a bot token beside it, saying why', () => {
    expect(errorFor({ ...oauth, SLACK_BOT_TOKEN: 'xoxb-1-abc' })).toBe(
      'SLACK_BOT_TOKEN must be unset when SLACK_CLIENT_ID and SLACK_CLIENT_SECRET are set: OAuth mode answers each workspace with the token of its installation (one mode at a time)',
    );
  });

  it.each([
    [{ SLACK_CLIENT_SECRET: undefined }, /^SLACK_CLIENT_SECRET is required \(OAuth mode/],
    [{ SLACK_CLIENT_ID: undefined }, /^SLACK_CLIENT_ID is required \(OAuth mode/],
    [{ SLACK_CLIENT_ID: 'my-app' }, /^SLACK_CLIENT_ID must look like 1234567890\.1234567890/],
    [{ SLACK_STATE_SECRET: undefined }, /^SLACK_STATE_SECRET is required/],
    [{ SLACK_STATE_SECRET: 'short' }, /^SLACK_STATE_SECRET must be at least 16 characters/],
    [{ TOKEN_ENCRYPTION_KEYS: undefined }, /^TOKEN_ENCRYPTION_KEYS is required/],
    [{ TOKEN_ENCRYPTION_KEYS: 'k1:c2hvcnQ=' }, /^TOKEN_ENCRYPTION_KEYS key "k1" is 5 bytes, not 32/],
  ])('rejects %o with a line naming the variable', (override, expected) => {
    expect(errorFor({ ...oauth, ...override })).toMatch(expected);
  });

  it('redacts the client and state secrets and the keys from logs', () => {
    const secrets = secretsOf(loadConfig(oauth));
    expect(secrets).toContain('client-secret-value');
    expect(secrets).toContain('state-secret-0123456789');
    expect(secrets).toContain(key);
  });
});
