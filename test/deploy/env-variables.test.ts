import { describe, expect, it } from 'vitest';
import { ENV_VARIABLES, loadConfig, loadOperatorConfig } from '../../src/config/index.js';

// The deployment tests trust ENV_VARIABLES to say which names the bot reads; a variable read but not
// listed would be flagged as unknown in every deployment file that sets it.

const required = {
  SLACK_BOT_TOKEN: 'xoxb-1-abc',
  AGENT_BASE_URL: 'https://agent-service.internal/v1',
  AGENT_API_KEY: 'key-123',
  AGENT_ID: 'agent-1',
};

/** The names a loader looks up, recorded by an environment that answers every lookup. */
function namesRead(
  load: (env: Record<string, string | undefined>) => unknown,
  values: Record<string, string>,
) {
  const read = new Set<string>();
  const env = new Proxy(values, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return target[name as string];
    },
  });
  load(env);
  return [...read];
}

describe('ENV_VARIABLES', () => {
  it.each([
    ['HTTP mode, embedded store', { SLACK_SIGNING_SECRET: 'secret' }],
    ['Socket Mode, PostgreSQL', { SLACK_APP_TOKEN: 'xapp-1', DATABASE_URL: 'postgres://u:p@db/bridge' }],
  ])('lists every variable the configuration reads (%s)', (_, settings) => {
    const read = namesRead(loadConfig, { ...required, ...settings });
    expect(read.length).toBeGreaterThan(10);
    expect(read.filter((name) => !ENV_VARIABLES.includes(name))).toEqual([]);
  });

  it('lists every variable the operator command reads', () => {
    const read = namesRead(loadOperatorConfig, required);
    expect(read.filter((name) => !ENV_VARIABLES.includes(name))).toEqual([]);
  });
});
