import { type AgentOperation, AgentServiceError } from './errors.js';

export type JsonObject = Record<string, unknown>;

/** What is read of an HTTP response: axios's, or any other client's. */
export interface HttpResponse {
  status: number;
  data: unknown;
  headers: Record<string, unknown>;
}

/**
 * The service's words for a session it does not have, the word after or before: "session [id] not found",
 * "… does not exist", "… has expired", "session_id is invalid", "no such session", "invalid session_id". An id
 * is quoted or has a digit in it, so "the session if expired" is not one. Every repetition is bounded.
 */
const SESSION_GONE_WORDS = [
  /\bsession(?:[ _-]?id)?\s{0,3}(?:(?:["'`][^"'`\s]{1,64}["'`]|[\w-]{0,32}\d[\w-]{0,32}):?\s{1,3})?(?:(?:is|was|has|has been)\s{1,3})?(?:not\s{1,3}found|does\s{0,3}n[o']t\s{1,3}exist|no\s{1,3}longer\s{1,3}exists|expired|invalid|unknown)\b/i,
  /\b(?:no(?:\s{1,3}such)?|invalid|unknown|expired)\s{1,3}session(?:[ _-]?id)?\b/i,
];
const NO_SESSIONS_WORDS = /^\W{0,3}no\s{1,3}sessions?\b/i;
/** What the service's words are matched against: its words about sessions are short, a longer message is cut. */
const SERVICE_WORDS_READ_CHARS = 500;
/** Failed before a connection existed, so nothing can have reached the service. */
const NOT_DELIVERED_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
const UNAVAILABLE_HTTP = new Set([429, 502, 503, 504]);

/**
 * Reads a response as the service's success envelope, or throws the AgentServiceError it amounts to. Where the
 * API leaves things open every reasonable reading is accepted: `status: false` is a failure whatever the HTTP
 * code, and an unexpected body is a `bad_response`. `redact` takes the API key out of the service's words.
 */
export function interpretResponse(
  operation: AgentOperation,
  response: HttpResponse,
  redact: (text: string) => string,
): JsonObject {
  const status = response.status;
  let body: unknown;
  let json = true;
  try {
    body = JSON.parse(typeof response.data === 'string' ? response.data : '');
  } catch {
    json = false;
  }
  const ok2xx = status >= 200 && status < 300;
  if (ok2xx && isObject(body) && body.status !== false) return body;
  if (operation === 'listSessions' && (ok2xx || status === 404) && saysNoSessions(body)) {
    return { status: true, data: [] };
  }

  const serviceMessage =
    isObject(body) && typeof body.message === 'string' ? redact(body.message) : undefined;
  const base = { operation, httpStatus: status, serviceMessage };
  if (UNAVAILABLE_HTTP.has(status)) {
    const retryAfterMs =
      status === 429 || status === 503 ? parseRetryAfter(response.headers['retry-after']) : undefined;
    throw new AgentServiceError({ ...base, kind: 'unavailable', retryAfterMs });
  }
  // Not followed (client.ts): AGENT_BASE_URL is not the service's own address.
  if (status >= 300 && status < 400) throw new AgentServiceError({ ...base, kind: 'redirected' });
  if (ok2xx && !isObject(body)) {
    throw new AgentServiceError({
      ...base,
      kind: 'bad_response',
      detail: json ? 'body is not an object' : 'body is not JSON',
    });
  }
  if ((operation === 'sendMessage' || operation === 'deleteSession') && sessionGone(status, body)) {
    throw new AgentServiceError({ ...base, kind: 'session_not_found' });
  }
  if (status === 401 || status === 403) throw new AgentServiceError({ ...base, kind: 'unauthorized' });
  if (status === 404) throw new AgentServiceError({ ...base, kind: 'not_found' });
  throw new AgentServiceError({ ...base, kind: 'rejected' });
}

/**
 * Whether the service refused a session it does not have, so the prompt never ran (and is sent once more, in a
 * new session) or the deletion has nothing left to do. Only a refusal says so: a server error may come after
 * the prompt ran, whatever its words. A 404 or 410 counts when it carries the service's JSON failure body and
 * does not name the agent instead; an HTML 404 (a wrong base URL) must not start endless session re-creation.
 */
function sessionGone(status: number, body: unknown): boolean {
  if (status >= 500 || !isObject(body)) return false;
  const words = serviceWordsOf(body);
  if (SESSION_GONE_WORDS.some((pattern) => pattern.test(words))) return true;
  return (status === 404 || status === 410) && !/agent/i.test(words);
}

/** A list with nothing in it, said as a failure: "No sessions found", "no sessions yet" (often with a 404). */
function saysNoSessions(body: unknown): boolean {
  return NO_SESSIONS_WORDS.test(serviceWordsOf(body));
}

/** The start of the failure body's `message`, for matching ('' when there is none). */
function serviceWordsOf(body: unknown): string {
  return isObject(body) && typeof body.message === 'string'
    ? body.message.slice(0, SERVICE_WORDS_READ_CHARS)
    : '';
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The socket error code, looking through axios's wrapping and Node's AggregateError from dual-stack connects. */
function transportCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const record = error as { code?: unknown; cause?: unknown; errors?: unknown };
  if (Array.isArray(record.errors)) {
    for (const inner of record.errors) {
      const code = transportCode(inner);
      if (code) return code;
    }
  }
  const inner =
    record.cause !== undefined && record.cause !== error ? transportCode(record.cause) : undefined;
  if (inner) return inner;
  return typeof record.code === 'string' && !record.code.startsWith('ERR_') ? record.code : undefined;
}

export function parseRetryAfter(value: unknown, now = Date.now()): number | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000));
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export function badShape(operation: AgentOperation, detail: string): AgentServiceError {
  return new AgentServiceError({ kind: 'bad_response', operation, detail });
}

/**
 * The AgentServiceError a failed exchange amounts to (no response, or none readable): a timeout, a body too
 * large, or the service unavailable (`notDelivered` when no connection was ever made). Only codes are kept.
 */
export function transportFailure(
  operation: AgentOperation,
  error: unknown,
  seen: { timedOutAfterMs: number | undefined; tooLarge: boolean; maxResponseBytes: number },
): AgentServiceError {
  if (seen.timedOutAfterMs !== undefined)
    return new AgentServiceError({
      kind: 'timeout',
      operation,
      detail: `no response in ${seen.timedOutAfterMs}ms`,
    });
  if (seen.tooLarge) {
    return new AgentServiceError({
      kind: 'bad_response',
      operation,
      detail: `response body over ${seen.maxResponseBytes} bytes`,
    });
  }
  const code = transportCode(error);
  return new AgentServiceError({
    kind: 'unavailable',
    operation,
    notDelivered: code !== undefined && NOT_DELIVERED_CODES.has(code),
    detail: code ?? 'network error',
  });
}

export function isUnavailable(error: AgentServiceError): boolean {
  return error.kind === 'unavailable';
}

export function isUnavailableOrServerError(error: AgentServiceError): boolean {
  return isUnavailable(error) || (error.httpStatus !== undefined && error.httpStatus >= 500);
}
