import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { AgentOperation } from '../../src/agent/errors.js';

/**
 * In-memory stand-in for the conversational agent service, spoken to over real HTTP. Where the spec says
 * "not shown" (status codes, pagination, list shape) it picks one plausible reading and makes the
 * alternatives switchable, so the client is tested against more than one interpretation.
 */

export type EmulatorOperation = AgentOperation | 'unknown';

export type InjectedFailure =
  /** `body` is JSON-encoded (default: the spec's failure body); `rawBody` is sent verbatim instead. */
  | { type: 'http'; status: number; body?: unknown; rawBody?: string; headers?: Record<string, string> }
  | { type: 'status-false'; message?: string }
  | { type: 'malformed' }
  | { type: 'hang' }
  | { type: 'reset' }
  | { type: 'delay'; ms: number };

/** 'wrapped' answers `data: { items: [...] }`; 'single' answers one record (page size 1 when paging). */
export type ListShape = 'array' | 'single' | 'wrapped';
export type CreatedAtFormat = 'iso' | 'epoch-seconds' | 'utc-without-offset';

export interface RecordedRequest {
  id: number;
  operation: EmulatorOperation;
  method: string;
  /** Raw request target, query included. */
  path: string;
  agentId?: string;
  sessionId?: string;
  prompt?: string;
  /** Raw request body text. */
  body: string;
  headers: http.IncomingHttpHeaders;
  startedAt: number;
  /** Null until answered; stays null for hung, reset or abandoned requests. */
  durationMs: number | null;
  status: number | null;
  injected?: InjectedFailure['type'];
}

export interface TrafficEvent {
  phase: 'start' | 'end';
  request: RecordedRequest;
}

export interface ReplyRequest {
  agentId: string;
  sessionId: string;
  prompt: string;
  turn: number;
}

export type ReplyFn = (req: ReplyRequest) => string | Promise<string>;

export interface EmulatedSession {
  /** The id create returns; this emulator reads the spec's list `uuid` as the same value. */
  sessionId: string;
  uuid: string;
  sessionName: string;
  createdAt: string;
  turns: number;
}

export interface AgentServiceEmulatorOptions {
  apiKey?: string;
  port?: number;
  host?: string;
  latencyMs?: number;
  /** Per-operation latency, overriding `latencyMs`. */
  latency?: Partial<Record<AgentOperation, number>>;
  /** Known agents; when omitted any agent id is accepted. */
  agents?: string[];
  listShape?: ListShape;
  /** When set, list pages are served with `?page=N` and `page` / `has_more` hints. */
  pageSize?: number;
}

const BASE_PATH = '/v1';
const MAX_BODY_BYTES = 1024 * 1024;

const defaultReply: ReplyFn = ({ sessionId, turn, prompt }) => `echo[${sessionId}#${turn}]: ${prompt}`;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

interface Route {
  operation: EmulatorOperation;
  agentId?: string;
  sessionId?: string;
}

function route(method: string, pathname: string): Route | 'bad-path' {
  if (!pathname.startsWith(`${BASE_PATH}/`)) return { operation: 'unknown' };
  let parts: string[];
  try {
    parts = pathname
      .slice(BASE_PATH.length + 1)
      .split('/')
      .map(decodeURIComponent);
  } catch {
    return 'bad-path';
  }
  const [resource, agentId, sessionId, ...rest] = parts;
  if (!agentId || rest.length > 0) return { operation: 'unknown' };
  if (resource === 'chat' && sessionId === undefined && method === 'POST') {
    return { operation: 'sendMessage', agentId };
  }
  if (resource === 'session' && sessionId === undefined) {
    if (method === 'GET') return { operation: 'listSessions', agentId };
    if (method === 'POST') return { operation: 'createSession', agentId };
  }
  if (resource === 'session' && sessionId && method === 'DELETE') {
    return { operation: 'deleteSession', agentId, sessionId };
  }
  return { operation: 'unknown' };
}

export class AgentServiceEmulator {
  readonly apiKey: string;
  private readonly host: string;
  private readonly server: http.Server;
  private readonly options: AgentServiceEmulatorOptions;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly listeners = new Set<(event: TrafficEvent) => void>();
  private port = 0;
  private listening = false;
  private stopped = false;

