import { Pool } from 'undici';
import { signSlackRequest } from '../test/helpers/slack-events.js';

/** Keep-alive pools for the load generator, one per bot URL, as Slack's own delivery reuses connections. */
const pools = new Map<string, Pool>();

function poolFor(origin: string): Pool {
  let pool = pools.get(origin);
  if (!pool) {
    // The load generator shares the machine with the bot: undici's dispatcher costs it about half the CPU
    // of `node:http` per delivery, which leaves more of the two cores to what is measured.
    pool = new Pool(origin, { connections: 512, pipelining: 1 });
    pools.set(origin, pool);
  }
  return pool;
}

export interface Delivery {
  ackMs: number;
  status: number;
}

/** POSTs a signed event; resolves with the acknowledgement latency (status 0: the connection failed). */
export function deliver(url: string, secret: string, body: unknown, retryNum?: number): Promise<Delivery> {
  const raw = JSON.stringify(body);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...signSlackRequest(secret, raw),
  };
  if (retryNum !== undefined) {
    headers['x-slack-retry-num'] = String(retryNum);
    headers['x-slack-retry-reason'] = 'http_timeout';
  }
  const { origin, pathname } = new URL(url);
  const started = performance.now();
  return new Promise((resolve) => {
    let status = 0;
    poolFor(origin).dispatch(
      { origin, path: pathname, method: 'POST', headers, body: raw },
      {
        // Its presence is what tells undici this handler uses the current (non-deprecated) interface.
        onRequestStart() {},
        onResponseStart(_controller, statusCode) {
          status = statusCode;
        },
        onResponseEnd() {
          resolve({ ackMs: performance.now() - started, status });
        },
        onResponseError() {
          resolve({ ackMs: performance.now() - started, status: 0 });
        },
      },
    );
  });
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
