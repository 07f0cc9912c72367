import { type DestinationStream, type Logger, pino } from 'pino';
import type { LogLevel } from '../config/index.js';

export type { Logger };

const REDACTED = '[redacted]';

export interface LoggerOptions {
  level: LogLevel;
  /** Literal secret values scrubbed from every line, whatever field or message they hide in. */
  secrets: readonly string[];
  destination?: DestinationStream;
  /** Human-readable lines (pino-pretty) instead of JSON; for a terminal. */
  pretty?: boolean;
}

export function createLogger({ level, secrets, destination, pretty }: LoggerOptions): Logger {
  const scrub = secretScrubber(secrets);
  // The scrubber runs on the serialized line before it reaches any stream, pretty-printer included.
  const output =
    destination ??
    (pretty
      ? pino.transport({
          target: 'pino-pretty',
          options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l' },
        })
      : undefined);
  return pino(
    {
      level,
      base: { service: 'slack-agent-bridge' },
      // Known secret-bearing fields are removed by path; the scrubber below catches values anywhere else.
      redact: {
        paths: [
          'token',
          '*.token',
          'headers.authorization',
          '*.headers.authorization',
          'headers.private_key',
          '*.headers.private_key',
          'private_key',
          '*.private_key',
          'config.headers',
          '*.config.headers',
        ],
        censor: REDACTED,
      },
      hooks: { streamWrite: scrub },
      serializers: { err: errorWithoutBodies },
    },
    output,
  );
}

/**
 * Fields of HTTP client errors that hold what was sent or received: axios keeps the request (body included)
 * in `config` and `request`, and the response body in `response`. Those bodies are people's or the agent's
 * words, which are never logged above debug; the error's message, code and `status` stay.
 */
const BODY_FIELDS = new Set(['config', 'request', 'response']);
const MAX_ERROR_DEPTH = 5;

/** pino's error serializer, then the same error (and its nested errors) without the fields holding bodies. */
function errorWithoutBodies(error: unknown): unknown {
  return withoutBodies(pino.stdSerializers.err(error as Error), 0);
}

function withoutBodies(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null || depth > MAX_ERROR_DEPTH) return value;
  if (Array.isArray(value)) return value.map((inner: unknown) => withoutBodies(inner, depth + 1));
  const copy: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (!BODY_FIELDS.has(key)) copy[key] = withoutBodies(inner, depth + 1);
  }
  return copy;
}

/** Replaces every occurrence of a secret (and of Slack-token-shaped strings) in a serialized log line. */
export function secretScrubber(secrets: readonly string[]): (line: string) => string {
  const literals = [...new Set(secrets)]
    .filter((secret) => secret.length > 0)
    .sort((a, b) => b.length - a.length);
  // Rotating tokens: `xoxe.xoxb-…` (access) and `xoxe-…` (refresh).
  const slackTokenPattern = /xox[abposre][.-][A-Za-z0-9.-]+|xapp-[A-Za-z0-9-]+/g;
  return (line) => {
    let scrubbed = line;
    for (const secret of literals) {
      if (scrubbed.includes(secret)) scrubbed = scrubbed.split(secret).join(REDACTED);
      // JSON serialization escapes some characters; catch the escaped form too.
      const escaped = JSON.stringify(secret).slice(1, -1);
      if (escaped !== secret && scrubbed.includes(escaped)) scrubbed = scrubbed.split(escaped).join(REDACTED);
    }
    return scrubbed.replace(slackTokenPattern, REDACTED);
  };
}