  private sessions = new Map<string, Map<string, EmulatedSession>>();
  private recorded: RecordedRequest[] = [];
  private failures = new Map<AgentOperation, { failure: InjectedFailure; remaining: number }[]>();
  private replyFn: ReplyFn = defaultReply;
  /** Prompts whose answers wait for a test to release them (holdAnswerTo). */
  private held = new Map<string, Promise<void>>();
  /** Set while new sessions wait for a test to release them (holdSessionCreation). */
  private creationHeld: Promise<void> | undefined;
  /** Every hold not yet released, so none outlives its test (releaseHolds). */
  private releases = new Set<() => void>();
  private latencyMs: number;
  private latency: Partial<Record<AgentOperation, number>>;
  private listShape: ListShape;
  private createdAtFormat: CreatedAtFormat = 'iso';
  private pageSize: number | undefined;
  private inFlightBySession = new Map<string, number>();
  private maxBySession = new Map<string, number>();
  private inFlight = 0;
  private maxInFlightSeen = 0;
  // Never reset, so session ids stay unique for the emulator's lifetime.
  private sessionSeq = 0;
  private requestSeq = 0;

  private constructor(options: AgentServiceEmulatorOptions) {
    this.options = options;
    this.apiKey = options.apiKey ?? 'test-agent-key';
    this.host = options.host ?? '127.0.0.1';
    this.port = options.port ?? 0;
    this.latencyMs = options.latencyMs ?? 0;
    this.latency = { ...options.latency };
    this.listShape = options.listShape ?? 'array';
    this.pageSize = options.pageSize;
    this.server = http.createServer((req, res) => {
      void this.handle(req, res);
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(options: AgentServiceEmulatorOptions = {}): Promise<AgentServiceEmulator> {
    const emulator = new AgentServiceEmulator(options);
    await emulator.up();
    return emulator;
  }

  get baseUrl(): string {
    const host = this.host === '0.0.0.0' || this.host === '::' ? '127.0.0.1' : this.host;
    return `http://${host.includes(':') ? `[${host}]` : host}:${this.port}${BASE_PATH}`;
  }

  get requests(): readonly RecordedRequest[] {
    return this.recorded;
  }

  requestsFor(operation: EmulatorOperation): RecordedRequest[] {
    return this.recorded.filter((r) => r.operation === operation);
  }

  /** Highest number of sendMessage calls seen in flight at once for one session (or any session). */
  maxConcurrentSends(sessionId?: string): number {
    if (sessionId !== undefined) return this.maxBySession.get(sessionId) ?? 0;
    return Math.max(0, ...this.maxBySession.values());
  }

  /** Highest number of requests of any kind in flight at once. */
  get maxInFlight(): number {
    return this.maxInFlightSeen;
  }

  sessionsOf(agentId: string): EmulatedSession[] {
    return [...(this.sessions.get(agentId)?.values() ?? [])].map((s) => ({ ...s }));
  }

  /** Seeds a session without HTTP, for tests that need one before the client exists. */
  addSession(agentId: string): string {
    return this.createSessionRecord(agentId).uuid;
  }

  setReplyFn(fn: ReplyFn): void {
    this.replyFn = fn;
  }

  /**
   * The agent answers `prompt` (exactly the prompt it receives) no sooner than the returned function is
   * called: a test that must act while an answer is in progress says when it is done, however slow the machine.
   */
  holdAnswerTo(prompt: string): () => void {
    const { promise, release } = this.hold(() => {
      if (this.held.get(prompt) === promise) this.held.delete(prompt);
    });
    this.held.set(prompt, promise);
    return release;
  }

  /**
   * Every new session (in any thread, a replacement too) is made no sooner than the returned function is
   * called: a test that must act while a prompt is still being prepared says when that is over.
   */
  holdSessionCreation(): () => void {
    const { promise, release } = this.hold(() => {
      if (this.creationHeld === promise) this.creationHeld = undefined;
    });
    this.creationHeld = promise;
    return release;
  }

  /** Releases every hold, so a test that failed before releasing its own leaves none to the next. */
  releaseHolds(): void {
    for (const release of [...this.releases]) release();
  }

  private hold(forget: () => void): { promise: Promise<void>; release: () => void } {
    let resolve = () => {};
    const promise = new Promise<void>((done) => {
      resolve = done;
    });
    const release = () => {
      forget();
      this.releases.delete(release);
      resolve();
    };
    this.releases.add(release);
    return { promise, release };
  }

  setLatency(ms: number, operation?: AgentOperation): void {
    if (operation) this.latency[operation] = ms;
    else this.latencyMs = ms;
  }

  setListShape(shape: ListShape, pageSize?: number): void {
    this.listShape = shape;
    this.pageSize = pageSize;
  }

  /**
   * How a listed session's `created_at` is written: the API does not show its format, so a service may well
   * give seconds since the epoch (a number) instead of an ISO date, or a UTC time without its offset
   * (`2026-11-28 08:32:11`, as many databases print a timestamp).
   */
  setCreatedAtFormat(format: CreatedAtFormat): void {
    this.createdAtFormat = format;
  }

  injectFailure(operation: AgentOperation, failure: InjectedFailure, times = 1): void {
    const queue = this.failures.get(operation) ?? [];
    queue.push({ failure, remaining: times });
    this.failures.set(operation, queue);
  }

  clearFailures(): void {
    this.failures.clear();
  }

  /** Subscribes to traffic (for demo UIs); returns an unsubscribe function. */
  onRequest(listener: (event: TrafficEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Clears sessions, recordings, failures and statistics; restores start options. */
  reset(): void {
    this.sessions = new Map();
    this.recorded = [];
    this.failures = new Map();
    this.replyFn = defaultReply;
    this.releaseHolds();
    this.latencyMs = this.options.latencyMs ?? 0;
    this.latency = { ...this.options.latency };
    this.listShape = this.options.listShape ?? 'array';
    this.pageSize = this.options.pageSize;
    this.createdAtFormat = 'iso';
    this.inFlightBySession = new Map();
    this.maxBySession = new Map();
    this.inFlight = 0;
    this.maxInFlightSeen = 0;
  }

  /** Stops listening on the port (clients get connection refused); state is kept for `up()`. */
  async down(): Promise<void> {
    if (!this.listening) return;
    this.listening = false;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  async up(): Promise<void> {
    if (this.listening) return;
    if (this.stopped) throw new Error('emulator was stopped');
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.server.once('error', onError);
      this.server.listen(this.port, this.host, () => {
        this.server.off('error', onError);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
    this.listening = true;
  }

  /** Closes everything, including hung requests and idle keep-alive sockets, so test runs end promptly. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.releaseHolds();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await this.down();
  }

  private sleep(ms: number): Promise<void> {
    // Timers are tracked so stop() can drop them; the pending handler is then simply abandoned.
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.add(timer);
    });
  }

  private emit(event: TrafficEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // Observers must not affect the emulated service.
      }
    }
  }

  private takeFailure(operation: EmulatorOperation): InjectedFailure | undefined {
    if (operation === 'unknown') return undefined;
    const queue = this.failures.get(operation);
    const head = queue?.[0];
    if (!queue || !head) return undefined;
    head.remaining -= 1;
    if (head.remaining <= 0) queue.shift();
    return head.failure;
  }

  private createSessionRecord(agentId: string): EmulatedSession {
    const seq = ++this.sessionSeq;
    const session: EmulatedSession = {
      sessionId: `s-${seq}`,
      uuid: `s-${seq}`,
      sessionName: `Session ${seq}`,
      createdAt: new Date().toISOString(),
      turns: 0,
    };
    const perAgent = this.sessions.get(agentId) ?? new Map<string, EmulatedSession>();
    perAgent.set(session.uuid, session);
    this.sessions.set(agentId, perAgent);
    return session;
  }

  private async readBody(req: http.IncomingMessage): Promise<string | undefined> {
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of req) {
        const buf = chunk as Buffer;
        size += buf.length;
        if (size > MAX_BODY_BYTES) return undefined;
        chunks.push(buf);
      }
    } catch {
      return undefined;
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const started = performance.now();
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://emulator');
    const routed = route(method, url.pathname);
    const bodyText = await this.readBody(req);
    const parsed = parseJson(bodyText);
    const target = routed === 'bad-path' ? { operation: 'unknown' as const } : routed;

    const rec: RecordedRequest = {
      id: ++this.requestSeq,
      operation: target.operation,
      method,
      path: req.url ?? '/',
      body: bodyText ?? '',
      headers: req.headers,
      startedAt: Date.now(),
      durationMs: null,
      status: null,
    };
    if (target.agentId !== undefined) rec.agentId = target.agentId;
    if (target.sessionId !== undefined) rec.sessionId = target.sessionId;
    if (target.operation === 'sendMessage' && isObject(parsed)) {
      if (typeof parsed.session_id === 'string') rec.sessionId = parsed.session_id;
      if (typeof parsed.prompt === 'string') rec.prompt = parsed.prompt;
    }
    this.recorded.push(rec);
    this.emit({ phase: 'start', request: rec });

    const sendKey = rec.operation === 'sendMessage' ? rec.sessionId : undefined;
    this.inFlight += 1;
    this.maxInFlightSeen = Math.max(this.maxInFlightSeen, this.inFlight);
    if (sendKey !== undefined) {
      const now = (this.inFlightBySession.get(sendKey) ?? 0) + 1;
      this.inFlightBySession.set(sendKey, now);
      this.maxBySession.set(sendKey, Math.max(this.maxBySession.get(sendKey) ?? 0, now));
    }
    let finished = false;
    // Runs before the response is written, so a client's follow-up request can never overlap in the stats.
    const finish = (status: number | null) => {
      if (finished) return;
      finished = true;
      rec.status = status;
      rec.durationMs = performance.now() - started;
      this.inFlight -= 1;
      if (sendKey !== undefined)
        this.inFlightBySession.set(sendKey, (this.inFlightBySession.get(sendKey) ?? 1) - 1);
      this.emit({ phase: 'end', request: rec });
    };
    res.on('close', () => finish(null));

    const send = (status: number, payload: unknown, headers: Record<string, string> = {}, raw?: string) => {
      finish(status);
      if (res.destroyed || res.writableEnded) return;
      const text = raw ?? JSON.stringify(payload);
      const type = raw === undefined ? 'application/json' : 'text/html; charset=utf-8';
      res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(text), ...headers });
      res.end(text);
    };
    const fail = (status: number, message: string) => send(status, { status: false, message });

    const latency =
      target.operation === 'unknown' ? this.latencyMs : (this.latency[target.operation] ?? this.latencyMs);
    if (latency > 0) await this.sleep(latency);

    const failure = this.takeFailure(target.operation);
    if (failure) {
      rec.injected = failure.type;
      switch (failure.type) {
        case 'http':
          return send(
            failure.status,
            failure.body ?? { status: false, message: http.STATUS_CODES[failure.status] ?? 'Error' },
            failure.headers,
            failure.rawBody,
          );
        case 'status-false':
          return fail(200, failure.message ?? 'Request failed');
        case 'malformed':
          return send(200, undefined, {}, '<html><body><h1>502 Bad Gateway</h1><p>upstream hiccup');
        case 'hang':
          return; // Answered never; stop() or a client timeout closes the socket.
        case 'reset':
          req.socket.destroy();
          return;
        case 'delay':
          await this.sleep(failure.ms);
          break;
      }
    }

    if (routed === 'bad-path') return fail(400, 'Malformed path');
    if (target.operation === 'unknown') return fail(404, 'Not found');
    if (bodyText === undefined) return fail(413, 'Body too large');
    if (req.headers.private_key !== this.apiKey) return fail(401, 'Invalid API key');
    const agentId = target.agentId ?? '';
    if (this.options.agents && !this.options.agents.includes(agentId)) return fail(404, 'Agent not found');

    switch (target.operation) {
      case 'createSession': {
        await this.creationHeld;
        const session = this.createSessionRecord(agentId);
        return send(200, { status: true, message: 'Session created', data: { session_id: session.uuid } });
      }
      case 'listSessions':
        return send(200, this.listBody(agentId, url.searchParams.get('page')));
      case 'deleteSession': {
        const perAgent = this.sessions.get(agentId);
        if (!target.sessionId || !perAgent?.delete(target.sessionId)) return fail(404, 'Session not found');
        return send(200, { status: true, message: 'Session deleted' });
      }
      case 'sendMessage': {
        if (!isObject(parsed)) return fail(400, 'Invalid JSON body');
        if (typeof parsed.prompt !== 'string') return fail(400, 'prompt is required');
        if (typeof parsed.session_id !== 'string') return fail(400, 'session_id is required');
        const session = this.sessions.get(agentId)?.get(parsed.session_id);
        if (!session) return fail(404, 'Session not found');
        session.turns += 1;
        let text: string;
        try {
          await this.held.get(parsed.prompt);
          text = await this.replyFn({
            agentId,
            sessionId: session.uuid,
            prompt: parsed.prompt,
            turn: session.turns,
          });
        } catch {
          return fail(500, 'Agent failed to answer');
        }
        return send(200, { status: true, data: { status: 200, message: 'ok', data: text } });
      }
    }
  }

  private listBody(agentId: string, pageParam: string | null): Record<string, unknown> {
    const records = this.sessionsOf(agentId).map((s) => ({
      uuid: s.uuid,
      session_name: s.sessionName,
      created_at: createdAtAs(s.createdAt, this.createdAtFormat),
    }));
    const paging = this.pageSize !== undefined;
    const size = this.listShape === 'single' ? 1 : (this.pageSize ?? Math.max(1, records.length));
    const page = paging ? Math.max(1, Number.parseInt(pageParam ?? '1', 10) || 1) : 1;
    const slice = records.slice((page - 1) * size, page * size);
    const hints = paging ? { page, has_more: page * size < records.length } : {};
    switch (this.listShape) {
      case 'array':
        return { status: true, data: slice, ...hints };
      case 'single':
        return { status: true, data: slice[0] ?? null, ...hints };
      case 'wrapped':
        return { status: true, data: { items: slice, ...hints } };
    }
  }
}

function parseJson(text: string | undefined): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A creation time (ISO, UTC) as the service writes it in a listing. */
function createdAtAs(iso: string, format: CreatedAtFormat): string | number {
  if (format === 'epoch-seconds') return Math.floor(Date.parse(iso) / 1000);
  if (format === 'utc-without-offset') return new Date(iso).toISOString().replace('T', ' ').slice(0, 19);
  return iso;
}
