import type { types } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import {
  controlWordOf,
  deletionOf,
  editOf,
  envelopeOf,
  fromMention,
  fromMessage,
  installationOf,
  senderTeam,
} from '../../src/slack-in/events.js';

const BOT = 'U0BOT';
const mention = (fields: Record<string, unknown>) =>
  ({
    type: 'app_mention',
    channel: 'C1',
    user: 'U1',
    text: '<@U0BOT> hi',
    ts: '1.1',
    ...fields,
  }) as unknown as types.AppMentionEvent;
const message = (fields: Record<string, unknown>) =>
  ({
    type: 'message',
    channel: 'C1',
    channel_type: 'channel',
    user: 'U1',
    text: 'hi',
    ts: '1.1',
    ...fields,
  }) as unknown as types.AllMessageEvents;

describe('Slack events as the bot reads them', () => {
  it('recognises only envelopes with a workspace, or an org alone, and a typed event', () => {
    const ok = { type: 'event_callback', team_id: 'T1', event: { type: 'app_mention' } };
    expect(envelopeOf(ok)).toEqual(ok);
    expect(envelopeOf({ type: 'event_callback', team_id: 'T1' })).toBeUndefined();
    expect(envelopeOf({ type: 'event_callback', team_id: 'T1', event: { type: 5 } })).toBeUndefined();
    expect(envelopeOf({ type: 'url_verification' })).toBeUndefined();
    expect(envelopeOf(null)).toBeUndefined();
    // An org-level event (team_id null) is usable only when it names its org.
    const orgLevel = { type: 'event_callback', team_id: null, event: { type: 'app_uninstalled' } };
    expect(envelopeOf(orgLevel)).toBeUndefined();
    expect(envelopeOf({ ...orgLevel, enterprise_id: 'E1' })?.team_id).toBe('');
    expect(
      envelopeOf({ ...orgLevel, authorizations: [{ enterprise_id: 'E1', team_id: null }] })?.team_id,
    ).toBe('');
  });

  it('reads the org and an org-wide install wherever Slack names them, and never throws on odd shapes', () => {
    const base = { type: 'event_callback' as const, team_id: 'T1', event: { type: 'app_uninstalled' } };
    expect(installationOf(base)).toEqual({ teamId: 'T1', isEnterpriseInstall: false });
    // On the envelope, and the install's kind on the envelope or the authorization.
    expect(installationOf({ ...base, enterprise_id: 'E1', is_enterprise_install: true })).toEqual({
      teamId: 'T1',
      enterpriseId: 'E1',
      isEnterpriseInstall: true,
    });
    // Only in the authorization (Slack's sample payload for org-wide apps).
    const sample = {
      ...base,
      authorizations: [{ enterprise_id: 'E1', team_id: null, is_enterprise_install: true }],
    };
    expect(installationOf(sample)).toEqual({ teamId: 'T1', enterpriseId: 'E1', isEnterpriseInstall: true });
    // As the context's org: a workspace of the org, not an org-wide install.
    expect(installationOf({ ...base, context_enterprise_id: 'E1' })).toEqual({
      teamId: 'T1',
      enterpriseId: 'E1',
      isEnterpriseInstall: false,
    });
    // An org-level event names no workspace.
    const orgLevel = envelopeOf({ ...base, team_id: null, enterprise_id: 'E1', is_enterprise_install: true });
    expect(orgLevel && installationOf(orgLevel)).toEqual({ enterpriseId: 'E1', isEnterpriseInstall: true });
    for (const authorizations of [null, 'x', { 0: { enterprise_id: 'E1' } }, [null], [5, null], []]) {
      expect(installationOf({ ...base, authorizations })).toEqual({
        teamId: 'T1',
        isEnterpriseInstall: false,
      });
    }
  });

  it('takes mentions and messages from people only', () => {
    expect(fromMention(mention({}), 'T1', BOT)).toMatchObject({ user: 'U1', mentionsBot: true });
    expect(fromMention(mention({ bot_id: 'B1' }), 'T1', BOT)).toBeUndefined();
    expect(fromMessage(message({}), 'T1', BOT)).toMatchObject({ user: 'U1', mentionsBot: false });
    expect(fromMessage(message({ user: BOT }), 'T1', BOT)).toBeUndefined();
    expect(fromMessage(message({ subtype: 'channel_join' }), 'T1', BOT)).toBeUndefined();
    expect(fromMessage(message({ subtype: 'thread_broadcast', thread_ts: '1.0' }), 'T1', BOT)).toBeDefined();
    expect(fromMessage(message({ subtype: 'file_share', files: [{}] }), 'T1', BOT)).toMatchObject({
      hasFiles: true,
    });
    expect(fromMessage(message({ subtype: 'file_share', bot_id: 'B1' }), 'T1', BOT)).toBeUndefined();
  });

  it("admits the same subtypes of a person's message on both paths, and no other", () => {
    // A reply sent with "Also send to #channel" arrives as thread_broadcast on its app_mention delivery too.
    for (const subtype of ['thread_broadcast', 'file_share', 'me_message']) {
      expect(fromMention(mention({ subtype, thread_ts: '1.0' }), 'T1', BOT)).toMatchObject({
        user: 'U1',
        threadTs: '1.0',
      });
      expect(fromMessage(message({ subtype, thread_ts: '1.0' }), 'T1', BOT)).toMatchObject({
        threadTs: '1.0',
      });
    }
    for (const subtype of [
      'bot_message',
      'message_changed',
      'message_deleted',
      'message_replied',
      'channel_join',
    ]) {
      expect(fromMention(mention({ subtype }), 'T1', BOT)).toBeUndefined();
      expect(fromMessage(message({ subtype }), 'T1', BOT)).toBeUndefined();
    }
    expect(fromMention(mention({ subtype: 'thread_broadcast', bot_id: 'B1' }), 'T1', BOT)).toBeUndefined();
  });

  it('reads which message a message_deleted removed', () => {
    expect(
      deletionOf(message({ subtype: 'message_deleted', hidden: true, deleted_ts: '1.0' }), 'T1'),
    ).toEqual({
      teamId: 'T1',
      channel: 'C1',
      ts: '1.0',
    });
    expect(deletionOf(message({ subtype: 'message_deleted' }), 'T1')).toBeUndefined();
    expect(deletionOf(message({ subtype: 'message_changed', deleted_ts: '1.0' }), 'T1')).toBeUndefined();
  });

  it("reads the sender's own workspace: user_team in Slack Connect, else the message's team", () => {
    expect(senderTeam({ user_team: 'T-OTHER', team: 'T1' })).toBe('T-OTHER');
    expect(senderTeam({ team: 'T1' })).toBe('T1');
    expect(senderTeam({})).toBeUndefined();
    expect(fromMention(mention({ user_team: 'T-OTHER' }), 'T1', BOT)?.userTeam).toBe('T-OTHER');
  });

  it('reads stop and reset only when that is all the message says', () => {
    expect(controlWordOf('<@U0BOT> stop', BOT)).toBe('stop');
    expect(controlWordOf('<@U0BOT|agent>  Reset!', BOT)).toBe('reset');
    expect(controlWordOf('<@U0BOT> stop the build', BOT)).toBeUndefined();
    expect(controlWordOf('please reset', BOT)).toBeUndefined();
  });

  it('sees an edit of the words, not an unfurl or a bot edit', () => {
    const changed = (edited: Record<string, unknown>, previous: Record<string, unknown>) =>
      message({
        subtype: 'message_changed',
        message: { type: 'message', ts: '1.1', ...edited },
        previous_message: previous,
      });
    expect(editOf(changed({ user: 'U1', text: 'new' }, { text: 'old' }), 'T1', BOT)).toMatchObject({
      text: 'new',
      ts: '1.1',
    });
    expect(
      editOf(changed({ user: 'U1', text: 'same', attachments: [{}] }, { text: 'same' }), 'T1', BOT),
    ).toBeUndefined();
    expect(editOf(changed({ user: BOT, text: 'new' }, { text: 'old' }), 'T1', BOT)).toBeUndefined();
    expect(editOf(message({}), 'T1', BOT)).toBeUndefined();
  });
});
