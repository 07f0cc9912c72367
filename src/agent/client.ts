import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import axios, { type AxiosInstance, type AxiosResponse, isAxiosError } from 'axios';
import { backoffMs, withJitter } from '../util/backoff.js';
import { storableText } from '../util/storable-text.js';
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

export type AgentCallOutcome = 'ok' | AgentErrorKind;

export interface AgentCallInfo {
  operation: AgentOperation;
  /** 1-based attempt number; every HTTP attempt is reported. */
  attempt: number;
  durationMs: number;
  outcome: AgentCallOutcome;
  /** The service's words about a failure: they may quote the prompt, so only for debug-level lines. */
  serviceMessage?: string;
}

export interface AgentClientOptions {
  baseUrl: string;
  apiKey: string;
  /** Per attempt, covering connect, response headers and body. */
  timeoutMs: number;
  /** Connections kept per host: at least the prompts that may be in flight at once. */
  maxSockets?: number;
  retry?: AgentRetryOptions;
  onCall?: (info: AgentCallInfo) => void;
  /** Extra headers per request (trace context); never the API key, which the client adds itself. */
  headers?: () => Record<string, string>;
  /** Wraps each HTTP attempt (a trace span); `headers` is read inside it. */
  around?: <T>(operation: AgentOperation, attempt: () => Promise<T>) => Promise<T>;
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

type JsonObject = Record<string, unknown>;

const DEFAULT_RETRY: AgentRetryOptions = { attempts: 3, baseDelayMs: 200, maxDelayMs: 5_000 };
/** A reply is text for a Slack thread; anything near this is not one (and is refused, not buffered). */
export const MAX_RESPONSE_BYTES = 1024 * 1024;
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
/** Idle connections are closed before typical servers close them (5 s), so a prompt never meets a dead one. */
const IDLE_SOCKET_MS = 4_000;
const LIST_WRAPPER_KEYS = ['items', 'sessions', 'data', 'results', 'records'] as const;
const SESSION_GONE = /session.*(not\s*found|does\s*not\s*exist|no\s*longer|invalid|unknown|expired)/i;
/** Failed before a connection existed, so nothing can have reached the service. */
const NOT_DELIVERED_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
const UNAVAILABLE_HTTP = new Set([429, 502, 503, 504]);
const MAX_SESSION_ID_CHARS = 256;

/**
 * The agent service's HTTP interface (see the API document): send a message; list, create and delete an
 * agent's sessions. Every failure becomes an AgentServiceError of one kind. Where the API leaves things
 * open (status codes, list shape, pagination) every reasonable reading is accepted, `status: false` is a
 * failure whatever the HTTP code, and an unexpected body is a `bad_response`, never a crash.
 */
export class AgentClient {
  private readonly http: AxiosInstance;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly retry: AgentRetryOptions;
  private readonly onCall: ((info: AgentCallInfo) => void) | undefined;
  private readonly extraHeaders: (() => Record<string, string>) | undefined;
  private readonly around: AgentClientOptions['around'];
  private closed = false;

  constructor(options: AgentClientOptions) {
    const url = new URL(options.baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new TypeError('AgentClient baseUrl must be http(s)');
    if (!options.apiKey || /[\r\n]/.test(options.apiKey)) {
      throw new TypeError('AgentClient apiKey must be a non-empty single-line string');
    }
    if (!(options.timeoutMs > 0)) throw new TypeError('AgentClient timeoutMs must be positive');
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs;
    const retry = options.retry ?? DEFAULT_RETRY;
    this.retry = { ...retry, attempts: Math.max(1, Math.floor(retry.attempts)) };
    this.onCall = options.onCall;
    this.extraHeaders = options.headers;
    this.around = options.around;
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 128, timeout: IDLE_SOCKET_MS };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
    this.http = axios.create({
      baseURL: options.baseUrl.replace(/\/+$/, ''),
      httpAgent: this.httpAgent,
      httpsAgent: this.httpsAgent,
      headers: { private_key: options.apiKey, accept: 'application/json' },
      // A redirect would carry the private_key header to wherever it points.
      maxRedirects: 0,
      maxContentLength: MAX_RESPONSE_BYTES,
      maxBodyLength: MAX_REQUEST_BYTES,
      // Every body is read whatever the status (`status: false` may come with 200), and parsed here.
      validateStatus: () => true,
      responseType: 'text',
      transformResponse: [(data: unknown) => data],
    });
  }

