import { describe, expect, it } from 'vitest';
import { MessageClaims } from '../../src/inbox/claims.js';
import { AgentViewConversations } from '../../src/slack-in/agent-view.js';
import { embeddedStorePerSuite } from '../helpers/embedded-store.js';
import { sleep } from '../helpers/wait.js';

describe('recognising an agent app (SLACK_AGENT_VIEW=auto), two replicas on one store', () => {
  const store = embeddedStorePerSuite();

  it('a Messages tab opened makes its DM and its workspace agent conversations, at once where it was seen', async () => {
    const a = new AgentViewConversations(new MessageClaims(store.db), 'auto');
    expect(await a.isAgentApp('T1')).toBe(false);
    expect(await a.isAgentView('T1', 'D1')).toBe(false);
    await a.markOpened('T1', 'D1');
    expect(await a.isAgentApp('T1')).toBe(true);
    expect(await a.isAgentView('T1', 'D1')).toBe(true);
    // Another DM of the same workspace is not a Messages-tab conversation until its own tab opens.
    expect(await a.isAgentView('T1', 'D2')).toBe(false);
  });

  it('another replica learns of a DM at once, and of a workspace within the time it believes "classic"', async () => {
    const ttlMs = 300;
    const a = new AgentViewConversations(new MessageClaims(store.db), 'auto', ttlMs);
    const b = new AgentViewConversations(new MessageClaims(store.db), 'auto', ttlMs);
    expect(await b.isAgentApp('T2')).toBe(false);
    await a.markOpened('T2', 'D9');
    // A DM asks the store every time until it is known: its first message lands in a thread on any replica.
    expect(await b.isAgentView('T2', 'D9')).toBe(true);
    // The workspace's "not yet" is believed a little while (every channel message asks), then asked again.
    expect(await b.isAgentApp('T2')).toBe(false);
    await sleep(ttlMs + 50);
    expect(await b.isAgentApp('T2')).toBe(true);
  });

  it('forced on or off, asks nothing', async () => {
    expect(await new AgentViewConversations(new MessageClaims(store.db), 'on').isAgentApp('T3')).toBe(true);
    expect(await new AgentViewConversations(new MessageClaims(store.db), 'off').isAgentView('T3', 'D1')).toBe(
      false,
    );
  });
});
