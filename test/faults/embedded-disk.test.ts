import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/schema.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { freshDataDir, type TempDataDir } from '../helpers/embedded-store.js';
import { mention, type RunningBot, startBot } from '../helpers/stack.js';
import { readiness } from './support.js';

/** The embedded store's disk fills up under a running bot: it stops taking work, and says why. */
describe('a full disk under the embedded store', () => {
  let dir: TempDataDir | undefined;
  let slack: FakeSlack | undefined;
  let agent: AgentServiceEmulator | undefined;
  let bot: RunningBot | undefined;
  afterEach(async () => {
    await bot?.stop();
    await Promise.all([slack?.stop(), agent?.stop()]);
    await dir?.remove();
  });

  it('makes /readyz say not ready, naming the disk, once a write is refused for lack of space', async () => {
    dir = await freshDataDir();
    // Every new job meets PostgreSQL's answer to a full disk (SQLSTATE 53100, a relation it cannot extend).
    const db = await openDatabase({ kind: 'embedded', dataDir: dir.path });
    await migrate(db);
    await db.query(`CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'could not extend file "base/5/16384": No space left on device'
        USING ERRCODE = 'disk_full'; END $$`);
    await db.query(
      'CREATE TRIGGER full_disk BEFORE INSERT ON inbox FOR EACH ROW EXECUTE FUNCTION full_disk()',
    );
    await db.close();
    slack = await FakeSlack.start();
    agent = await AgentServiceEmulator.start();
    bot = await startBot({ slack, agent, store: { kind: 'embedded', dataDir: dir.path } });
    expect(await readiness(bot)).toEqual([200, 200]);

    // The event cannot be recorded, so it is not acknowledged (Slack delivers it again later).
    expect((await mention(bot, { channel: 'C0DISK', text: '<@U0BOT> hello' })).status).not.toBe(200);
    // Readiness is cached for a second.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await readiness(bot)).toEqual([503, 503]);
    const body = await (await fetch(`${bot.adminUrl}/readyz`)).json();
    expect(body).toMatchObject({
      status: 'not ready',
      store: `refusing writes: the disk is full (ENOSPC) under ${dir.path}`,
    });
  });
});
