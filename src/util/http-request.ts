import http from 'node:http';
import https from 'node:https';
import type { KeepAliveAgents } from './keep-alive-agents.js';

export interface HttpRequest {
  method: string;
  /** Absolute http(s) URL. */
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Aborting destroys the request; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** No whole response within this: the request is destroyed with an ETIMEDOUT error. 0: no limit. */
  deadlineMs?: number;
  /** A larger response body is cut off with an ERR_BODY_TOO_LARGE error. */
  maxBodyBytes?: number;
}

/** A complete, buffered response. */
export interface HttpResponse {
  status: number;
  statusText: string;
  /** Lower-cased names, as Node parses them. */
  headers: http.IncomingHttpHeaders;
  /** Names and values in arrival order, as received. */
  rawHeaders: string[];
  body: Buffer;
}

/** A failure with a Node-style `code`, so callers classify it like any socket error. */
export class HttpRequestError extends Error {
  constructor(
    message: string,
    readonly code: 'ETIMEDOUT' | 'ERR_BODY_TOO_LARGE',
  ) {
    super(message);
    this.name = 'HttpRequestError';
  }
}

/**
 * One request over a keep-alive pool, answered as a buffered response. This is all our HTTP clients need
 * for small JSON exchanges; general-purpose clients (axios, undici's fetch) cost two to three times the
 * CPU per call here (see the README's benchmark section), which under load is the bot's main cost.
 */
export function sendHttpRequest(agents: KeepAliveAgents, spec: HttpRequest): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    const { signal } = spec;
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const secure = spec.url.startsWith('https:');
    const headers =
      spec.body === undefined
        ? spec.headers
        : { ...spec.headers, 'content-length': String(Buffer.byteLength(spec.body)) };
    let deadline: NodeJS.Timeout | undefined;
    let settled = false;
    const finish = (error: unknown, response?: HttpResponse) => {
      if (settled) return;
      settled = true;
      if (deadline) clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
      if (response) resolve(response);
      else reject(error);
    };
    const request = (secure ? https : http).request(
      spec.url,
      { method: spec.method, headers, agent: secure ? agents.https : agents.http },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.byteLength;
          if (spec.maxBodyBytes !== undefined && size > spec.maxBodyBytes) {
            const error = new HttpRequestError('response body too large', 'ERR_BODY_TOO_LARGE');
            request.destroy(error);
            finish(error);
            return;
          }
          chunks.push(chunk);
        });
        response.on('error', finish);
        response.on('end', () =>
          finish(undefined, {
            status: response.statusCode ?? 0,
            statusText: response.statusMessage ?? '',
            headers: response.headers,
            rawHeaders: response.rawHeaders,
            body: chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks),
          }),
        );
      },
    );
    function onAbort(): void {
      request.destroy();
      finish(signal?.reason);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    if (spec.deadlineMs !== undefined && spec.deadlineMs > 0) {
      const ms = spec.deadlineMs;
      // One timer for the whole exchange: a socket idle timer would let a slow drip run forever.
      deadline = setTimeout(() => {
        const error = new HttpRequestError(`no complete response within ${ms} ms`, 'ETIMEDOUT');
        request.destroy(error);
        finish(error);
      }, ms);
    }
    request.on('error', finish);
    request.end(spec.body);
  });
}