  /**
   * Sends a prompt. Retried only when the request certainly never reached the service, since a prompt may
   * be a command and must never run twice.
   */
  async sendMessage(agentId: string, sessionId: string, prompt: string): Promise<AgentReply> {
    requireId('agentId', agentId);
    requireSessionId(sessionId);
    return this.withRetry(
      'sendMessage',
      (error) => error.notDelivered,
      async () => {
        const envelope = await this.call('sendMessage', 'POST', `/chat/${enc(agentId)}`, {
          body: { prompt, session_id: sessionId },
        });
        const data = envelope.data;
        if (!isObject(data) || typeof data.data !== 'string')
          throw badShape('sendMessage', 'missing data.data reply text');
        // Cleaned here, where the agent's words come in: the store could not keep a NUL.
        const reply: AgentReply = { text: storableText(data.data) };
        if (typeof data.status === 'number') reply.innerStatus = data.status;
        if (typeof data.message === 'string') reply.message = data.message;
        return reply;
      },
    );
  }

  /**
   * Retried on a server error too, not only when the service is unavailable: creating a session sends no
   * prompt, so a retry cannot run anything twice. A failed attempt the service had in fact carried out leaves
   * an empty session behind; its id was never given to us, and among the agent's listed sessions it cannot be
   * told apart from another replica's new one, so it is not chased here: `npm run sessions` lists it as an
   * orphan and `prune` deletes it. A timeout is not retried, so a hanging service costs one timeout, not three.
   */
  async createSession(agentId: string): Promise<string> {
    requireId('agentId', agentId);
    return this.withRetry('createSession', isUnavailableOrServerError, async () => {
      const envelope = await this.call('createSession', 'POST', `/session/${enc(agentId)}`);
      const raw = isObject(envelope.data) ? envelope.data.session_id : undefined;
      const id = typeof raw === 'number' && Number.isFinite(raw) ? String(raw) : raw;
      if (typeof id === 'string' && isValidSessionId(id)) return id;
      throw badShape('createSession', 'missing or unusable data.session_id');
    });
  }

  /**
   * Pagination is unspecified: a next-page hint in the body (`next`, `next_page`, `has_more` + `page`,
   * `total_pages` + `page`) is followed with `?page=N`, up to `maxPages`; otherwise one page. Records whose
   * id could not be used in a path are left out.
   */
  async listSessions(agentId: string, maxPages = 100): Promise<AgentSessionRecord[]> {
    requireId('agentId', agentId);
    const path = `/session/${enc(agentId)}`;
    const byUuid = new Map<string, AgentSessionRecord>();
    let page = 1;
    for (let fetched = 0; fetched < maxPages; fetched++) {
      // The first request carries no page parameter, so a service without pagination sees a plain GET.
      const params = fetched === 0 ? undefined : { page };
      const { records, hints } = await this.withRetry('listSessions', isUnavailable, async () => {
        const extracted = extractRecords(await this.call('listSessions', 'GET', path, { params }));
        if (extracted.records === undefined) throw badShape('listSessions', 'unrecognised data shape');
        return { records: extracted.records, hints: extracted.hints };
      });
      for (const record of records) if (!byUuid.has(record.uuid)) byUuid.set(record.uuid, record);
      // Only strictly increasing page numbers are followed, which rules out loops.
      const next = nextPage(hints, page);
      if (next === undefined || next <= page) break;
      page = next;
    }
    return [...byUuid.values()];
  }

  async deleteSession(agentId: string, sessionId: string): Promise<void> {
    requireId('agentId', agentId);
    requireSessionId(sessionId);
    await this.withRetry('deleteSession', isUnavailable, () =>
      this.call('deleteSession', 'DELETE', `/session/${enc(agentId)}/${enc(sessionId)}`),
    );
  }

  /** Destroys pooled sockets; in-flight requests fail as `unavailable` and no retries are scheduled. */
  close(): void {
    this.closed = true;
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  private async withRetry<T>(
    operation: AgentOperation,
    retryable: (error: AgentServiceError) => boolean,
    attemptOnce: () => Promise<T>,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      try {
        const result = await attemptOnce();
        this.report(operation, attempt, started, 'ok');
        return result;
      } catch (error) {
        if (!isAgentServiceError(error)) throw error;
        this.report(operation, attempt, started, error.kind, error.serviceMessage);
        if (attempt >= this.retry.attempts || this.closed || !retryable(error)) throw error;
        await sleep(this.backoff(attempt, error.retryAfterMs));
      }
    }
  }

