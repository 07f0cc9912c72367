import type { TokenKey } from './token-keys.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * `on` / `off` force the agent view or turn it off; `auto` takes the app for an agent app (as
 * manifest.yml makes it) until Slack answers `not_agent_app` in a workspace (see AgentFeatures).
 */
export type AgentViewMode = 'auto' | 'on' | 'off';

export type SlackConnection =
  | { mode: 'http'; signingSecret: string }
  | { mode: 'socket'; appToken: string; signingSecret?: string };

export interface AgentConfig {
  baseUrl: string;
  apiKey: string;
  /** The default agent. */
  agentId: string;
  /** Channel id → agent id, for channels that talk to another agent. */
  channelAgents: ReadonlyMap<string, string>;
  /** Workspace (team) id → agent id: the workspace's agent, where no channel route applies. */
  workspaceAgents: ReadonlyMap<string, string>;
  /** Org (Enterprise Grid) id → agent id: the org's agent, where no channel or workspace route applies. */
  orgAgents: ReadonlyMap<string, string>;
  timeoutMs: number;
}

export type StoreConfig =
  | { kind: 'postgres'; databaseUrl: string; poolSize: number }
  | { kind: 'embedded'; dataDir: string };

export interface SuggestedPrompt {
  title: string;
  message: string;
}

/**
 * `single`: one workspace, its bot token. `oauth`: installed through "Add to Slack" in many workspaces or
 * organisations, each answered with its own stored token (sealed with the first of `tokenKeys`).
 */
export type SlackAuth =
  | { mode: 'single'; botToken: string }
  | {
      mode: 'oauth';
      clientId: string;
      clientSecret: string;
      /** Signs the install flow's state (Bolt's stateSecret). */
      stateSecret: string;
      /** The first seals, every one opens. */
      tokenKeys: readonly TokenKey[];
    };

export interface SlackConfig {
  auth: SlackAuth;
  connection: SlackConnection;
  /** Web API base URL, always ending in `/` as WebClient expects. */
  apiUrl: string;
  /** How long one Slack call may take before it counts as failed (then a post is looked up, not repeated). */
  callTimeoutMs: number;
}

export interface DeliveryConfig {
  /** Threads answered at once by one process, and so prompts in flight to the agent service. */
  concurrency: number;
  /** How long a claimed job stays reserved without a heartbeat; a dead owner's job is retaken after it. */
  leaseMs: number;
  /** SIGTERM: how long in-flight answers may take before unsent work is handed back and the bot exits. */
  shutdownTimeoutMs: number;
  /** How long an answer Slack refuses is kept and retried before the thread is told it was refused. */
  replyRetryWindowMs: number;
  /**
   * How long events that cannot be recorded are refused (Slack retries them); after that they are
   * acknowledged and their authors told to send again, so Slack does not disable the subscriptions.
   */
  storeOutageAckMs: number;
  /**
   * How long an answer the store cannot record (PostgreSQL restarting or failing over) is kept in memory
   * and retried before the thread is told it was dropped.
   */
  storeRetryWindowMs: number;
  /** How long any other store write that fails is retried before the job gives up on it (taken back once its lease lapses). */
  storeWriteRetryMs: number;
}

export interface AgentViewConfig {
  mode: AgentViewMode;
  /** Shown when the Messages tab opens (at most 4). */
  suggestedPrompts: readonly SuggestedPrompt[];
  /** Posted once per person, the first time they open the Messages tab. */
  greeting: string;
}

export interface Config {
  slack: SlackConfig;
  /** The address PORT and ADMIN_PORT listen on; undefined: every interface. */
  host?: string;
  /** Slack requests (HTTP mode) and the health endpoints. */
  port: number;
  /** Metrics and the health endpoints, for operators only. */
  adminPort: number;
  agent: AgentConfig;
  store: StoreConfig;
  sessions: {
    /** Sessions idle longer than this are deleted; 0 turns expiry off. */
    idleTtlMs: number;
    /** First retry delay of a failed session deletion; doubles per attempt. */
    deleteRetryMs: number;
  };
  slashCommand: string;
  delivery: DeliveryConfig;
  access: {
    /** Empty: every workspace, channel or user is allowed. */
    teamIds: ReadonlySet<string>;
    channelIds: ReadonlySet<string>;
    userIds: ReadonlySet<string>;
    /** Requests (prompts, commands, the reset shortcut, Send again) per user per minute; 0 turns the limit off. */
    userRateLimit: number;
  };
  conversation: {
    /** Thread replies reach the agent only when they mention the bot. */
    mentionOnly: boolean;
    maxPromptChars: number;
    /** After this long without an answer the thread is told the agent is slow; 0 turns it off. */
    slowNoticeMs: number;
    /** The working reaction appears only if the answer takes longer than this (0: at once). */
    workingIndicatorDelayMs: number;
    /** Earlier thread messages sent along with a first mention mid-thread; 0 turns it off. */
    threadContextMessages: number;
    /** Feedback buttons under each answer. */
    feedbackButtons: boolean;
  };
  /** The agent view (manifest `features.agent_view`): conversations in the app's Messages tab. */
  agentView: AgentViewConfig;
  /** OpenTelemetry: spans are exported over OTLP/HTTP only when an endpoint is set. */
  tracing: { endpoint?: string; serviceName: string };
  logLevel: LogLevel;
  /** `auto`: readable lines in a terminal, JSON otherwise. */
  logFormat: 'auto' | 'json' | 'pretty';
}

/** What the operator command needs: no Slack settings. */
export interface OperatorConfig {
  agent: AgentConfig;
  store: StoreConfig;
}

/** What `npm run installations` needs: the store and the keys of its tokens. */
export interface InstallationsConfig {
  store: StoreConfig;
  tokenKeys: readonly TokenKey[];
}
