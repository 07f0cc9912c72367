import type { IncomingHttpHeaders } from 'node:http';
import { HttpPools, sendHttpRequest } from '../util/http-request.js';

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
 * The transport under Bolt's WebClient: `sendHttpRequest` over undici connection pools. Node's
 * built-in `fetch` (undici, web streams, an abort signal per call) cost about a sixth of the bot's CPU
 * under load for what is a small form POST and a small JSON answer. Anything else (file uploads with
 * streamed or multipart bodies) still goes through `fetch`.
 */
export function webApiTransport(options: WebApiTransportOptions): WebApiFetch {
  const pools = new HttpPools(options.maxSockets);
  return async (input, init = {}) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const body = init.body;
    const simple =
      (typeof body === 'string' || body === undefined || body === null) && !(input instanceof Request);
    if (!simple || !/^https?:/.test(url)) return fetch(input, init);
    const response = await sendHttpRequest(pools, {
      method: init.method ?? 'GET',
      url,
      headers: headerRecord(init.headers),
      body: typeof body === 'string' ? body : undefined,
      signal: init.signal ?? undefined,
      deadlineMs: options.timeoutMs,
    });
    const location = response.headers.location;
    if (init.redirect === 'error' && response.status >= 300 && response.status < 400 && location) {
      throw new TypeError(`redirect to ${location} refused`);
    }
    return new BufferedResponse(
      response.status,
      response.statusText,
      url,
      responseHeaders(response.headers),
      response.body,
    );
  };
}

/** Headers in any of fetch's forms as a plain record with lower-cased names. */
export function headerRecord(headers: RequestInit['headers']): Record<string, string> {
  const record: Record<string, string> = {};
  if (!headers) return record;
  if (headers instanceof Headers || Array.isArray(headers)) {
    for (const [name, value] of headers) record[name.toLowerCase()] = value;
    return record;
  }
  for (const [name, value] of Object.entries(headers)) record[name.toLowerCase()] = String(value);
  return record;
}

function responseHeaders(parsed: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(parsed)) {
    if (Array.isArray(value)) for (const each of value) headers.append(name, each);
    else if (value !== undefined) headers.append(name, value);
  }
  return headers;
}
