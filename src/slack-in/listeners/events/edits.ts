import type { types } from '@slack/bolt';
import { type InboundMessage, inboundMessageOf, jobKey } from '../../../conversation/jobs.js';
import {
  DELETED_BEFORE_SENT_NOTICE,
  EDIT_NOT_RESENT_NOTICE,
  EDIT_WHILE_SENDING_NOTICE,
} from '../../../conversation/notices.js';
import type { MessageClaims } from '../../../inbox/claims.js';
import type { Inbox } from '../../../inbox/inbox.js';
import { botUserIdHere } from '../../../installations/workspace-scope.js';
import { agentViewIn, conversationOf } from '../../../sessions/conversation-of.js';
import type { AgentFeatures } from '../../../slack-out/agent-features.js';
import type { SlackWrites } from '../../../slack-out/writes.js';
import { deletionOf, editOf } from '../../events.js';
import type { EventRouter } from './router.js';

export interface EditDeps {
  inbox: Pick<Inbox, 'editMessage' | 'cancelWaitingMessage'>;
  claims: Pick<MessageClaims, 'claim'>;
  replies: Pick<SlackWrites, 'ephemeral'>;
  agentFeatures: Pick<AgentFeatures, 'mode' | 'offersAgentView'>;
  botUserId: string;
}

/** Edits and deletions of messages already sent to the bot. */
export function register(events: EventRouter, deps: EditDeps): void {
  // A waiting message takes the new words; one being sent or sent tells its author, once, that edits are not sent.
  events.onChange('message_changed', async ({ event, team_id: teamId }, after) => {
    const edit = editOf(event as unknown as types.AllMessageEvents, teamId, botUserIdHere(deps.botUserId));
    if (!edit) {
      events.ignore(event.type, 'not-from-a-person');
      return;
    }
    const { thread, replyThreadTs } = conversationOf(
      { teamId, channelId: edit.channel, ts: edit.ts, threadTs: edit.threadTs },
      agentViewIn(deps.agentFeatures, teamId),
    );
    const dedupeKey = jobKey(thread.teamId, thread.channelId, edit.ts, 'message');
    const outcome = await deps.inbox.editMessage(dedupeKey, (payload) => ({
      ...inboundMessageOf(payload),
      text: edit.text,
    }));
    if (outcome !== 'sent' && outcome !== 'sending') return;
    const ref = { teamId, channelId: edit.channel, ts: edit.ts };
    if (!(await deps.claims.claim(ref, 'edit-notice'))) return;
    after.push(() =>
      deps.replies.ephemeral(
        { channel: edit.channel, threadTs: replyThreadTs },
        edit.user,
        outcome === 'sent' ? EDIT_NOT_RESENT_NOTICE : EDIT_WHILE_SENDING_NOTICE,
      ),
    );
  });

  // A message deleted while it still waited is not sent; its author is told so, privately.
  events.onChange('message_deleted', async ({ event, team_id: teamId }, after) => {
    const deletion = deletionOf(event as unknown as types.AllMessageEvents, teamId);
    if (!deletion) {
      events.ignore(event.type, 'not-from-a-person');
      return;
    }
    const dedupeKey = jobKey(deletion.teamId, deletion.channel, deletion.ts, 'message');
    const cancelled = (await deps.inbox.cancelWaitingMessage(dedupeKey)) as InboundMessage | undefined;
    if (!cancelled) {
      events.ignore('message', 'deleted-not-waiting');
      return;
    }
    // Its "queued" reaction went with the message; a later delivery of this event finds nothing to cancel.
    after.push(() =>
      deps.replies.ephemeral(
        { channel: deletion.channel, threadTs: cancelled.replyThreadTs },
        cancelled.userId,
        DELETED_BEFORE_SENT_NOTICE,
      ),
    );
  });
}
