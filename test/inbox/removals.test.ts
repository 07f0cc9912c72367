import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentClient } from '../../src/agent/client.js';
import { Inbox } from '../../src/inbox/inbox.js';
import { type RemovedWorkspace, removalScope, WorkspaceRemovals } from '../../src/inbox/removals.js';
import { createLogger } from '../../src/observability/logger.js';
import { SessionDeleter } from '../../src/sessions/deleter.js';
import { SessionManager } from '../../src/sessions/manager.js';
import { SessionStore, type ThreadSession } from '../../src/sessions/store.js';
import type { Database } from '../../src/store/database.js';
import { createSessionKeyv } from '../../src/store/keyv.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { embeddedStorePerSuite } from '../helpers/embedded-store.js';
import { postgresStorePerSuite, shouldRunPostgresTests } from '../helpers/postgres.js';
import { LogCapture } from '../helpers/stack.js';
import { forEachStore } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The embedded store's clock counts whole milliseconds, so an install right after a removal could share its
 * time and not count as since; in Slack one event follows the other by far more.
 */
const laterMillisecond = () => new Promise((resolve) => setTimeout(resolve, 2));

const runPostgres = await shouldRunPostgresTests();
const WORKSPACE: RemovedWorkspace = { teamId: 'T1', isEnterpriseInstall: false };
const NO_LIMITS = { maxOpenPerThread: 20, userPerMinute: 0 };

