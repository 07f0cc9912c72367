import { cutAt } from '../util/text-cut.js';

export type AgentOperation = 'sendMessage' | 'listSessions' | 'createSession' | 'deleteSession';

export type AgentErrorKind =
  | 'unavailable'
  | 'timeout'
  | 'rejected'
  | 'session_not_found'
  | 'bad_response'
  /** 401 or 403: the API key is wrong or not allowed for this agent (a misconfiguration). */
  | 'unauthorized'
  /** 404 that is not a lost session: a wrong AGENT_BASE_URL or AGENT_ID (a misconfiguration). */
  | 'not_found'
  /** 3xx: AGENT_BASE_URL is not the service's own address (say http:// for https://), a misconfiguration. */
  | 'redirected';

export interface AgentServiceErrorDetails {
  kind: AgentErrorKind;
  operation: AgentOperation;
  httpStatus?: number;
  /** The service's own words: never part of the error's message or of its enumerable fields. */
  serviceMessage?: string;
  notDelivered?: boolean;
  retryAfterMs?: number;
  /** Short technical context of our own (e.g. a socket error code): never secrets, request config or the service's words. */
  detail?: string;
}

const KIND_TEXT: Record<AgentErrorKind, string> = {
  unavailable: 'service unavailable',
  timeout: 'timed out',
  rejected: 'request rejected',
  session_not_found: 'session not found',
  bad_response: 'unexpected response',
  unauthorized: 'API key refused',
  not_found: 'not found (check AGENT_BASE_URL and AGENT_ID)',
  redirected: 'redirected elsewhere (set AGENT_BASE_URL to the address it redirects to)',
};

const MAX_QUOTED_CHARS = 200;

function clip(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > MAX_QUOTED_CHARS ? `${cutAt(oneLine, MAX_QUOTED_CHARS)}…` : oneLine;
}

/**
 * The only error type the agent client rejects with (besides an abort reason). Fields are plain data so
 * structured loggers can serialise it safely; no request config, headers or raw transport error is kept.
 * Its message and enumerable fields hold codes and our own words only: the service's error text may quote
 * the prompt (or anything the agent wrote), and the error is logged above debug.
 */
export class AgentServiceError extends Error {
  override readonly name = 'AgentServiceError';
  readonly kind: AgentErrorKind;
  readonly operation: AgentOperation;
  readonly httpStatus?: number;
  /**
   * What the service said, for debug-level lines only. Not enumerable, so a logged error leaves it out.
   */
  declare readonly serviceMessage?: string;
  /** True only when the request certainly never reached the service (refused / DNS before connect). */
  readonly notDelivered: boolean;
  readonly retryAfterMs?: number;

  constructor(details: AgentServiceErrorDetails) {
    const parts = [`agent service ${details.operation}: ${KIND_TEXT[details.kind]}`];
    if (details.httpStatus !== undefined) parts.push(`(HTTP ${details.httpStatus})`);
    if (details.detail) parts.push(`[${clip(details.detail)}]`);
    super(parts.join(' '));
    this.kind = details.kind;
    this.operation = details.operation;
    this.notDelivered = details.notDelivered ?? false;
    // Only set optional fields that exist, so logs and equality checks stay tidy.
    if (details.httpStatus !== undefined) this.httpStatus = details.httpStatus;
    if (details.serviceMessage !== undefined)
      Object.defineProperty(this, 'serviceMessage', { value: details.serviceMessage, enumerable: false });
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
  }
}

export function isAgentServiceError(value: unknown): value is AgentServiceError {
  return value instanceof AgentServiceError;
}
