import { afterAll, afterEach, beforeAll } from 'vitest';
import { AgentServiceEmulator, type AgentServiceEmulatorOptions } from '../fakes/agent-service.js';
import { FakeSlack, type FakeSlackOptions } from '../fakes/slack.js';
import { type RunningBot, startBot } from './stack.js';
import { type TestStore, testStore } from './stores.js';

export interface SuiteBot {
  slack: FakeSlack;
  agent: AgentServiceEmulator;
  bot: RunningBot;
  store: TestStore;
}

/**
 * The real bot in this process on a fresh store (`testStore`), with a fresh fake Slack and agent service, for
 * the tests of the enclosing `describe` (or file): started before them, stopped and removed after.
 * Read the fields inside the tests; they are set in beforeAll.
 */
export function botPerSuite(
  options: {
    slack?: FakeSlackOptions;
    agent?: AgentServiceEmulatorOptions;
    env?: Record<string, string>;
  } = {},
): SuiteBot {
  const suite = {} as SuiteBot;
  beforeAll(async () => {
    suite.store = await testStore();
    suite.slack = await FakeSlack.start(options.slack);
    suite.agent = await AgentServiceEmulator.start(options.agent);
    suite.bot = await startBot({
      slack: suite.slack,
      agent: suite.agent,
      store: suite.store.store,
      env: options.env,
    });
  });
  // A test that failed before releasing a hold on the agent leaves none to the next.
  afterEach(() => suite.agent?.releaseHolds());
  afterAll(async () => {
    await suite.bot?.stop();
    await Promise.all([suite.slack?.stop(), suite.agent?.stop(), suite.store?.remove()]);
  });
  return suite;
}
