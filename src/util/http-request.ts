import type { IncomingHttpHeaders } from 'node:http';
import { type Dispatcher, Pool } from 'undici';

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
  /** Lower-cased names; a repeated header's values as an array. */
  headers: IncomingHttpHeaders;
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

/** Longest an idle keep-alive connection is kept when the server announces no `Keep-Alive: timeout`. */
const IDLE_CONNECTION_MS = 30_000;
/**
 * Taken off the server's announced keep-alive, so that a connection it is closing is never reused (undici's
 * idle timers fire up to about half a second late, so one second would be too thin).
 */
const KEEP_ALIVE_MARGIN_MS = 2_000;

/**
 * Keep-alive connection pools, one per origin, for one outbound client. Requests never follow redirects
 * and are never retried here: a prompt must not reach the agent twice.
 */
export class HttpPools {
  private readonly pools = new Map<string, Pool>();
  private closed = false;

  constructor(
    /** Connections per origin; requests beyond wait for one to be free. */
    private readonly connections: number,
  ) {}

  of(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      if (this.closed) throw new Error('connection pools closed');
      pool = new Pool(origin, {
        connections: this.connections,
        pipelining: 1,
        keepAliveTimeout: IDLE_CONNECTION_MS,
        keepAliveTimeoutThreshold: KEEP_ALIVE_MARGIN_MS,
        // Each request's own deadline bounds the exchange; undici's 300 s defaults would cut a longer one
        // (AGENT_TIMEOUT_MS may be up to an hour) short with a different error.
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /** Drops every connection at once; requests still running fail. */
  destroy(): void {
    this.closed = true;
    for (const pool of this.pools.values()) void pool.destroy().catch(() => {});
    this.pools.clear();
  }
}

/**
 * One request over a keep-alive pool, answered as a buffered response: all our HTTP clients need for small
 * JSON exchanges. undici's dispatcher costs about half the CPU per call of `node:http`, and general-purpose
 * clients (axios, `fetch`) two to three times as much (see the README's benchmark section); under load
 * outbound calls are the bot's main cost.
 */
export function sendHttpRequest(pools: HttpPools, spec: HttpRequest): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    const { signal } = spec;
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const url = new URL(spec.url);
    let pool: Pool;
    try {
      pool = pools.of(url.origin);
    } catch (error) {
      reject(error);
      return;
    }
    let deadline: NodeJS.Timeout | undefined;
    let settled = false;
    /**
     * Set once the request has a connection; before that, an abort is remembered in `abortWith`. (undici
     * then drops the request unsent, closing the connection it was given: it has no way to take a request
     * back out of its queue.)
     */
    let controller: Dispatcher.DispatchController | undefined;
    let abortWith: Error | undefined;
    const cancel = (error: Error) => {
      if (controller) controller.abort(error);
      else abortWith = error;
    };
    const finish = (error: unknown, response?: HttpResponse) => {
      if (settled) return;
      settled = true;
      if (deadline) clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
      if (response) resolve(response);
      else reject(error);
    };
    function onAbort(): void {
      // Settled first: cancelling reports its own error to the handler at once.
      finish(signal?.reason);
      cancel(new Error('aborted'));
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    if (spec.deadlineMs !== undefined && spec.deadlineMs > 0) {
      const ms = spec.deadlineMs;
      // One timer for the whole exchange: an idle timer would let a slow drip run forever.
      deadline = setTimeout(() => {
        const error = new HttpRequestError(`no complete response within ${ms} ms`, 'ETIMEDOUT');
        finish(error);
        cancel(error);
      }, ms);
    }

    let status = 0;
    let statusText = '';
    let headers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    let size = 0;
    pool.dispatch(
      {
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: spec.method as Dispatcher.HttpMethod,
        headers: spec.headers,
        body: spec.body,
      },
      {
        onRequestStart(started) {
          controller = started;
          if (abortWith) started.abort(abortWith);
        },
        onResponseStart(_controller, statusCode, responseHeaders, statusMessage) {
          status = statusCode;
          statusText = statusMessage ?? '';
          headers = responseHeaders;
        },
        onResponseData(current, chunk) {
          size += chunk.byteLength;
          if (spec.maxBodyBytes !== undefined && size > spec.maxBodyBytes) {
            const error = new HttpRequestError('response body too large', 'ERR_BODY_TOO_LARGE');
            current.abort(error);
            finish(error);
            return;
          }
          chunks.push(chunk);
        },
        onResponseEnd() {
          const body = chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks);
          finish(undefined, { status, statusText, headers, body });
        },
        onResponseError(_controller, error) {
          finish(error);
        },
      },
    );
  });
}
