import { describeFailure } from './disk-errors.js';

/** Any failure to reach or use the store; never to be confused with "no record". */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}

/** `databaseUrl`: PostgreSQL's, so a failure to connect names the setting to check. */
export function asStoreError(error: unknown, databaseUrl?: string): StoreError {
  if (error instanceof StoreError) return error;
  const connectFailure = databaseUrl === undefined ? undefined : connectFailureOf(error);
  if (databaseUrl !== undefined && connectFailure !== undefined) {
    return new StoreError(
      `cannot connect to the database in DATABASE_URL (${whereIs(databaseUrl)}): ${connectFailure}; check DATABASE_URL and that PostgreSQL is running and reachable`,
      { cause: error },
    );
  }
  return new StoreError(`store query failed: ${messageOf(error)}`, { cause: error });
}

/** Network errors while connecting, and the server refusing the login or the database, in a few words. */
const CONNECT_FAILURES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  '28P01': 'password authentication failed',
  '28000': 'login refused',
  '3D000': 'the database does not exist',
};

function connectFailureOf(error: unknown): string | undefined {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const words = typeof code === 'string' ? CONNECT_FAILURES[code] : undefined;
  if (words !== undefined) return `${words} (${String(code)})`;
  // pg's own wording when connectionTimeoutMillis passes.
  if (typeof message === 'string' && /timeout exceeded when trying to connect/i.test(message))
    return 'connection timed out';
  return undefined;
}

/** Host, port and database of a PostgreSQL URL, never its user or password. */
function whereIs(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `${url.host || 'localhost'}${url.pathname.length > 1 ? url.pathname : ''}`;
  } catch {
    return 'not a URL';
  }
}

export function messageOf(error: unknown): string {
  return describeFailure(error);
}
