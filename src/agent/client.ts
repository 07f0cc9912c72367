import { setTimeout as sleep } from 'node:timers/promises';
import { HttpPools, HttpRequestError, type HttpResponse, sendHttpRequest } from '../util/http-request.js';
import {
  type AgentErrorKind,
  type AgentOperation,
  AgentServiceError,
  isAgentServiceError,
} from './errors.js';

export interface AgentRetryOptions {
  /** Total attempts, including the first. */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export type AgentCallOutcome = 'ok' | AgentErrorKind | 'aborted';

export interface AgentCallInfo {
  operation: AgentOperation;
  /** 1-based attempt number; every HTTP attempt is reported. */
  attempt: number;
  durationMs: number;
  outcome: AgentCallOutcome;
}

export interface AgentClientOptions {
  baseUrl: string;
  apiKey: string;
  /** Per attempt, covering connect, response headers and body. */
  timeoutMs: number;
  maxSockets?: number;
  retry?: AgentRetryOptions;
  onCall?: (info: AgentCallInfo) => void;
}

export interface AgentReply {
  text: string;
  innerStatus?: number;
  message?: string;
}

export interface AgentSessionRecord {
  uuid: string;
  sessionName?: string;
  createdAt?: string;
}

export interface SendMessageOptions {
  signal?: AbortSignal;
}

type JsonObject = Record<string, unknown>;

const DEFAULT_RETRY: AgentRetryOptions = { attempts: 3, baseDelayMs: 200, maxDelayMs: 5_000 };
const DEFAULT_MAX_SOCKETS = 256;
const MAX_LIST_PAGES = 100;
const MAX_BODY_BYTES = 16 * 1024 * 1024;
const LIST_WRAPPER_KEYS = ['items', 'sessions', 'data', 'results', 'records'] as const;
const SESSION_GONE = /session.*(not\s*found|does\s*not\s*exist|no\s*longer|invalid|unknown|expired)/i;
/** Failed before the connection existed, so nothing can have reached the service. */
const NOT_DELIVERED_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  // undici: no connection within its connect timeout, so nothing was sent.
  'UND_ERR_CONNECT_TIMEOUT',
]);
const TIMEOUT_CODES = new Set(['ECONNABORTED', 'ETIMEDOUT']);
/** Content-Type for request bodies, Accept for every request. */
const JSON_TYPE = 'application/json';
const UNAVAILABLE_HTTP = new Set([429, 502, 503, 504]);

const NOT_JSON = Symbol('not-json');

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Transport error code, looking through Node's AggregateError from dual-stack connects. */
function transportCode(err: unknown): string | undefined {
  if (!isObject(err) && !(err instanceof Error)) return undefined;
  const record = err as { code?: unknown; cause?: unknown; errors?: unknown };
  if (typeof record.code === 'string' && record.code !== 'ERR_CANCELED') return record.code;
  if (Array.isArray(record.errors)) {
    for (const inner of record.errors) {
      const code = transportCode(inner);
      if (code) return code;
    }
  }
  return record.cause !== undefined && record.cause !== err ? transportCode(record.cause) : undefined;
}

function parseRetryAfter(value: unknown, now = Date.now()): number | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000));
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function toPageNumber(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isInteger(value) && value > 0) return value;
  if (typeof value === 'string') {
    if (/^\d+$/.test(value)) return Number(value);
    // A next URL is mined for its page number only; following it could send the key to another host.
    const match = /[?&]page=(\d+)/.exec(value);
    if (match?.[1]) return Number(match[1]);
  }
  return undefined;
}

export class AgentClient {
  private readonly pools: HttpPools;
  private readonly base: string;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly retry: AgentRetryOptions;
  private readonly onCall: ((info: AgentCallInfo) => void) | undefined;
  private closed = false;

