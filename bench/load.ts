import http from 'node:http';
import { signSlackRequest } from '../test/helpers/slack-events.js';

/** Keep-alive connections for the load generator, as Slack's own delivery reuses connections. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });

export interface Delivery {
  ackMs: number;
  status: number;
}

/** POSTs a signed event; resolves with the acknowledgement latency (status 0: the connection failed). */
export function deliver(url: string, secret: string, body: unknown, retryNum?: number): Promise<Delivery> {
  const raw = JSON.stringify(body);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(raw)),
    ...signSlackRequest(secret, raw),
  };
  if (retryNum !== undefined) {
    headers['x-slack-retry-num'] = String(retryNum);
    headers['x-slack-retry-reason'] = 'http_timeout';
  }
  const started = performance.now();
  return new Promise((resolve) => {
    const request = http.request(url, { method: 'POST', headers, agent }, (response) => {
      response.resume();
      response.on('end', () =>
        resolve({ ackMs: performance.now() - started, status: response.statusCode ?? 0 }),
      );
    });
    request.on('error', () => resolve({ ackMs: performance.now() - started, status: 0 }));
    request.end(raw);
  });
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
