import http from 'node:http';
import https from 'node:https';
import { keepAliveAgents } from '../util/keep-alive-agents.js';

/**
 * What Slack's WebClient reads of a response (`WebClient.makeRequest` and `buildResult` in
 * @slack/web-api 8): status, headers, the body as text or bytes, and the URL.
 */
export interface WebApiResponse {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly url: string;
  readonly headers: Headers;
  text(): Promise<string>;
  arrayBuffer(): Promise<ArrayBuffer>;
  json(): Promise<unknown>;
}

export type WebApiFetch = (input: string | URL | Request, init?: RequestInit) => Promise<WebApiResponse>;

export interface WebApiTransportOptions {
  /** Sockets kept per Slack host; a burst of posts beyond this queues on the agent. */
  maxSockets: number;
  /** No response within this: the call fails (WebClient then retries it). 0: no limit. */
  timeoutMs: number;
}

/** A complete, buffered response: Slack's Web API answers are small JSON documents. */
class BufferedResponse implements WebApiResponse {
  readonly ok: boolean;
  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly url: string,
    readonly headers: Headers,
    private readonly body: Buffer,
  ) {
    this.ok = status >= 200 && status < 300;
  }
  async text(): Promise<string> {
    return this.body.toString('utf8');
  }
  async arrayBuffer(): Promise<ArrayBuffer> {
    const copy = new Uint8Array(this.body.byteLength);
    copy.set(this.body);
    return copy.buffer;
  }
  async json(): Promise<unknown> {
    return JSON.parse(this.body.toString('utf8'));
  }
}

/**
 * The transport under Bolt's WebClient: plain `node:http(s)` requests over a keep-alive pool. Node's
 * built-in `fetch` (undici, web streams, an abort signal per call) cost about a sixth of the bot's CPU
 * under load for what is a small form POST and a small JSON answer. Anything else (file uploads with
 * streamed or multipart bodies) still goes through `fetch`.
 */
export function webApiTransport(options: WebApiTransportOptions): WebApiFetch {
  const pools = keepAliveAgents(options.maxSockets);
  const agents = { 'http:': pools.http, 'https:': pools.https };
  return (input, init = {}) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const body = init.body;
    const simple =
      (typeof body === 'string' || body === undefined || body === null) && !(input instanceof Request);
    const protocol = url.startsWith('https:') ? 'https:' : url.startsWith('http:') ? 'http:' : undefined;
    if (!simple || !protocol) return fetch(input, init);
    return new Promise<WebApiResponse>((resolve, reject) => {
      const signal = init.signal ?? undefined;
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const headers = headerRecord(init.headers);
      if (typeof body === 'string') headers['content-length'] = String(Buffer.byteLength(body));
      const request = (protocol === 'https:' ? https : http).request(
        url,
        { method: init.method ?? 'GET', headers, agent: agents[protocol] },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', fail);
          response.on('end', () => {
            signal?.removeEventListener('abort', onAbort);
            const status = response.statusCode ?? 0;
            const location = response.headers.location;
            if (init.redirect === 'error' && status >= 300 && status < 400 && location) {
              reject(new TypeError(`redirect to ${location} refused`));
              return;
            }
            resolve(
              new BufferedResponse(
                status,
                response.statusMessage ?? '',
                url,
                responseHeaders(response.rawHeaders),
                chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks),
              ),
            );
          });
        },
      );
      function fail(error: unknown): void {
        signal?.removeEventListener('abort', onAbort);
        reject(error);
      }
      function onAbort(): void {
        request.destroy(signal?.reason instanceof Error ? signal.reason : new Error('request aborted'));
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      if (options.timeoutMs > 0) {
        request.setTimeout(options.timeoutMs, () =>
          request.destroy(new Error(`no response from Slack within ${options.timeoutMs} ms`)),
        );
      }
      request.on('error', fail);
      request.end(typeof body === 'string' ? body : undefined);
    });
  };
}

function headerRecord(headers: RequestInit['headers']): Record<string, string> {
  const record: Record<string, string> = {};
  if (!headers) return record;
  if (headers instanceof Headers || Array.isArray(headers)) {
    for (const [name, value] of headers) record[name.toLowerCase()] = value;
    return record;
  }
  for (const [name, value] of Object.entries(headers)) record[name.toLowerCase()] = String(value);
  return record;
}

function responseHeaders(raw: readonly string[]): Headers {
  const headers = new Headers();
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = raw[index];
    const value = raw[index + 1];
    if (name !== undefined && value !== undefined) headers.append(name, value);
  }
  return headers;
}