  constructor(options: AgentClientOptions) {
    const url = new URL(options.baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TypeError('AgentClient baseUrl must be http(s)');
    }
    if (!options.apiKey || /[\r\n]/.test(options.apiKey)) {
      throw new TypeError('AgentClient apiKey must be a non-empty single-line string');
    }
    if (!(options.timeoutMs > 0)) throw new TypeError('AgentClient timeoutMs must be positive');
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs;
    const retry = options.retry ?? DEFAULT_RETRY;
    this.retry = { ...retry, attempts: Math.max(1, Math.floor(retry.attempts)) };
    this.onCall = options.onCall;

    const maxSockets = options.maxSockets ?? DEFAULT_MAX_SOCKETS;
    // Idle sockets are let go before the server closes them: a prompt failing with ECONNRESET is not resent.
    // Redirects are never followed (one would carry the private_key header to wherever it points), and
    // every body is inspected whatever the status: the service may report failure with `status: false`.
    this.pools = new HttpPools(maxSockets);
  }

  /**
   * Sends a prompt. Retried only when the request certainly never reached the service, since a prompt
   * must never run twice. If `signal` aborts, this rejects with `signal.reason` (not an
   * AgentServiceError); the service may still have received and processed the prompt.
   */
  async sendMessage(
    agentId: string,
    sessionId: string,
    prompt: string,
    options: SendMessageOptions = {},
  ): Promise<AgentReply> {
    requireId('agentId', agentId);
    requireId('sessionId', sessionId);
    const { signal } = options;
    // Shape checks run inside the attempt so onCall reports bad_response rather than 'ok'.
    return this.withRetry(
      'sendMessage',
      (e) => e.notDelivered,
      async () => {
        const envelope = await this.call('sendMessage', 'POST', `/chat/${enc(agentId)}`, {
          body: { prompt, session_id: sessionId },
          signal,
        });
        const data = envelope.data;
        if (!isObject(data) || typeof data.data !== 'string') {
          throw badShape('sendMessage', 'missing data.data reply text');
        }
        const reply: AgentReply = { text: data.data };
        if (typeof data.status === 'number') reply.innerStatus = data.status;
        if (typeof data.message === 'string') reply.message = data.message;
        return reply;
      },
      signal,
    );
  }

  async createSession(agentId: string): Promise<string> {
    requireId('agentId', agentId);
    return this.withRetry('createSession', isUnavailable, async () => {
      const envelope = await this.call('createSession', 'POST', `/session/${enc(agentId)}`);
      const id = isObject(envelope.data) ? envelope.data.session_id : undefined;
      if (typeof id === 'string' && id !== '') return id;
      if (typeof id === 'number' && Number.isFinite(id)) return String(id);
      throw badShape('createSession', 'missing data.session_id');
    });
  }

  /**
   * Pagination is unspecified: a next-page hint in the body (`next`, `next_page`, `has_more` + `page`,
   * `total_pages` + `page`) is followed with `?page=N`, up to MAX_LIST_PAGES; otherwise one page.
   */
  async listSessions(agentId: string): Promise<AgentSessionRecord[]> {
    requireId('agentId', agentId);
    const path = `/session/${enc(agentId)}`;
    const byUuid = new Map<string, AgentSessionRecord>();
    let page = 1;
    for (let fetched = 0; fetched < MAX_LIST_PAGES; fetched++) {
      // The first request carries no page parameter, so a service without pagination sees a plain GET.
      const query = fetched === 0 ? undefined : { page };
      const { records, hints } = await this.withRetry('listSessions', isUnavailable, async () => {
        const extracted = extractRecords(await this.call('listSessions', 'GET', path, { query }));
        if (extracted.records === undefined) throw badShape('listSessions', 'unrecognised data shape');
        return { records: extracted.records, hints: extracted.hints };
      });
      for (const record of records) {
        if (!byUuid.has(record.uuid)) byUuid.set(record.uuid, record);
      }
      // Only strictly increasing page numbers are followed, which rules out loops.
      const next = nextPage(hints, page);
      if (next === undefined || next <= page) break;
      page = next;
    }
    return [...byUuid.values()];
  }

  async deleteSession(agentId: string, sessionId: string): Promise<void> {
    requireId('agentId', agentId);
    requireId('sessionId', sessionId);
    await this.withRetry('deleteSession', isUnavailable, () =>
      this.call('deleteSession', 'DELETE', `/session/${enc(agentId)}/${enc(sessionId)}`),
    );
  }

  /** Destroys pooled sockets; in-flight requests fail as `unavailable` and no retries are scheduled. */
  close(): void {
    this.closed = true;
    this.pools.destroy();
  }