forEachStore(runPostgres, (kind) => {
  describe(`workspace removals (${kind})`, () => {
    let agent: AgentServiceEmulator;
    let client: AgentClient;
    // One store for the suite, emptied before each test.
    const shared = kind === 'embedded' ? embeddedStorePerSuite() : postgresStorePerSuite();
    let db: Database;
    let inbox: Inbox;
    let sessions: SessionManager;
    let deleter: SessionDeleter;
    const logger = createLogger({ level: 'warn', secrets: [], destination: new LogCapture() });
    const running: WorkspaceRemovals[] = [];

    beforeEach(async () => {
      db = shared.db;
      agent = await AgentServiceEmulator.start();
      client = new AgentClient({ baseUrl: agent.baseUrl, apiKey: agent.apiKey, timeoutMs: 5_000 });
      const store = new SessionStore(createSessionKeyv<ThreadSession>(db, SessionStore.namespace), db);
      deleter = new SessionDeleter(db, client, logger, { retryBaseMs: 100, pollMs: 100 });
      sessions = new SessionManager(store, client, deleter, logger);
      inbox = new Inbox(db, 'replica-a', 60_000);
      deleter.start();
    });
    afterEach(async () => {
      await Promise.all(running.splice(0).map((removals) => removals.stop()));
      await deleter.stop();
      client.close();
      await agent.stop();
    });

    function removals(options: { forgetInstallation?: (w: RemovedWorkspace) => Promise<void> } = {}) {
      const built = new WorkspaceRemovals(db, inbox, sessions, logger, {
        retryBaseMs: 100,
        pollMs: 100,
        ...options,
      });
      running.push(built);
      return built;
    }

    /** A conversation of team T1 (or `teamId`) with a session on the agent service. */
    async function conversation(threadTs: string, teamId = 'T1'): Promise<string> {
      const { session } = await sessions.sessionFor({ teamId, channelId: 'C1', threadTs }, 'agent-a', 'U1');
      return session.sessionId;
    }

    it('is finished by the next process when the one that recorded it stopped before working on it', async () => {
      const gone = await conversation('1.0');
      const kept = await conversation('2.0', 'T2');
      await inbox.admit(
        { threadKey: 'T1:C1:1.0', dedupeKey: 'T1:C1:3.0:message', kind: 'message', payload: {} },
        NO_LIMITS,
      );
      const crashed = removals();
      await crashed.stop(); // as good as dead: it records, and works on nothing
      await crashed.remove(WORKSPACE, 'app_uninstalled');
      expect(await crashed.pendingCount()).toBe(1);
      expect(agent.sessionsOf('agent-a').map((s) => s.uuid)).toContain(gone);

      const next = removals();
      next.start();
      await waitFor(async () => (await next.pendingCount()) === 0, 'removal finished by the next process');
      await waitFor(() => agent.sessionsOf('agent-a').length === 1, 'its session deleted');
      expect(agent.sessionsOf('agent-a').map((s) => s.uuid)).toEqual([kept]);
      expect(await inbox.counts()).toEqual({ pending: 0, running: 0 });
    });

    it('retries a step that failed (the installation could not be forgotten) instead of forgetting the removal', async () => {
      const gone = await conversation('1.0');
      let calls = 0;
      const worker = removals({
        forgetInstallation: async (workspace) => {
          calls++;
          expect(workspace).toEqual(WORKSPACE);
          if (calls === 1) throw new Error('installation store unreachable');
        },
      });
      worker.start();
      await worker.remove(WORKSPACE, 'token_invalid');
      await waitFor(async () => (await worker.pendingCount()) === 0, 'removal finished after a retry');
      expect(calls).toBe(2);
      await waitFor(() => agent.sessionsOf('agent-a').length === 0, 'its session deleted');
      expect(agent.requestsFor('deleteSession').map((r) => r.sessionId)).toEqual([gone]);
    });

    it("an org's removal ends the waiting work and conversations of each of its workspaces, and nobody else's", async () => {
      const inOrg = (teamId: string, threadTs: string) =>
        sessions.sessionFor({ teamId, enterpriseId: 'E1', channelId: 'C1', threadTs }, 'agent-a', 'U1');
      await inOrg('T1', '1.0');
      await inOrg('T2', '2.0');
      const { session: outside } = await sessions.sessionFor(
        { teamId: 'T3', enterpriseId: 'E2', channelId: 'C1', threadTs: '3.0' },
        'agent-a',
        'U1',
      );
      const job = (teamId: string, enterpriseId: string) => ({
        threadKey: `${teamId}:C1:9.0`,
        dedupeKey: `${teamId}:C1:9.0:message`,
        kind: 'message' as const,
        payload: {},
        enterpriseId,
      });
      await inbox.admit(job('T1', 'E1'), NO_LIMITS);
      await inbox.admit(job('T2', 'E1'), NO_LIMITS);
      await inbox.admit(job('T3', 'E2'), NO_LIMITS);

      const worker = removals();
      worker.start();
      await worker.remove({ enterpriseId: 'E1', isEnterpriseInstall: true }, 'app_uninstalled');
      await waitFor(async () => (await worker.pendingCount()) === 0, 'the org removed');
      await waitFor(() => agent.sessionsOf('agent-a').length === 1, "the org's sessions deleted");
      expect(agent.sessionsOf('agent-a').map((s) => s.uuid)).toEqual([outside.sessionId]);
      expect(await inbox.counts()).toEqual({ pending: 1, running: 0 });
      expect(await sessions.list({ teamId: 'T1' })).toEqual([]);
      expect(await sessions.list({ teamId: 'T2' })).toEqual([]);
    });

    const jobOf = (teamId: string, enterpriseId?: string) => ({
      threadKey: `${teamId}:C1:9.0`,
      dedupeKey: `${teamId}:C1:9.0:message`,
      kind: 'message' as const,
      payload: {},
      ...(enterpriseId ? { enterpriseId } : {}),
    });

    it('a late retry of an add to a workspace, sent before the later removal from it, does not let it in again', async () => {
      const worker = removals();
      worker.start();
      const grantedAt = new Date(Date.now() - 60_000);
      await worker.installed(WORKSPACE, grantedAt);
      await worker.remove(WORKSPACE, 'team_access_revoked', new Date(Date.now() - 30_000));
      await waitFor(async () => (await worker.pendingCount()) === 0, 'the removal done');

      await worker.installed(WORKSPACE, grantedAt); // Slack's retry of the add, delivered after the removal
      expect((await inbox.admit(jobOf('T1'), NO_LIMITS)).outcome).toBe('workspace-removed');
      // An add sent after the removal lets it in again.
      await worker.installed(WORKSPACE, new Date());
      expect((await inbox.admit(jobOf('T1'), NO_LIMITS)).outcome).toBe('inserted');
    });

    it('a later removal is still recorded after a late retry of an earlier add', async () => {
      const worker = removals();
      await worker.stop();
      const grantedAt = new Date(Date.now() - 60_000);
      await worker.installed(WORKSPACE, new Date(Date.now() - 10_000));
      await worker.installed(WORKSPACE, grantedAt); // the older add, retried late: the install time stays
      await worker.remove(WORKSPACE, 'team_access_revoked', new Date(Date.now() - 5_000));
      expect(await worker.pendingCount()).toBe(1);
    });

    it('admits a workspace installed again after its removal, even if the process died before forgetting the removal', async () => {
      const crashed = removals();
      await crashed.stop();
      await crashed.remove(WORKSPACE, 'app_uninstalled');
      await laterMillisecond();
      await crashed.installed(WORKSPACE); // installed again while the removal is still under way
      // As the removal's process leaves it when it dies right after marking it done.
      await db.query(`UPDATE workspace_removals SET done_at = now(), next_attempt_at = 'infinity'`);
      expect((await inbox.admit(jobOf('T1'), NO_LIMITS)).outcome).toBe('inserted');

      // Removed once more: recorded, and refused again once done.
      const worker = removals();
      worker.start();
      await worker.remove(WORKSPACE, 'app_uninstalled');
      await waitFor(async () => (await worker.pendingCount()) === 0, 'the new removal done');
      expect(
        (await inbox.admit({ ...jobOf('T1'), dedupeKey: 'T1:C1:10.0:message' }, NO_LIMITS)).outcome,
      ).toBe('workspace-removed');
      expect(await inbox.counts()).toEqual({ pending: 0, running: 0 });
    });

    it("an org's removal still under way leaves alone a workspace of the org installed on its own since", async () => {
      const inOrg = (teamId: string, threadTs: string) =>
        sessions.sessionFor({ teamId, enterpriseId: 'E1', channelId: 'C1', threadTs }, 'agent-a', 'U1');
      const { session: old } = await inOrg('T2', '2.0');
      const worker = removals();
      await worker.stop(); // recorded, not worked on yet (as a removal waiting for its retry)
      await worker.remove({ enterpriseId: 'E1', isEnterpriseInstall: true }, 'app_uninstalled');
      await laterMillisecond();
      await worker.installed({ teamId: 'T1', enterpriseId: 'E1', isEnterpriseInstall: false });
      const { session: fresh } = await inOrg('T1', '1.0');
      expect((await inbox.admit(jobOf('T1', 'E1'), NO_LIMITS)).outcome).toBe('inserted');

      const next = removals();
      next.start();
      await waitFor(async () => (await next.pendingCount()) === 0, 'the org removed');
      await waitFor(() => agent.sessionsOf('agent-a').length === 1, "the old install's session deleted");
      expect(agent.sessionsOf('agent-a').map((s) => s.uuid)).toEqual([fresh.sessionId]);
      expect(agent.sessionsOf('agent-a').map((s) => s.uuid)).not.toContain(old.sessionId);
      expect(await inbox.counts()).toEqual({ pending: 1, running: 0 });
      expect(await sessions.list({ teamId: 'T1' })).toHaveLength(1);
    });

    it('records one removal per workspace or org, however often it is asked', async () => {
      const worker = removals();
      await worker.stop();
      await worker.remove(WORKSPACE, 'app_uninstalled');
      await worker.remove(WORKSPACE, 'tokens_revoked');
      await worker.remove({ teamId: 'T9', enterpriseId: 'E1', isEnterpriseInstall: true }, 'app_uninstalled');
      await worker.remove({ enterpriseId: 'E1', isEnterpriseInstall: true }, 'tokens_revoked');
      expect(await worker.pendingCount()).toBe(2);
      expect(removalScope({ teamId: 'T9', enterpriseId: 'E1', isEnterpriseInstall: false })).toBe('team:T9');
      expect(() => removalScope({ isEnterpriseInstall: true, teamId: 'T9' })).toThrow(/enterprise id/);
    });
  });
});
