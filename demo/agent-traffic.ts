import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { isLocalRequest } from './local-only.js';

export type TrafficOperation = 'createSession' | 'sendMessage' | 'listSessions' | 'deleteSession' | 'other';

/** One call the bot made to the agent service, as the demo's traffic panel shows it. */
export interface TrafficEntry {
  id: string;
  at: number;
  operation: TrafficOperation;
  method: string;
  path: string;
  state: 'pending' | 'done';
  status?: number;
  durationMs?: number;
  sessionId?: string;
  ok?: boolean;
  /** A short human note: the prompt's start, the reply's start, or the service's failure message. */
  summary?: string;
}

export type TrafficListener = (entry: TrafficEntry) => void;

const SUMMARY_CHARS = 80;
const MAX_BODY_BYTES = 10_000_000;
const UPSTREAM_TIMEOUT_MS = 15 * 60_000;

/**
 * A recording reverse proxy in front of the agent service (the emulator or a real one): the bot is pointed
 * at it, so the demo sees every call whichever service answers. Only the method, path, status, timing and
 * a short excerpt of the bodies are recorded; headers (and so the `private_key`) are passed on, never kept.
 */
export class AgentTrafficProxy {
  private readonly listeners = new Set<TrafficListener>();
  readonly entries: TrafficEntry[] = [];

  private constructor(
    private readonly server: Server,
    private readonly target: URL,
  ) {}

  /** `targetBaseUrl` includes the API version path, like AGENT_BASE_URL (`http://host/v1`). */
  static async start(targetBaseUrl: string, port = 0): Promise<AgentTrafficProxy> {
    const target = new URL(targetBaseUrl.endsWith('/') ? targetBaseUrl : `${targetBaseUrl}/`);
    let proxy: AgentTrafficProxy | undefined;
    const server = createServer((req, res) => {
      // Only the bot calls it; a page on another site (or a DNS-rebound name) does not get through.
      if (!isLocalRequest(req)) {
        res.writeHead(403, { 'content-type': 'text/plain' }).end('Forbidden');
        return;
      }
      proxy?.forward(req).then(
        ({ status, headers, body }) => res.writeHead(status, headers).end(body),
        (error: unknown) => {
          res.writeHead(502, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ status: false, message: `demo proxy: ${messageOf(error)}` }));
        },
      );
    });
    proxy = new AgentTrafficProxy(server, target);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  /** The base URL to give the bot as AGENT_BASE_URL (same path as the target's). */
  get baseUrl(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}${this.target.pathname.replace(/\/$/, '')}`;
  }

  onEntry(listener: TrafficListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private publish(entry: TrafficEntry): void {
    const index = this.entries.findIndex((known) => known.id === entry.id);
    if (index >= 0) this.entries[index] = entry;
    else this.entries.push(entry);
    for (const listener of this.listeners) listener({ ...entry });
  }

  private async forward(
    req: IncomingMessage,
  ): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    const method = req.method ?? 'GET';
    const incoming = new URL(req.url ?? '/', 'http://proxy');
    const relative = incoming.pathname.slice(this.target.pathname.length - 1);
    const requestBody = await readBody(req);
    const { operation, sessionId: pathSession } = classify(method, relative);
    const sentJson = parseJson(requestBody);
    const entry: TrafficEntry = {
      id: randomUUID(),
      at: Date.now(),
      operation,
      method,
      path: relative,
      state: 'pending',
      sessionId: pathSession ?? stringField(sentJson, 'session_id'),
      summary: operation === 'sendMessage' ? excerpt(stringField(sentJson, 'prompt')) : undefined,
    };
    this.publish(entry);
    const started = performance.now();
    try {
      const answer = await send(
        new URL(this.target.pathname + relative.slice(1) + incoming.search, this.target),
        {
          method,
          headers: passThroughHeaders(req),
          body: requestBody,
        },
      );
      const json = parseJson(answer.body);
      const ok = answer.status < 400 && isRecord(json) && json.status !== false;
      const data = isRecord(json) ? json.data : undefined;
      this.publish({
        ...entry,
        state: 'done',
        status: answer.status,
        durationMs: Math.round(performance.now() - started),
        ok,
        sessionId: entry.sessionId ?? stringField(data, 'session_id'),
        summary: ok
          ? operation === 'sendMessage'
            ? excerpt(stringField(data, 'data'))
            : entry.summary
          : (excerpt(stringField(json, 'message')) ?? `HTTP ${answer.status}`),
      });
      return answer;
    } catch (error) {
      this.publish({
        ...entry,
        state: 'done',
        durationMs: Math.round(performance.now() - started),
        ok: false,
        summary: messageOf(error),
      });
      throw error;
    }
  }
}

function classify(method: string, path: string): { operation: TrafficOperation; sessionId?: string } {
  const [resource, agentId, sessionId, ...rest] = path.split('/').filter(Boolean);
  if (!agentId || rest.length > 0) return { operation: 'other' };
  if (resource === 'chat' && method === 'POST' && !sessionId) return { operation: 'sendMessage' };
  if (resource === 'session' && !sessionId && method === 'GET') return { operation: 'listSessions' };
  if (resource === 'session' && !sessionId && method === 'POST') return { operation: 'createSession' };
  if (resource === 'session' && sessionId && method === 'DELETE')
    return { operation: 'deleteSession', sessionId: safeDecode(sessionId) };
  return { operation: 'other' };
}

/** Hop-by-hop headers stay with their hop; everything else (content type, the key) goes on unchanged. */
function passThroughHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    // accept-encoding too: the answer is read (for the panel) and passed on as plain bytes.
    if (
      value === undefined ||
      ['host', 'connection', 'keep-alive', 'transfer-encoding', 'accept-encoding', 'content-length'].includes(
        name,
      )
    )
      continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function send(
  url: URL,
  options: { method: string; headers: Record<string, string>; body: Buffer },
): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  const transport = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const headers = { ...options.headers, 'content-length': String(options.body.length) };
    // Longer than any agent timeout the bot would use, so the bot's own timeout is what users meet.
    const req = transport(url, { method: options.method, headers, timeout: UPSTREAM_TIMEOUT_MS }, (res) => {
      readBody(res).then((body) => {
        const headers: Record<string, string> = {};
        const type = res.headers['content-type'];
        if (type) headers['content-type'] = type;
        resolve({ status: res.statusCode ?? 502, headers, body });
      }, reject);
    });
    req.on('timeout', () => req.destroy(new Error('the agent service did not answer in time')));
    req.on('error', reject);
    req.end(options.body.length > 0 ? options.body : undefined);
  });
}

async function readBody(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) throw new Error('body too large for the demo proxy');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

function parseJson(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringField(value: unknown, key: string): string | undefined {
  if (!isRecord(value)) return undefined;
  const field = value[key];
  return typeof field === 'string' ? field : undefined;
}

function excerpt(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > SUMMARY_CHARS ? `${oneLine.slice(0, SUMMARY_CHARS - 1)}…` : oneLine;
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
