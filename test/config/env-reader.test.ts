import { describe, expect, it } from 'vitest';
import { EnvReader, parseDuration } from '../../src/config/env-reader.js';

const MINUTE = 60_000;

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['0s', 0],
    ['90s', 90_000],
    ['15m', 15 * MINUTE],
    ['12h', 12 * 60 * MINUTE],
    ['30d', 30 * 24 * 60 * MINUTE],
    ['15 m', 15 * MINUTE],
    ['12H', 12 * 60 * MINUTE],
  ])('reads %s as %i ms', (raw, ms) => {
    expect(parseDuration(raw)).toBe(ms);
  });

  it.each(['', '15', '1.5h', '-5m', '500ms', '2w', '30 days', 'm', ' 15m', '15m '])('refuses %j', (raw) => {
    expect(parseDuration(raw)).toBeUndefined();
  });
});

describe('EnvReader', () => {
  it('reads a value trimmed, and a blank one as unset', () => {
    const env = new EnvReader({ PORT: ' 8080 ', SLACK_BOT_TOKEN: '   ', AGENT_BASE_URL: '' });
    expect(env.read('PORT')).toBe('8080');
    expect(env.read('SLACK_BOT_TOKEN')).toBeUndefined();
    expect(env.read('AGENT_BASE_URL')).toBeUndefined();
    expect(env.required('SLACK_BOT_TOKEN', 'the bot token')).toBe('');
    expect(env.problems).toEqual([{ variable: 'SLACK_BOT_TOKEN', problem: 'is required (the bot token)' }]);
  });

  it('records every problem instead of stopping at the first, and falls back for each', () => {
    const env = new EnvReader({ PORT: 'eighty', MENTION_ONLY: 'maybe', SESSION_IDLE_TTL: 'soon' });
    expect(env.integer('PORT', 3000, 1, 65_535)).toBe(3000);
    expect(env.boolean('MENTION_ONLY', false)).toBe(false);
    expect(env.duration('SESSION_IDLE_TTL', '30d')).toBe(30 * 24 * 60 * MINUTE);
    expect(env.problems).toEqual([
      { variable: 'PORT', problem: 'must be a whole number from 1 to 65535 (got "eighty")' },
      { variable: 'MENTION_ONLY', problem: 'must be true or false (got "maybe")' },
      {
        variable: 'SESSION_IDLE_TTL',
        problem: 'must be a duration like 30d, 12h, 15m or 90s, or 0 for off (got "soon")',
      },
    ]);
  });

  it('takes a whole number within its bounds only, the bounds included', () => {
    const read = (PORT: string) => {
      const env = new EnvReader({ PORT });
      return { value: env.integer('PORT', 7, 1, 100), refused: env.problems.length > 0 };
    };
    expect(read('1')).toEqual({ value: 1, refused: false });
    expect(read('100')).toEqual({ value: 100, refused: false });
    for (const raw of ['0', '101', '-1', '1e2', '5.0', '0x10', '99999999999999999999']) {
      expect(read(raw), raw).toEqual({ value: 7, refused: true });
    }
  });

  it('reads the words for true and false in any case, and the fallback when unset', () => {
    const env = new EnvReader({ MENTION_ONLY: 'YES', FEEDBACK_BUTTONS: 'Off' });
    expect(env.boolean('MENTION_ONLY', false)).toBe(true);
    expect(env.boolean('FEEDBACK_BUTTONS', true)).toBe(false);
    expect(env.boolean('PORT', true)).toBe(true);
    const words: [string, boolean][] = [
      ...['true', '1', 'on'].map((word): [string, boolean] => [word, true]),
      ...['false', '0', 'no'].map((word): [string, boolean] => [word, false]),
    ];
    for (const [raw, value] of words) {
      expect(new EnvReader({ MENTION_ONLY: raw }).boolean('MENTION_ONLY', !value), raw).toBe(value);
    }
    expect(env.problems).toEqual([]);
  });

  it('takes an unset duration from its fallback, and 0 as off', () => {
    expect(new EnvReader({}).duration('SESSION_IDLE_TTL', '12h')).toBe(12 * 60 * MINUTE);
    expect(new EnvReader({ SESSION_IDLE_TTL: '0' }).duration('SESSION_IDLE_TTL', '12h')).toBe(0);
  });

  it('refuses a placeholder from .env.example, echoing it only when it cannot be a real secret', () => {
    const env = new EnvReader({
      SLACK_BOT_TOKEN: 'xoxb-...',
      AGENT_API_KEY: 'sk-…',
      SLACK_SIGNING_SECRET: 'a1b2c3d4e5f6...',
      PORT: '8080',
    });
    expect(env.placeholder('SLACK_BOT_TOKEN')).toBe(true);
    expect(env.placeholder('AGENT_API_KEY')).toBe(true);
    expect(env.placeholder('SLACK_SIGNING_SECRET')).toBe(true);
    expect(env.placeholder('PORT')).toBe(false);
    expect(env.placeholder('SLACK_APP_TOKEN')).toBe(false);
    expect(env.problems.map(({ variable, problem }) => `${variable} ${problem}`)).toEqual([
      'SLACK_BOT_TOKEN is still the placeholder ("xoxb-...") from .env.example: set the real value',
      'AGENT_API_KEY is still the placeholder ("sk-…") from .env.example: set the real value',
      'SLACK_SIGNING_SECRET is still the placeholder from .env.example: set the real value',
    ]);
  });

  it('refuses a URL on a domain reserved for examples, and only those', () => {
    const env = new EnvReader({});
    expect(env.placeholderUrl('AGENT_BASE_URL', 'https://agents.example.com/v1')).toBe(true);
    expect(env.placeholderUrl('AGENT_BASE_URL', 'http://example.org.')).toBe(true);
    expect(env.problems.map(({ problem }) => problem)).toEqual([
      'is a placeholder ("https://agents.example.com/v1"): example.com is reserved for examples, so no real service is there; set the real URL',
      'is a placeholder ("http://example.org."): example.org is reserved for examples, so no real service is there; set the real URL',
    ]);
    for (const url of [
      'https://myexample.com/v1',
      'https://example.com.evil.test/',
      'https://example.io',
      undefined,
    ]) {
      expect(env.placeholderUrl('AGENT_BASE_URL', url), url).toBe(false);
    }
    expect(env.problems).toHaveLength(2);
  });

  it('takes http and https URLs only', () => {
    const env = new EnvReader({});
    expect(env.httpUrl('AGENT_BASE_URL', 'https://agent.internal/v1')).toBe('https://agent.internal/v1');
    expect(env.httpUrl('AGENT_BASE_URL', 'http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
    expect(env.httpUrl('AGENT_BASE_URL', undefined)).toBeUndefined();
    expect(env.problems).toEqual([]);
    expect(env.httpUrl('AGENT_BASE_URL', 'ftp://agent.internal')).toBeUndefined();
    expect(env.httpUrl('AGENT_BASE_URL', 'agent.internal')).toBeUndefined();
    expect(env.problems.map(({ problem }) => problem)).toEqual([
      'must be an http(s) URL (got "ftp://agent.internal")',
      'must be an http(s) URL (got "agent.internal")',
    ]);
  });

  it('reads a list of Slack ids, spaces and empty entries aside, and names a malformed entry', () => {
    const env = new EnvReader({ ALLOWED_CHANNEL_IDS: ' C1, C2 ,,G3 ', ALLOWED_USER_IDS: 'U1,#general' });
    expect([...env.idList('ALLOWED_CHANNEL_IDS')]).toEqual(['C1', 'C2', 'G3']);
    expect([...env.idList('ALLOWED_TEAM_IDS')]).toEqual([]);
    expect(env.problems).toEqual([]);
    env.idList('ALLOWED_USER_IDS');
    expect(env.problems).toEqual([
      {
        variable: 'ALLOWED_USER_IDS',
        problem: 'must be a comma-separated list of Slack ids (bad entry "#general")',
      },
    ]);
  });
});
