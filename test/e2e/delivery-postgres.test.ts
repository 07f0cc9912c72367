import { describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { createTestDatabase, shouldRunPostgresTests } from '../helpers/postgres.js';
import { appMentionEvent, postSignedEvent } from '../helpers/slack-events.js';
import { SIGNING_SECRET, startBot } from '../helpers/stack.js';
import { onPostgres } from '../helpers/stores.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { CHANNEL, ENV, guarantees } from './delivery-guarantees.js';

const runPostgres = await shouldRunPostgresTests();

// The takeover cases run in delivery-postgres-takeover.test.ts, the embedded store's in delivery-embedded*.
onPostgres(runPostgres, (_, prepare) =>
  guarantees({
    name: 'delivery guarantees, two replicas on one PostgreSQL',
    twoInstances: true,
    prepare,
    part: 'delivery',
  }),
);

describe.runIf(runPostgres)('PostgreSQL store outage', () => {
  it('reports not ready and does not acknowledge events while the store is unreachable', async () => {
    const database = await createTestDatabase({ schema: 'current' });
    const slack = await FakeSlack.start();
    const agent = await AgentServiceEmulator.start();
    const bot = await startBot({
      slack,
      agent,
      store: { kind: 'postgres', databaseUrl: database.url },
      env: ENV,
    });
    const before = agent.requests.length; // the start-up check's call
    try {
      expect((await fetch(`${bot.baseUrl}/readyz`)).status).toBe(200);
      await database.drop();
      // Readiness is cached for a second: probes must not each cost a store query.
      await waitFor(async () => (await fetch(`${bot.baseUrl}/readyz`)).status === 503, 'not ready', 3_000);
      const result = await postSignedEvent(
        bot.eventsUrl,
        SIGNING_SECRET,
        appMentionEvent({ channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> anyone?' }),
      );
      expect(result.status).toBe(500); // not acknowledged: Slack will deliver it again
      await sleep(200);
      expect(agent.requests.slice(before)).toEqual([]);
      expect((await fetch(`${bot.baseUrl}/healthz`)).status).toBe(200);
    } finally {
      await bot.stop();
      await Promise.all([slack.stop(), agent.stop()]);
    }
  });
});
