import http from 'node:http';
import { signSlackRequest } from '../test/helpers/slack-events.js';

/** Keep-alive connections for the load generator, as Slack's own delivery reuses connections. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });

/** A signed event ready to send: built before its scenario starts, so a burst is not slowed by building it. */
export interface PreparedEvent {
  /** The unique token in the message text, which the reply repeats. */
  token: string;
  /** The Events API body, as sent (`raw`). */
  body: unknown;
  raw: string;
  headers: Record<string, string>;
}

export function prepareEvent(secret: string, token: string, body: unknown): PreparedEvent {
  const raw = JSON.stringify(body);
  return {
    token,
    body,
    raw,
    headers: {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(raw)),
      ...signSlackRequest(secret, raw),
    },
  };
}

export interface Delivery {
  ackMs: number;
  /** 0: the connection failed, or no answer within Slack's 3 s. */
  status: number;
}

/** Slack counts a delivery not answered within 3 s as failed, and delivers the event again. */
const SLACK_ACK_TIMEOUT_MS = 3_000;

/** POSTs a prepared event; resolves with the acknowledgement latency. */
export function deliver(url: string, event: PreparedEvent, retryNum?: number): Promise<Delivery> {
  const headers =
    retryNum === undefined
      ? event.headers
      : { ...event.headers, 'x-slack-retry-num': String(retryNum), 'x-slack-retry-reason': 'http_timeout' };
  const started = performance.now();
  return new Promise((resolve) => {
    const done = (status: number) => {
      clearTimeout(timer);
      resolve({ ackMs: performance.now() - started, status });
    };
    const request = http.request(url, { method: 'POST', headers, agent }, (response) => {
      response.resume();
      response.on('end', () => done(response.statusCode ?? 0));
    });
    // Slack gives up on the connection; what the app does with the event after that is its own business.
    const timer = setTimeout(() => request.destroy(), SLACK_ACK_TIMEOUT_MS);
    request.on('error', () => done(0));
    request.end(event.raw);
  });
}

export interface Offered {
  /** Token → when its event was first sent. */
  sentAt: Map<string, number>;
  /** Every delivery's acknowledgement time, retries and redeliveries included. */
  acks: number[];
  /** Token → its first delivery's acknowledgement time; Infinity when that delivery got no 2xx. */
  firstAck: Map<string, number>;
  deliveries: number;
  /** Deliveries answered with no 2xx (or a broken connection); each is delivered again, as Slack does. */
  unacknowledged: number;
  /** Tokens of the events one delivery of which was acknowledged: the process took them on. */
  acknowledged: Set<string>;
}

/** Slack delivers an unacknowledged event again up to 3 times (at once, after 1 and 5 minutes: here sooner). */
const REDELIVERIES = 3;
const REDELIVERY_DELAY_MS = 300;

/**
 * Sends events at `rate` a second (Infinity: all at once), delivers every `retryEvery`-th a second time as a
 * Slack retry (0: none), and redelivers what was not acknowledged. Resolves once every delivery is answered.
 */
export async function offer(
  url: string,
  events: readonly PreparedEvent[],
  rate: number,
  retryEvery: number,
  /** Called as each event first goes out: Slack has a message from when it is sent, not before. */
  onFirstSend: (event: PreparedEvent) => void = () => {},
): Promise<Offered> {
  const result: Offered = {
    sentAt: new Map(),
    acks: [],
    firstAck: new Map(),
    deliveries: 0,
    unacknowledged: 0,
    acknowledged: new Set(),
  };
  const inflight: Promise<void>[] = [];
  const send = (event: PreparedEvent, retryNum?: number): Promise<void> => {
    result.deliveries++;
    return deliver(url, event, retryNum).then(({ ackMs, status }) => {
      result.acks.push(ackMs);
      const acknowledged = status >= 200 && status < 300;
      if (retryNum === undefined)
        result.firstAck.set(event.token, acknowledged ? ackMs : Number.POSITIVE_INFINITY);
      if (acknowledged) {
        result.acknowledged.add(event.token);
        return;
      }
      result.unacknowledged++;
      const attempt = (retryNum ?? 0) + 1;
      if (attempt <= REDELIVERIES) return sleep(REDELIVERY_DELAY_MS).then(() => send(event, attempt));
    });
  };
  const started = performance.now();
  for (const [i, event] of events.entries()) {
    if (Number.isFinite(rate)) {
      const wait = started + (i * 1000) / rate - performance.now();
      if (wait > 1) await sleep(wait);
    }
    onFirstSend(event);
    result.sentAt.set(event.token, performance.now());
    inflight.push(send(event));
    if (retryEvery > 0 && i % retryEvery === retryEvery - 1) {
      inflight.push(sleep(REDELIVERY_DELAY_MS).then(() => send(event, 1)));
    }
  }
  await Promise.all(inflight);
  return result;
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