  private async withRetry<T>(
    operation: AgentOperation,
    retryable: (error: AgentServiceError) => boolean,
    attemptOnce: (attempt: number) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      try {
        const result = await attemptOnce(attempt);
        this.report(operation, attempt, started, 'ok');
        return result;
      } catch (error) {
        if (!isAgentServiceError(error)) {
          this.report(operation, attempt, started, 'aborted');
          throw error;
        }
        this.report(operation, attempt, started, error.kind);
        if (attempt >= this.retry.attempts || this.closed || !retryable(error)) throw error;
        await this.pause(this.backoff(attempt, error.retryAfterMs), signal);
      }
    }
  }

  private backoff(attempt: number, retryAfterMs: number | undefined): number {
    const { baseDelayMs, maxDelayMs } = this.retry;
    if (retryAfterMs !== undefined) return Math.min(maxDelayMs, retryAfterMs);
    const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
    // Jitter in [ceiling/2, ceiling] spreads retries from many threads after a shared outage.
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  private async pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
    try {
      await sleep(ms, undefined, signal ? { signal } : undefined);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw error;
    }
  }

  private report(operation: AgentOperation, attempt: number, started: number, outcome: AgentCallOutcome) {
    if (!this.onCall) return;
    try {
      this.onCall({ operation, attempt, durationMs: performance.now() - started, outcome });
    } catch {
      // Metrics must never break a call.
    }
  }

  /** One HTTP attempt; resolves with the success envelope or rejects with AgentServiceError / abort reason. */
  private async call(
    operation: AgentOperation,
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    extra: {
      body?: JsonObject;
      query?: Record<string, number> | undefined;
      signal?: AbortSignal | undefined;
    } = {},
  ): Promise<JsonObject> {
    const callerSignal = extra.signal;
    if (callerSignal?.aborted) throw callerSignal.reason;
    if (this.closed) {
      throw new AgentServiceError({
        kind: 'unavailable',
        operation,
        notDelivered: true,
        detail: 'client closed',
      });
    }
    const query = extra.query
      ? `?${new URLSearchParams(Object.entries(extra.query).map(([name, value]): [string, string] => [name, String(value)]))}`
      : '';
    let response: HttpResponse;
    try {
      response = await sendHttpRequest(this.pools, {
        method,
        url: `${this.base}${path}${query}`,
        headers: extra.body
          ? { private_key: this.apiKey, accept: JSON_TYPE, 'content-type': JSON_TYPE }
          : { private_key: this.apiKey, accept: JSON_TYPE },
        body: extra.body ? JSON.stringify(extra.body) : undefined,
        signal: callerSignal,
        // Bounds the whole exchange, slow-drip responses included.
        deadlineMs: this.timeoutMs,
        maxBodyBytes: MAX_BODY_BYTES,
      });
    } catch (error) {
      if (callerSignal?.aborted) throw callerSignal.reason;
      throw this.transportError(operation, error);
    }
    return this.interpret(operation, response);
  }

  private transportError(operation: AgentOperation, error: unknown): AgentServiceError {
    const code = transportCode(error);
    if (code && TIMEOUT_CODES.has(code)) {
      const detail = error instanceof HttpRequestError ? `no response in ${this.timeoutMs}ms` : code;
      return new AgentServiceError({ kind: 'timeout', operation, detail });
    }
    if (code === 'ERR_BODY_TOO_LARGE') {
      return new AgentServiceError({ kind: 'bad_response', operation, detail: 'response body too large' });
    }
    const notDelivered = code !== undefined && NOT_DELIVERED_CODES.has(code);
    // Codes only: raw transport messages are not needed and never echo config.
    return new AgentServiceError({
      kind: 'unavailable',
      operation,
      notDelivered,
      detail: code ?? 'network error',
    });
  }

  private interpret(operation: AgentOperation, response: HttpResponse): JsonObject {
    const status = response.status;
    const raw = response.body.toString('utf8');
    let body: unknown = NOT_JSON;
    try {
      body = JSON.parse(raw);
    } catch {
      // Left as NOT_JSON.
    }
    const ok2xx = status >= 200 && status < 300;
    if (ok2xx && isObject(body) && body.status !== false) return body;

    const serviceMessage =
      isObject(body) && typeof body.message === 'string' ? this.redact(body.message) : undefined;
    const base = { operation, httpStatus: status, serviceMessage };
    if (UNAVAILABLE_HTTP.has(status)) {
      const retryAfterMs =
        status === 429 || status === 503 ? parseRetryAfter(response.headers['retry-after']) : undefined;
      throw new AgentServiceError({ ...base, kind: 'unavailable', retryAfterMs });
    }
    if (ok2xx && !isObject(body)) {
      throw new AgentServiceError({
        ...base,
        kind: 'bad_response',
        detail: body === NOT_JSON ? 'body is not JSON' : 'body is not an object',
      });
    }
    if ((operation === 'sendMessage' || operation === 'deleteSession') && this.sessionGone(status, body)) {
      throw new AgentServiceError({ ...base, kind: 'session_not_found' });
    }
    throw new AgentServiceError({ ...base, kind: 'rejected' });
  }

  /**
   * A 404 means the session is gone only when it carries the service's JSON failure body and does not
   * name the agent instead; an HTML 404 (wrong base URL) must not trigger endless session re-creation.
   */
  private sessionGone(status: number, body: unknown): boolean {
    const message = isObject(body) && typeof body.message === 'string' ? body.message : '';
    if (SESSION_GONE.test(message)) return true;
    return status === 404 && isObject(body) && !/agent/i.test(message);
  }

  private redact(text: string): string {
    return text.split(this.apiKey).join('[redacted]');
  }
}

