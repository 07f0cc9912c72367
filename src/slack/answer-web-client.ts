import {
  type Logger,
  LogLevel,
  type WebAPICallResult,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRequestError,
  WebClient,
  type WebClientOptions,
} from '@slack/web-api';
import { headerRecord, type WebApiFetch } from './web-api-transport.js';

/** The Web API calls made for every answer: the reply and its working indicator. */
const ANSWER_METHODS: ReadonlySet<string> = new Set([
  'chat.postMessage',
  'reactions.add',
  'reactions.remove',
  'assistant.threads.setStatus',
]);

/** Retries after a failed request, an HTTP error or a rate limit: delays min(minTimeout × factor^n, maxTimeout). */
export interface AnswerCallRetry {
  retries: number;
  factor: number;
  minTimeout: number;
  maxTimeout: number;
}

export interface AnswerWebClientOptions extends Omit<WebClientOptions, 'fetch' | 'retryConfig'> {
  /** The transport: answer calls go through it directly, everything else through WebClient. */
  fetch: WebApiFetch;
  retryConfig: AnswerCallRetry;
}

type ArgumentValue = string | number | boolean | object;

/**
 * Bolt's WebClient with a short path for the calls made for every answer. Per call, WebClient's own
 * machinery (its request queue, its retry wrapper, and debug-log strings it builds and redacts three times
 * even when nothing is logged) cost about 50 µs of CPU here, roughly as much as the HTTP exchange itself.
 * The short path sends the same form-encoded request through the same transport and keeps what callers
 * rely on: Slack's `ok: false` is thrown as WebClient's platform error (with `data`), a 429 is waited out
 * for its Retry-After and retried, a failed request or an HTTP error is retried with the same backoff, and
 * the errors are WebClient's own classes. Any other method, or arguments with files, go through WebClient.
 */
export class AnswerWebClient extends WebClient {
  private readonly answerFetch: WebApiFetch;
  private readonly answerRetry: AnswerCallRetry;
  private readonly answerLogger: Logger | undefined;

  constructor(token: string, options: AnswerWebClientOptions) {
    super(token, { ...options, fetch: options.fetch as unknown as typeof fetch });
    this.answerFetch = options.fetch;
    this.answerRetry = options.retryConfig;
    this.answerLogger = options.logger;
  }

  override async apiCall(method: string, options: Record<string, unknown> = {}): Promise<WebAPICallResult> {
    const { token, ...args } = options;
    const body = ANSWER_METHODS.has(method) ? formBody(args) : undefined;
    const bearer = typeof token === 'string' && token ? token : this.token;
    if (body === undefined || !bearer) return super.apiCall(method, options);
    const url = `${this.slackApiUrl}${method}`;
    const headers = {
      authorization: `Bearer ${bearer}`,
      'content-type': 'application/x-www-form-urlencoded',
    };
    for (let attempt = 0; ; attempt++) {
      // Method, attempt and status only: never the arguments (user text) nor the headers (the token).
      const debug = this.answerLogger?.getLevel() === LogLevel.DEBUG ? this.answerLogger : undefined;
      debug?.debug(`Slack call ${method}: attempt ${attempt + 1}`);
      let waitMs = Math.min(
        this.answerRetry.minTimeout * this.answerRetry.factor ** attempt,
        this.answerRetry.maxTimeout,
      );
      let failure: Error;
      const response = await this.answerFetch(url, {
        method: 'POST',
        headers,
        body,
        redirect: 'error',
      }).catch(
        (error: unknown) => new WebAPIRequestError(error instanceof Error ? error : new Error(String(error))),
      );
      if (response instanceof WebAPIRequestError) {
        failure = response;
      } else {
        debug?.debug(`Slack call ${method}: HTTP ${response.status}`);
        const text = await response.text();
        if (response.status === 200) return result(text);
        failure = new WebAPIHTTPError(
          response.status,
          response.statusText,
          headerRecord(response.headers),
          text,
        );
        if (response.status === 429) {
          const retryAfterSeconds = Number.parseInt(response.headers.get('retry-after') ?? '', 10);
          // Without a usable Retry-After there is no telling when to come back: fail now, as WebClient does.
          if (!(retryAfterSeconds >= 0)) throw failure;
          waitMs = Math.max(retryAfterSeconds * 1000, waitMs);
        }
      }
      if (attempt >= this.answerRetry.retries) throw failure;
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}

/**
 * The arguments as WebClient encodes them (form fields, objects such as `blocks` as JSON), or undefined when
 * one is binary or a stream: those go through WebClient's multipart encoding.
 */
function formBody(args: Record<string, unknown>): string | undefined {
  const fields = new URLSearchParams();
  for (const [name, value] of Object.entries(args)) {
    if (value === undefined || value === null) continue;
    if (!isPlainArgument(value)) return undefined;
    fields.append(name, typeof value === 'object' ? JSON.stringify(value) : String(value));
  }
  return fields.toString();
}

function isPlainArgument(value: unknown): value is ArgumentValue {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return true;
  if (typeof value !== 'object' || value === null) return false;
  return Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype;
}

/** Slack's answer; `ok: false` (or a body that is not JSON, as WebClient reads it) is a platform error. */
function result(text: string): WebAPICallResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = { ok: false, error: text };
  }
  const answer: WebAPICallResult & { error?: unknown } =
    typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as WebAPICallResult)
      : { ok: false, error: text };
  if (answer.ok !== true) {
    throw new WebAPIPlatformError({ ...answer, ok: false, error: String(answer.error ?? 'unknown_error') });
  }
  return answer;
}
