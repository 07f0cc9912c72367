import { describe, expect, it } from 'vitest';
import { MessageClaims } from '../../src/inbox/claims.js';
import { ConversationMarks, openedSessionsIn } from '../../src/inbox/marks.js';
import type { Database } from '../../src/store/database.js';
import { migrate } from '../../src/store/schema.js';
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
    // Version 6 made conversation_marks: the store as it was before it (later versions run again over it).
    await db.query('DELETE FROM schema_version WHERE version >= 6');
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
    // Copied, not moved away: a replica of the previous release still reads them there (see below).
    const claims = await db.query<{ purpose: string }>(
      `SELECT purpose FROM handled_messages WHERE channel_id IN ('D7', 'C7') ORDER BY 1`,
    );
    expect(claims.map((row) => row.purpose)).toEqual(['agent-session', 'greeting', 'refusal']);
  });

  it('agree with a replica of the previous release running beside this one: nobody greeted twice', async () => {
    const { db } = store;
    const previous = previousReleaseReplica(db);
    const marks = new ConversationMarks(db);
    // Greeted by the previous release: this one does not greet again, and the reverse.
    expect(await previous.claim('T2', 'D1', 'welcome', 'greeting')).toBe(true);
    expect(await marks.has({ teamId: 'T2', channelId: 'D1' }, 'greeted')).toBe(true);
    expect(await marks.set({ teamId: 'T2', channelId: 'D1' }, 'greeted')).toBe(false);
    expect(await marks.set({ teamId: 'T2', channelId: 'D2' }, 'greeted')).toBe(true);
    expect(await previous.claim('T2', 'D2', 'welcome', 'greeting')).toBe(false);

    // An agent view session opened by either is closed by either.
    const opened = openedSessionsIn(marks);
    const thread = { teamId: 'T2', channelId: 'C1', threadTs: '4.000' };
    expect(await previous.claim('T2', 'C1', '4.000', 'agent-session')).toBe(true);
    expect(await opened.has(thread)).toBe(true);
    await opened.remove(thread);
    expect(await previous.isClaimed('T2', 'C1', '4.000', 'agent-session')).toBe(false);
    await opened.add({ ...thread, threadTs: '5.000' });
    expect(await previous.isClaimed('T2', 'C1', '5.000', 'agent-session')).toBe(true);
    await previous.release('T2', 'C1', '5.000', 'agent-session');
    expect(await opened.has({ ...thread, threadTs: '5.000' })).toBe(false);

    // This release's clean-up of old claims keeps them, as the previous release's did.
    await db.query(`UPDATE handled_messages SET handled_at = now() - interval '30 days'`);
    await new MessageClaims(db).prune();
    expect(await previous.isClaimed('T2', 'D1', 'welcome', 'greeting')).toBe(true);
    expect(await marks.has({ teamId: 'T2', channelId: 'D2' }, 'greeted')).toBe(true);
  });
});

/**
 * A replica of the previous release (schema version 4), still running during a rolling upgrade: the SQL of
 * its claims, which held greetings (`greeting` on ts `welcome`) and opened agent view sessions
 * (`agent-session` on the thread's ts), copied as it was.
 */
function previousReleaseReplica(db: Database) {
  return {
    async claim(teamId: string, channelId: string, ts: string, purpose: string): Promise<boolean> {
      const rows = await db.query(
        `INSERT INTO handled_messages (team_id, channel_id, message_ts, purpose) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING RETURNING 1`,
        [teamId, channelId, ts, purpose],
      );
      return rows.length === 1;
    },
    async isClaimed(teamId: string, channelId: string, ts: string, purpose: string): Promise<boolean> {
      const rows = await db.query(
        'SELECT 1 FROM handled_messages WHERE team_id = $1 AND channel_id = $2 AND message_ts = $3 AND purpose = $4',
        [teamId, channelId, ts, purpose],
      );
      return rows.length > 0;
    },
    async release(teamId: string, channelId: string, ts: string, purpose: string): Promise<void> {
      await db.query(
        'DELETE FROM handled_messages WHERE team_id = $1 AND channel_id = $2 AND message_ts = $3 AND purpose = $4',
        [teamId, channelId, ts, purpose],
      );
    },
  };
}
