import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import axios, { type AxiosInstance, type AxiosResponse, isAxiosError } from 'axios';
import { retryDelayMs } from '../util/backoff.js';
import { storableText } from '../util/storable-text.js';
import {
  type AgentErrorKind,
  type AgentOperation,
  AgentServiceError,
  isAgentServiceError,
} from './errors.js';
import {
  badShape,
  interpretResponse,
  isObject,
  isUnavailable,
  isUnavailableOrServerError,
  type JsonObject,
  transportFailure,
} from './response.js';
import { enc, isValidSessionId, requireId, requireSessionId } from './session-ids.js';
import { type AgentSessionRecord, extractRecords, nextPage } from './session-list.js';

export { isValidSessionId } from './session-ids.js';
export type { AgentSessionRecord } from './session-list.js';

export interface AgentRetryOptions {
  /** Total attempts, including the first. */
  attempts: number;
  baseDelayMs: number;
  /** The longest wait between attempts, a server's Retry-After included: someone is waiting for the call. */
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

const DEFAULT_RETRY: AgentRetryOptions = { attempts: 3, baseDelayMs: 200, maxDelayMs: 5_000 };
/** A reply is text for a Slack thread; anything near this is not one (and is refused, not buffered). */
export const MAX_RESPONSE_BYTES = 1024 * 1024;
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
/** Idle connections are closed before typical servers close them (5 s), so a prompt never meets a dead one. */
const IDLE_SOCKET_MS = 4_000;

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
        // The API does not say what the inner status means; read as an HTTP status, 400 or more is a failure
        // whose text (an error, a trace) is not the agent's answer. It may have acted: never sent again.
        if (typeof data.status === 'number' && data.status >= 400)
          throw badShape('sendMessage', `inner data.status ${data.status}`);
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
        const { baseDelayMs, maxDelayMs } = this.retry;
        const { retryAfterMs } = error;
        await sleep(
          retryDelayMs({ attempt, baseMs: baseDelayMs, maxMs: maxDelayMs, retryAfterMs, capMs: maxDelayMs }),
        );
      }
    }
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
        // Codes only: axios errors carry the request config, headers (the API key) included.
        throw transportFailure(operation, error, {
          timedOutAfterMs: deadline.aborted ? this.timeoutMs : undefined,
          tooLarge: isAxiosError(error) && /maxContentLength/.test(error.message),
          maxResponseBytes: MAX_RESPONSE_BYTES,
        });
      }
      return interpretResponse(operation, response, (text) => this.redact(text));
    };
    return this.around ? this.around(operation, attempt) : attempt();
  }

  private redact(text: string): string {
    return text.split(this.apiKey).join('[redacted]');
  }
}
