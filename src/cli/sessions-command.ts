import { parseArgs } from 'node:util';
import type { AgentClient, AgentSessionRecord } from '../agent/client.js';
import { isAgentServiceError } from '../agent/errors.js';
import { createdAtMs } from '../agent/session-list.js';
import { parseDuration } from '../config/index.js';
import type { SessionStore, ThreadSession } from '../sessions/store.js';

export interface SessionsCommandDeps {
  agent: AgentClient;
  store: SessionStore;
  /** The agents to look at: AGENT_ID and every routed agent, or the one given with --agent. */
  agents: string[];
  write: (line: string) => void;
  now?: () => Date;
}

export interface SessionsCommandOptions {
  action: 'list' | 'prune';
  /**
   * `false`: a dry run. A number: delete, if it is exactly how many orphans there are (the operator read the
   * count and gave it back). `true` (`--apply` without a count): only say how to confirm.
   */
  apply: boolean | number;
  /** Sessions younger than this are never pruned: the bot may be about to record them. */
  minAgeMs: number;
  /** `list` only: the conversations of one workspace (`--team`) or of one org (`--enterprise`). */
  workspace?: { teamId?: string; enterpriseId?: string };
}

export const SESSIONS_USAGE = `Usage: npm run sessions -- <list|prune> [--apply=N] [--agent AGENT_ID] [--min-age 10m]
                            [--team T… | --enterprise E…]

  list    the agent sessions on the agent service, and which Slack conversation each belongs to;
          --team or --enterprise: only the conversations of that workspace, or of that org's workspaces
  prune   delete the sessions no Slack conversation maps to (orphans, e.g. from a lost store);
          a dry run that prints the count N; --apply=N deletes them, if N is still the count.
          Sessions younger than --min-age (default 10m) are kept.`;

interface Row {
  agentId: string;
  record: AgentSessionRecord;
  mapping?: ThreadSession;
}

