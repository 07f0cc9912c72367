import { describe, expect, it } from 'vitest';
import { loadConfig, loadOperatorConfig } from '../../src/config/index.js';
import { secretsOf } from '../../src/config/secrets.js';

const agent = {
  AGENT_BASE_URL: 'https://agent-service.internal/v1/',
  AGENT_API_KEY: 'key-123',
  AGENT_ID: 'agent-1',
};
const single = { ...agent, SLACK_BOT_TOKEN: 'xoxb-1-abc', SLACK_SIGNING_SECRET: 'shh-signing' };

describe('secretsOf', () => {
  it("names the agent key, the bot token and the signing secret of a single workspace's bot", () => {
    expect(secretsOf(loadConfig(single)).sort()).toEqual(['key-123', 'shh-signing', 'xoxb-1-abc']);
  });

  it("names Socket Mode's app token, and the signing secret only when one is set", () => {
    const socket = { ...single, SLACK_SIGNING_SECRET: undefined, SLACK_APP_TOKEN: 'xapp-1-token' };
    expect(secretsOf(loadConfig(socket)).sort()).toEqual(['key-123', 'xapp-1-token', 'xoxb-1-abc']);
    expect(secretsOf(loadConfig({ ...socket, SLACK_SIGNING_SECRET: 'shh-signing' }))).toContain(
      'shh-signing',
    );
  });

  it('names the OAuth client and state secrets and every token key, as written, and no bot token', () => {
    const keys = [Buffer.alloc(32, 7).toString('base64'), Buffer.alloc(32, 1).toString('base64')];
    const oauth = {
      ...agent,
      SLACK_SIGNING_SECRET: 'shh-signing',
      SLACK_CLIENT_ID: '1111111111.2222222222',
      SLACK_CLIENT_SECRET: 'client-secret-value',
      SLACK_STATE_SECRET: 'state-secret-0123456789',
      TOKEN_ENCRYPTION_KEYS: `k2:${keys[0]},k1:${keys[1]}`,
    };
    expect(secretsOf(loadConfig(oauth)).sort()).toEqual(
      ['key-123', 'shh-signing', 'client-secret-value', 'state-secret-0123456789', ...keys].sort(),
    );
  });

  it('names the database URL and its password as written and decoded, from the user part or a parameter', () => {
    const url = 'postgres://bridge:p%40ss%2Fword@db:5432/bridge?sslmode=require&password=q%26rst';
    const secrets = secretsOf(loadConfig({ ...single, DATABASE_URL: url }));
    for (const secret of [url, 'p%40ss%2Fword', 'p@ss/word', 'q%26rst', 'q&rst'])
      expect(secrets).toContain(secret);
    // The user, host and database are not secrets: redacting them would hide what an operator needs.
    for (const word of ['bridge', 'db', 'require']) expect(secrets).not.toContain(word);
  });

  it('keeps a password that is not valid percent-encoding as written; a URL it cannot read is refused unechoed', () => {
    expect(secretsOf(loadConfig({ ...single, DATABASE_URL: 'postgres://u:100%pass@db/x' }))).toContain(
      '100%pass',
    );
    expect(() => loadConfig({ ...single, DATABASE_URL: 'postgres://u:secretpw@db:port/x' })).toThrow(
      /^DATABASE_URL is not a valid URL[^\n]*$/,
    );
    expect(() => loadConfig({ ...single, DATABASE_URL: 'postgres://u:secretpw@db:port/x' })).not.toThrow(
      /secretpw/,
    );
  });

  it('leaves out values under 4 characters, which would blank out ordinary words in every log line', () => {
    const secrets = secretsOf(
      loadConfig({ ...single, AGENT_API_KEY: 'k1', DATABASE_URL: 'postgres://u:pw@db/x' }),
    );
    expect(secrets).not.toContain('k1');
    expect(secrets).not.toContain('pw');
    expect(secrets).toContain('postgres://u:pw@db/x');
  });

  it("names only the agent key and the store's secrets for the operator command, which has no Slack settings", () => {
    const config = loadOperatorConfig({ ...agent, DATABASE_URL: 'postgres://u:longpassword@db/x' });
    expect(new Set(secretsOf(config))).toEqual(
      new Set(['key-123', 'longpassword', 'postgres://u:longpassword@db/x']),
    );
  });
});