function badShape(operation: AgentOperation, detail: string): AgentServiceError {
  return new AgentServiceError({ kind: 'bad_response', operation, detail });
}

function enc(segment: string): string {
  return encodeURIComponent(segment);
}

function requireId(name: string, value: string): void {
  // An empty segment would silently address a different resource (e.g. DELETE /session/{agent}/).
  if (typeof value !== 'string' || value === '') throw new TypeError(`${name} must be a non-empty string`);
}

function isUnavailable(error: AgentServiceError): boolean {
  return error.kind === 'unavailable';
}

function toRecord(value: unknown): AgentSessionRecord | undefined {
  if (!isObject(value) || typeof value.uuid !== 'string' || value.uuid === '') return undefined;
  const record: AgentSessionRecord = { uuid: value.uuid };
  if (typeof value.session_name === 'string') record.sessionName = value.session_name;
  if (typeof value.created_at === 'string') record.createdAt = value.created_at;
  else if (typeof value.created_at === 'number') record.createdAt = String(value.created_at);
  return record;
}

/** Reads `data` as one record, an array, or an object wrapping an array; `records` undefined = unknown shape. */
function extractRecords(envelope: JsonObject): {
  records: AgentSessionRecord[] | undefined;
  hints: JsonObject[];
} {
  const data = envelope.data;
  const hints: JsonObject[] = [envelope];
  const fromList = (list: unknown[]) =>
    list.map(toRecord).filter((r): r is AgentSessionRecord => r !== undefined);
  if (data === undefined || data === null) {
    // An explicit success with no data reads as an empty list; otherwise the shape is unknown.
    return { records: envelope.status === true ? [] : undefined, hints };
  }
  if (Array.isArray(data)) return { records: fromList(data), hints };
  if (!isObject(data)) return { records: undefined, hints };
  for (const key of LIST_WRAPPER_KEYS) {
    const inner = data[key];
    if (Array.isArray(inner)) return { records: fromList(inner), hints: [data, envelope] };
  }
  const single = toRecord(data);
  return { records: single ? [single] : [], hints };
}

function nextPage(hints: JsonObject[], current: number): number | undefined {
  for (const hint of hints) {
    const explicit = toPageNumber(hint.next_page) ?? toPageNumber(hint.next);
    if (explicit !== undefined) return explicit;
    const page = toPageNumber(hint.page) ?? current;
    if (hint.has_more === true) return page + 1;
    const total = toPageNumber(hint.total_pages);
    if (total !== undefined && hint.has_more === undefined) return page < total ? page + 1 : undefined;
    if (hint.has_more === false) return undefined;
  }
  return undefined;
}