/** `npm run sessions`: the operator's view of the agent's sessions. Returns the exit code. */
export async function runSessionsCommand(
  deps: SessionsCommandDeps,
  options: SessionsCommandOptions,
): Promise<number> {
  const { write } = deps;
  const rows: Row[] = [];
  const refusals: string[] = [];
  /** Agents nothing is pruned of (an agent id may itself contain ':', so it is not read back from a refusal). */
  const refused = new Set<string>();
  let unlisted = false;
  /** A run that could not list an agent's sessions has not done its whole job: never 0. */
  const exitCode = (code: number) => (unlisted && code === 0 ? 1 : code);
  for (const agentId of deps.agents) {
    let records: AgentSessionRecord[];
    try {
      records = await deps.agent.listSessions(agentId);
    } catch (error) {
      // One agent the service does not know (a stale AGENT_ROUTES entry) must not hide every other one.
      unlisted = true;
      refused.add(agentId);
      refusals.push(
        `${agentId}: its sessions could not be listed (${error instanceof Error ? error.message : String(error)}). Nothing will be pruned for this agent.`,
      );
      continue;
    }
    const mapped = await deps.store.mappingsOf(agentId);
    const bySessionId = new Map(mapped.map((session) => [session.sessionId, session]));
    // The spec does not say that listed uuids equal the session_id we were given; if none match while
    // we do hold mappings, we cannot tell orphans apart and must not delete anything.
    const anyMatch = records.some((record) => bySessionId.has(record.uuid));
    if (mapped.length === 0 && records.length > 0) {
      // An empty store (a new DATA_DIR, a wrong DATABASE_URL) or an agent other clients share would make
      // every listed session look orphaned.
      refused.add(agentId);
      refusals.push(
        `${agentId}: this store maps no session of this agent, so every one of its ${records.length} sessions would look orphaned ` +
          "(is DATA_DIR or DATABASE_URL the bot's store? do other clients use this agent?). Nothing will be pruned for this agent.",
      );
    } else if (!anyMatch && records.length > 0) {
      refused.add(agentId);
      refusals.push(
        `${agentId}: none of the ${records.length} listed session ids matches the ${mapped.length} this bot recorded; ` +
          'the service may list sessions under other ids, so orphans cannot be told apart. Nothing will be pruned for this agent.',
      );
    }
    for (const record of records) rows.push({ agentId, record, mapping: bySessionId.get(record.uuid) });
  }

  if (options.action === 'list' && options.workspace) {
    listWorkspace(rows, options.workspace, write);
    // Without them a workspace that lists nothing because ids did not match looks like one with no sessions.
    for (const refusal of refusals) write(`warning: ${refusal}`);
    return exitCode(0);
  }
  if (options.action === 'list') {
    write(['AGENT', 'SESSION', 'CREATED', 'SLACK CONVERSATION'].join('\t'));
    for (const row of rows) {
      const where = row.mapping
        ? `${row.mapping.teamId}/${row.mapping.channelId}/${row.mapping.threadTs}`
        : '(none: orphan)';
      write([row.agentId, row.record.uuid, row.record.createdAt ?? '?', where].join('\t'));
    }
    const orphans = rows.filter((row) => !row.mapping).length;
    write(
      `${sessions(rows.length)}, ${rows.length - orphans} mapped to Slack conversations, ${orphans} orphaned.`,
    );
    for (const refusal of refusals) write(`warning: ${refusal}`);
    return exitCode(0);
  }

  const now = (deps.now ?? (() => new Date()))().getTime();
  const orphans = rows.filter((row) => {
    if (row.mapping || refused.has(row.agentId)) return false;
    // A creation time the service does not give, or that cannot be read, cannot keep a session.
    const created = createdAtMs(row.record);
    return created === undefined || now - created >= options.minAgeMs;
  });
  for (const refusal of refusals) write(`warning: ${refusal}`);
  if (orphans.length === 0) {
    write('No orphaned sessions to prune.');
    return exitCode(refusals.length > 0 ? 2 : 0);
  }
  if (options.apply === false || options.apply === true) {
    write(`Would delete ${sessions(orphans.length, 'orphaned ')} (dry run):`);
    for (const row of orphans) write(`  ${row.agentId}\t${row.record.uuid}\t${row.record.createdAt ?? '?'}`);
    write(`To delete them, run again with --apply=${orphans.length}`);
    return exitCode(options.apply === true ? 2 : 0);
  }
  if (options.apply !== orphans.length) {
    write(
      `--apply=${options.apply} does not match the ${orphans.length} orphaned sessions found now; nothing was deleted. ` +
        'Run a dry run again and check the list.',
    );
    return 2;
  }
  let failed = 0;
  for (const row of orphans) {
    try {
      await deps.agent.deleteSession(row.agentId, row.record.uuid);
      write(`deleted ${row.agentId} ${row.record.uuid}`);
    } catch (error) {
      // Gone since the listing (the bot's own deleter, another prune): what was asked is done.
      if (isAgentServiceError(error) && error.kind === 'session_not_found') {
        write(`gone    ${row.agentId} ${row.record.uuid} (deleted meanwhile)`);
        continue;
      }
      failed += 1;
      write(
        `failed  ${row.agentId} ${row.record.uuid}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  write(`Deleted ${orphans.length - failed} of ${sessions(orphans.length, 'orphaned ')}.`);
  return exitCode(failed > 0 ? 1 : 0);
}

/**
 * The sessions of one workspace or org. Orphans are left out: no conversation maps them, so nothing says
 * whose they were (the refusals' warnings are about orphans too, so they are left out with them).
 */
function listWorkspace(
  rows: readonly Row[],
  workspace: NonNullable<SessionsCommandOptions['workspace']>,
  write: (line: string) => void,
): void {
  const { teamId, enterpriseId } = workspace;
  const shown = rows.filter(
    (row) =>
      row.mapping &&
      (teamId === undefined || row.mapping.teamId === teamId) &&
      (enterpriseId === undefined || row.mapping.enterpriseId === enterpriseId),
  );
  write(['AGENT', 'SESSION', 'CREATED', 'SLACK CONVERSATION'].join('\t'));
  for (const row of shown) {
    const where = row.mapping ? `${row.mapping.teamId}/${row.mapping.channelId}/${row.mapping.threadTs}` : '';
    write([row.agentId, row.record.uuid, row.record.createdAt ?? '?', where].join('\t'));
  }
  const of = teamId !== undefined ? `workspace ${teamId}` : `org ${enterpriseId}`;
  const flag = teamId !== undefined ? '--team' : '--enterprise';
  write(
    `${shown.length} session${shown.length === 1 ? '' : 's'} of ${of} (orphans belong to no workspace: list them without ${flag}).`,
  );
}

/** "1 session", "2 sessions" (with `kind` before the noun). */
function sessions(count: number, kind = ''): string {
  return `${count} ${kind}session${count === 1 ? '' : 's'}`;
}

/** Sessions younger than this are kept unless --min-age says otherwise. */
const DEFAULT_MIN_AGE_MS = 10 * 60_000;

/**
 * Parses `list|prune [--apply=N] [--agent ID] [--min-age 10m] [--team T | --enterprise E]`; throws a one-line
 * message on bad input.
 */
export function parseSessionsArgs(argv: readonly string[]): SessionsCommandOptions & { agent?: string } {
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags(argv);
  } catch (error) {
    // parseArgs' own first sentence names the argument ("Unknown option '--x'."); the rest is about `--`.
    const reason = (error as Error).message.split(/(?<=\.) /)[0];
    throw new Error(`${reason}\n${SESSIONS_USAGE}`);
  }
  const [action, ...extra] = parsed.positionals;
  if ((action !== 'list' && action !== 'prune') || extra.length > 0) throw new Error(SESSIONS_USAGE);
  const { apply, agent, 'min-age': minAge, team, enterprise } = parsed.values;
  if (apply !== undefined && apply !== '' && !/^\d+$/.test(apply)) {
    throw new Error(`--apply takes the count of sessions to delete, e.g. --apply=2 (got "${apply}")`);
  }
  // An empty id would quietly mean every agent: for prune, a wider scope than asked for.
  if (agent !== undefined && agent.trim() === '') throw new Error('--agent takes an agent id (got nothing)');
  // Flags of prune given to list would be ignored: a list deletes nothing.
  if (action === 'list' && (apply !== undefined || minAge !== undefined))
    throw new Error(
      `list takes no ${apply !== undefined ? '--apply' : '--min-age'}: those are prune's\n${SESSIONS_USAGE}`,
    );
  const workspace = parseWorkspace(action, team, enterprise);
  return {
    action,
    apply: apply === undefined ? false : apply === '' ? true : Number(apply),
    minAgeMs: minAge === undefined ? DEFAULT_MIN_AGE_MS : parseAge(minAge),
    ...(agent ? { agent } : {}),
    ...(workspace ? { workspace } : {}),
  };
}

function parseFlags(argv: readonly string[]) {
  return parseArgs({
    // A bare --apply asks how to confirm: given as an empty count, so it never takes the next argument.
    args: argv.map((arg) => (arg === '--apply' ? '--apply=' : arg)),
    options: {
      apply: { type: 'string' },
      agent: { type: 'string' },
      'min-age': { type: 'string' },
      team: { type: 'string' },
      enterprise: { type: 'string' },
    },
    allowPositionals: true,
  });
}

/** `--team` / `--enterprise`, for `list`: prune acts on orphans, which no conversation, so no workspace, owns. */
function parseWorkspace(
  action: 'list' | 'prune',
  team: string | undefined,
  enterprise: string | undefined,
): SessionsCommandOptions['workspace'] {
  if (team === undefined && enterprise === undefined) return undefined;
  const flag = team !== undefined ? '--team' : '--enterprise';
  if (action === 'prune')
    throw new Error(
      `prune takes no ${flag}: it deletes orphaned sessions, which no conversation (so no workspace) maps`,
    );
  if (team !== undefined && enterprise !== undefined)
    throw new Error('give --team or --enterprise, not both');
  const id = team ?? enterprise ?? '';
  if (!/^[A-Z0-9]+$/.test(id)) throw new Error(`${flag} takes a Slack id such as T0123ABC (got "${id}")`);
  return team !== undefined ? { teamId: team } : { enterpriseId: id };
}

/** Durations are read as the configuration reads them, so `--min-age` takes what SESSION_IDLE_TTL takes. */
function parseAge(raw: string): number {
  const ms = parseDuration(raw);
  if (ms === undefined) throw new Error(`--min-age must look like 10m, 2h or 30s (got "${raw}")`);
  return ms;
}
