import {
  ErrorCode,
  type RetryOptions,
  type WebAPICallResult,
  WebClient,
  WebClientEvent,
  type WebClientOptions,
} from '@slack/web-api';

/**
 * Calls whose delay or failure costs a nicety only, never a prompt or an answer: the indicators (reactions,
 * session statuses and titles) and the Messages tab's suggested prompts.
 */
const BEST_EFFORT_METHODS: ReadonlySet<string> = new Set([
  'reactions.add',
  'reactions.remove',
  'assistant.threads.setSuggestedPrompts',
  'agents.sessions.setStatus',
  'agents.sessions.rename',
]);

/**
 * Slack's answers for a token that does not work (the common errors of every token-authenticated method): the
 * app was uninstalled, its tokens revoked or the workspace deactivated, or (`token_expired`) a rotated token
 * replaced by another replica's refresh.
 */
const TOKEN_REFUSED_ERRORS: ReadonlySet<string> = new Set([
  'invalid_auth',
  'account_inactive',
  'token_revoked',
  'token_expired',
]);

/** In OAuth mode each call's token is the served workspace's, asked for per call. */
export interface TokenSource {
  token(): Promise<string>;
  /**
   * Slack refused `token` with `code` (TOKEN_REFUSED_ERRORS). True when another token is current now: the call
   * is made once more with it (Slack took nothing). Whether the installation is gone is the source's to find out.
   */
  refused(token: string, code: string): Promise<boolean>;
}

export function isBestEffortMethod(method: string): boolean {
  return BEST_EFFORT_METHODS.has(method);
}

/** What the bot learns of each Web API call, for metrics and traces. */
export interface SlackCallInfo {
  method: string;
  /** HTTP status as far as it is known: 200 for `ok: false` answers too (Slack's own errors), `error` for none. */
  status: string;
  /** Slack's error code, when it answered `ok: false`. */
  error?: string;
  durationMs: number;
}

export interface SlackCallObserver {
  /** Wraps one call, e.g. in a trace span; must call and return `call()`. */
  around?<T>(method: string, call: () => Promise<T>): Promise<T>;
  onCall?(info: SlackCallInfo): void;
  onRateLimited?(): void;
}

/**
 * Bolt's WebClient, with every call reported (a thin wrapper of `apiCall`: WebClient binds its method
 * helpers to `apiCall`, so this sees them all).
 *
 * With `bestEffortRetries`, each method is called through a WebClient of its own (best-effort methods with that
 * retry policy): WebClient pauses its whole queue while a 429's Retry-After runs, and Slack limits each method
 * on its own, so a throttled reaction or thread read then holds up only more of the same, never a name lookup,
 * another read or a post.
 */
export class SlackWebClient extends WebClient {
  private readonly methodClients = new Map<string, WebClient>();

  private readonly tokens?: TokenSource;

  /** `token`: the one workspace's bot token, or (OAuth mode) where each call's comes from. */
  constructor(
    token: string | TokenSource,
    private readonly clientOptions: WebClientOptions,
    private readonly observer: SlackCallObserver = {},
    private readonly bestEffortRetries?: RetryOptions,
  ) {
    super(typeof token === 'string' ? token : undefined, clientOptions);
    if (typeof token !== 'string') this.tokens = token;
    this.on(WebClientEvent.RATE_LIMITED, () => observer.onRateLimited?.());
  }

  override async apiCall(method: string, options?: Record<string, unknown>): Promise<WebAPICallResult> {
    const client = this.queueFor(method);
    const call = async (again = false): Promise<WebAPICallResult> => {
      const token = await this.tokens?.token();
      const args = token === undefined ? options : { ...options, token };
      const started = performance.now();
      try {
        const result = await (client ? client.apiCall(method, args) : super.apiCall(method, args));
        this.report(method, started, '200');
        return result;
      } catch (error) {
        const { status, code } = describeFailure(error);
        this.report(method, started, status, code);
        if (!again && token !== undefined && code !== undefined && TOKEN_REFUSED_ERRORS.has(code)) {
          // The source logs its own failures; the caller gets Slack's answer then.
          if (await this.tokens?.refused(token, code).catch(() => false)) return call(true);
        }
        throw error;
      }
    };
    return this.observer.around ? this.observer.around(method, () => call()) : call();
  }

  /** The client of a method's own queue; undefined: this client's queue. */
  private queueFor(method: string): WebClient | undefined {
    if (!this.bestEffortRetries) return undefined;
    let client = this.methodClients.get(method);
    if (!client) {
      const retryConfig = isBestEffortMethod(method)
        ? this.bestEffortRetries
        : this.clientOptions.retryConfig;
      client = new WebClient(this.token, { ...this.clientOptions, retryConfig });
      client.on(WebClientEvent.RATE_LIMITED, () => this.observer.onRateLimited?.());
      this.methodClients.set(method, client);
    }
    return client;
  }

  private report(method: string, started: number, status: string, error?: string): void {
    try {
      this.observer.onCall?.({ method, status, error, durationMs: performance.now() - started });
    } catch {
      // Metrics must never break a call.
    }
  }
}

/** Slack's error code of a failed call (`ok: false`), if that is how it failed. */
export function slackErrorCode(error: unknown): string | undefined {
  const data = (error as { code?: unknown; data?: { error?: unknown } } | undefined)?.data;
  return typeof data?.error === 'string' ? data.error : undefined;
}

function describeFailure(error: unknown): { status: string; code?: string } {
  const failure = error as { code?: string; statusCode?: number } | undefined;
  switch (failure?.code) {
    case ErrorCode.PlatformError:
      return { status: '200', code: slackErrorCode(error) };
    case ErrorCode.HTTPError:
      return { status: String(failure.statusCode ?? 'error') };
    case ErrorCode.RateLimitedError:
      return { status: '429' };
    default:
      return { status: 'error' };
  }
}
