import {
  ErrorCode,
  type WebAPICallResult,
  WebClient,
  WebClientEvent,
  type WebClientOptions,
} from '@slack/web-api';

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
 */
export class SlackWebClient extends WebClient {
  constructor(
    token: string,
    options: WebClientOptions,
    private readonly observer: SlackCallObserver = {},
  ) {
    super(token, options);
    this.on(WebClientEvent.RATE_LIMITED, () => observer.onRateLimited?.());
  }

  override async apiCall(method: string, options?: Record<string, unknown>): Promise<WebAPICallResult> {
    const call = async () => {
      const started = performance.now();
      try {
        const result = await super.apiCall(method, options);
        this.report(method, started, '200');
        return result;
      } catch (error) {
        const { status, code } = describeFailure(error);
        this.report(method, started, status, code);
        throw error;
      }
    };
    return this.observer.around ? this.observer.around(method, call) : call();
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
