import type { IncomingMessage, ServerResponse } from 'node:http';
import { HTTPReceiver, type HTTPReceiverOptions } from '@slack/bolt';
import type { Logger } from '../observability/logger.js';

/** Slack's requests are small (a message event, a form); anything near this is not Slack. */
export const MAX_REQUEST_BODY_BYTES = 512 * 1024;
/** Slack signs its requests with a timestamp; older than this is a replay (Bolt checks the same). */
const MAX_SIGNATURE_AGE_S = 5 * 60;
/** Slack's SSL check, the one unsigned request, is `ssl_check=1` and a token: a few dozen bytes. */
const MAX_UNSIGNED_BODY_BYTES = 1024;
/** What Slack sends: a timestamp in whole seconds, and a version-0 HMAC-SHA256 in hex. */
const TIMESTAMP_HEADER = /^\d{1,12}$/;
const SIGNATURE_HEADER = /^v0=[0-9a-f]{64}$/;

/** A request Bolt has not acknowledged by then is answered 503, before Slack's 3 s run out. */
export const UNACKNOWLEDGED_AFTER_MS = 2_500;

/**
 * Bolt's HTTPReceiver with the guards it lacks on POST /slack/events. Before Bolt sees a request: a declared
 * body over the limit is refused unread (413); so is a request without Slack's signature headers, with
 * malformed ones or a stale timestamp (401), and one that is neither JSON nor a form (415). Only a signature
 * that looks right needs the body to be checked: the body is read here (up to the limit; Slack's unsigned SSL
 * check up to a few bytes) and must be a JSON object or a form, else 400: Bolt would crash on a signed `null`
 * and leave the request unanswered. Bolt reuses the body
 * read here (`rawBody`) and checks the signature itself. The server's timeouts and connection cap are set in
 * `createSlackApp` (bolt-app.ts).
 */
export class GuardedHTTPReceiver extends HTTPReceiver {
  constructor(options: HTTPReceiverOptions, log: Logger) {
    super({
      ...options,
      bodyLimit: MAX_REQUEST_BODY_BYTES,
      // Not acknowledged in time (the store is slow): 503 before Slack's 3 s, so Slack retries.
      unhandledRequestTimeoutMillis: UNACKNOWLEDGED_AFTER_MS,
      unhandledRequestHandler: ({ response }) => {
        log.warn(
          'a Slack request was not acknowledged within 2.5 s; answered 503 so Slack delivers it again',
        );
        if (!response.headersSent) response.writeHead(503).end();
      },
    });
    const boltListener = this.requestListener;
    this.requestListener = (req: IncomingMessage, res: ServerResponse) => {
      if (req.method !== 'POST' || (req.url ?? '/').split('?')[0] !== '/slack/events')
        return boltListener(req, res);
      checkSlackRequest(req).then(
        (status) => {
          if (status === undefined) return boltListener(req, res);
          log.debug({ status }, 'refused a request to /slack/events');
          res.writeHead(status, { connection: 'close' }).end();
        },
        () => {
          // The client hung up or sent a broken body: routine on a public port.
          log.debug('a request to /slack/events was abandoned by its client');
          if (!res.headersSent) res.writeHead(400, { connection: 'close' }).end();
          req.destroy();
        },
      );
    };
  }
}

/** undefined: hand the request to Bolt (its body now read into `rawBody`); otherwise the status to refuse it with. */
async function checkSlackRequest(req: IncomingMessage & { rawBody?: Buffer }): Promise<number | undefined> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > MAX_REQUEST_BODY_BYTES) return 413;
  // Bolt parses exactly these two (a form by its exact type); nothing else is Slack's.
  const contentType = req.headers['content-type'] ?? '';
  const form = contentType === 'application/x-www-form-urlencoded';
  if (!form && !/^application\/json\s*(;|$)/i.test(contentType)) return 415;
  const timestampHeader = req.headers['x-slack-request-timestamp'];
  const signatureHeader = req.headers['x-slack-signature'];
  const signed = timestampHeader !== undefined || signatureHeader !== undefined;
  if (signed) {
    if (typeof timestampHeader !== 'string' || !TIMESTAMP_HEADER.test(timestampHeader)) return 401;
    if (typeof signatureHeader !== 'string' || !SIGNATURE_HEADER.test(signatureHeader)) return 401;
    if (Math.abs(Date.now() / 1000 - Number(timestampHeader)) > MAX_SIGNATURE_AGE_S) return 401;
  } else if (!form) {
    return 401;
  }
  // Slack's SSL check is an unsigned form of a few bytes; anything longer unsigned is refused unread.
  const limit = signed ? MAX_REQUEST_BODY_BYTES : MAX_UNSIGNED_BODY_BYTES;
  if (Number.isFinite(declared) && declared > limit) return signed ? 413 : 401;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return signed ? 413 : 401;
    chunks.push(chunk as Buffer);
  }
  req.rawBody = Buffer.concat(chunks);
  const text = req.rawBody.toString('utf8');
  if (form) {
    const fields = new URLSearchParams(text);
    if (!signed) return fields.get('ssl_check') === '1' ? undefined : 401;
    const payload = fields.get('payload');
    return payload === null || isJsonObject(payload) ? undefined : 400;
  }
  return isJsonObject(text) ? undefined : 400;
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}
