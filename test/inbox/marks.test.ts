import { describe, expect, it } from 'vitest';
import { ConversationMarks, openedSessionsIn } from '../../src/inbox/marks.js';
import { migrate, SCHEMA_VERSION } from '../../src/store/schema.js';
import { embeddedStorePerSuite } from '../helpers/embedded-store.js';

describe('conversation marks', () => {
  const store = embeddedStorePerSuite();

  it('are set once, looked up and cleared, a whole conversation apart from its threads', async () => {
    const marks = new ConversationMarks(store.db);
    const dm = { teamId: 'T1', channelId: 'D1' };
    const thread = { ...dm, threadTs: '1.000' };
    expect(await marks.set(dm, 'greeted')).toBe(true);
    // A second replica (or a second opening of the tab) finds it set.
    expect(await marks.set(dm, 'greeted')).toBe(false);
    expect(await marks.has(dm, 'greeted')).toBe(true);
    expect(await marks.has(thread, 'greeted')).toBe(false);
    expect(await marks.has(dm, 'agent-view-opened')).toBe(false);
    await marks.clear(dm, 'greeted');
    expect(await marks.has(dm, 'greeted')).toBe(false);
    expect(await marks.set(dm, 'greeted')).toBe(true);
  });

  it('keep the threads whose agent view session the bot opened, for every replica', async () => {
    const opened = openedSessionsIn(new ConversationMarks(store.db));
    const thread = { teamId: 'T1', channelId: 'C1', threadTs: '2.000' };
    expect(await opened.has(thread)).toBe(false);
    await opened.add(thread);
    await opened.add(thread);
    expect(await opened.has(thread)).toBe(true);
    await opened.remove(thread);
    expect(await opened.has(thread)).toBe(false);
  });

  it('are moved, not lost, from the claims that held them before', async () => {
    const { db } = store;
    // The store as the previous version left it: greetings and opened sessions as claims on invented ts.
    await db.query('DROP TABLE conversation_marks');
    await db.query('DELETE FROM schema_version WHERE version = $1', [SCHEMA_VERSION]);
    await db.query(
      `INSERT INTO handled_messages (team_id, channel_id, message_ts, purpose) VALUES
         ('T1', 'D7', 'welcome', 'greeting'), ('T1', 'C7', '3.000', 'agent-session'),
         ('T1', 'C7', '3.000', 'refusal')`,
    );
    await migrate(db);
    const marks = new ConversationMarks(db);
    expect(await marks.has({ teamId: 'T1', channelId: 'D7' }, 'greeted')).toBe(true);
    expect(await marks.has({ teamId: 'T1', channelId: 'C7', threadTs: '3.000' }, 'agent-view-opened')).toBe(
      true,
    );
    const claims = await db.query<{ purpose: string }>('SELECT purpose FROM handled_messages ORDER BY 1');
    expect(claims.map((row) => row.purpose)).toEqual(['refusal']);
  });
});