  private backoff(attempt: number, retryAfterMs: number | undefined): number {
    const { baseDelayMs, maxDelayMs } = this.retry;
    if (retryAfterMs !== undefined) return Math.min(maxDelayMs, retryAfterMs);
    return withJitter(backoffMs(attempt, baseDelayMs, maxDelayMs));
  }

  private report(
    operation: AgentOperation,
    attempt: number,
    started: number,
    outcome: AgentCallOutcome,
    serviceMessage?: string,
  ): void {
    const info: AgentCallInfo = { operation, attempt, durationMs: performance.now() - started, outcome };
    if (serviceMessage !== undefined) info.serviceMessage = serviceMessage;
    try {
      this.onCall?.(info);
    } catch {
      // Metrics must never break a call.
    }
  }

  /** One HTTP attempt; resolves with the success envelope or rejects with an AgentServiceError. */
  private async call(
    operation: AgentOperation,
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    extra: { body?: JsonObject; params?: Record<string, number> } = {},
  ): Promise<JsonObject> {
    if (this.closed) {
      throw new AgentServiceError({
        kind: 'unavailable',
        operation,
        notDelivered: true,
        detail: 'client closed',
      });
    }
    const attempt = async () => {
      // One deadline for the whole exchange: a server dripping its answer byte by byte is cut off too.
      const deadline = AbortSignal.timeout(this.timeoutMs);
      let response: AxiosResponse<string>;
      try {
        response = await this.http.request<string>({
          method,
          url: path,
          params: extra.params,
          data: extra.body,
          headers: this.extraHeaders?.(),
          signal: deadline,
        });
      } catch (error) {
        throw this.transportError(operation, error, deadline.aborted);
      }
      return this.interpret(operation, response);
    };
    return this.around ? this.around(operation, attempt) : attempt();
  }

  /** Codes only: axios errors carry the request config, headers (the API key) included, so none is kept. */
  private transportError(operation: AgentOperation, error: unknown, timedOut: boolean): AgentServiceError {
    if (timedOut)
      return new AgentServiceError({
        kind: 'timeout',
        operation,
        detail: `no response in ${this.timeoutMs}ms`,
      });
    const code = transportCode(error);
    if (isAxiosError(error) && /maxContentLength/.test(error.message)) {
      return new AgentServiceError({
        kind: 'bad_response',
        operation,
        detail: `response body over ${MAX_RESPONSE_BYTES} bytes`,
      });
    }
    return new AgentServiceError({
      kind: 'unavailable',
      operation,
      notDelivered: code !== undefined && NOT_DELIVERED_CODES.has(code),
      detail: code ?? 'network error',
    });
  }

  private interpret(operation: AgentOperation, response: AxiosResponse<string>): JsonObject {
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

  private redact(text: string): string {
    return text.split(this.apiKey).join('[redacted]');
  }
}

/**
 * A 404 means the session is gone only when it carries the service's JSON failure body and does not name the
 * agent instead; an HTML 404 (a wrong base URL) must not start endless session re-creation.
 */
function sessionGone(status: number, body: unknown): boolean {
  const message = isObject(body) && typeof body.message === 'string' ? body.message : '';
  if (SESSION_GONE.test(message)) return true;
  return status === 404 && isObject(body) && !/agent/i.test(message);
}

/**
 * A session id the service handed us goes into a URL path: `.` and `..` would be normalised into another
 * request (`DELETE /session/{agent}/..` is `DELETE /session/`), and control characters or huge values are
 * not ids. Everything else is sent percent-encoded.
 */
export function isValidSessionId(id: string): boolean {
  return (
    id !== '' &&
    id !== '.' &&
    id !== '..' &&
    id.length <= MAX_SESSION_ID_CHARS &&
    ![...id].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f)
  );
}

function isObject(value: unknown): value is JsonObject {
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

function requireSessionId(sessionId: string): void {
  if (typeof sessionId !== 'string' || !isValidSessionId(sessionId)) {
    throw new TypeError('sessionId is not an id that can be sent in a URL path');
  }
}

function isUnavailable(error: AgentServiceError): boolean {
  return error.kind === 'unavailable';
}

function isUnavailableOrServerError(error: AgentServiceError): boolean {
  return isUnavailable(error) || (error.httpStatus !== undefined && error.httpStatus >= 500);
}

function toRecord(value: unknown): AgentSessionRecord | undefined {
  if (!isObject(value) || typeof value.uuid !== 'string' || !isValidSessionId(value.uuid)) return undefined;
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
