import { type Logger as SlackLogger, LogLevel as SlackLogLevel } from '@slack/bolt';
import type { Logger } from './logger.js';

/*
 * Apart from the logger itself, so a process that stops at a configuration error never loads Bolt (with
 * src/main.ts loading the app only then, it reports the error in 0.05 s of CPU instead of 0.45 s).
 */

/** Bolt's lines for requests the client abandoned (raw-body's "request aborted"). */
const CLIENT_ABORTS = /request aborted/i;

const fromPino: Partial<Record<string, SlackLogLevel>> = {
  trace: SlackLogLevel.DEBUG,
  debug: SlackLogLevel.DEBUG,
  info: SlackLogLevel.INFO,
  warn: SlackLogLevel.WARN,
  error: SlackLogLevel.ERROR,
  fatal: SlackLogLevel.ERROR,
};

/** Bolt's logger interface on top of pino, so Bolt's own lines share format and redaction. */
export function boltLogger(logger: Logger): SlackLogger {
  const child = logger.child({ component: 'bolt' });
  const write =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (...parts: unknown[]) => {
      // WebClient logs several debug lines per call: not even formatted unless they will be written.
      if (!child.isLevelEnabled(level)) return;
      const error = parts.find((part): part is Error => part instanceof Error);
      const text = parts
        .filter((part) => part !== error)
        .map((part) => (typeof part === 'string' ? part : safeStringify(part)))
        .join(' ');
      // A client that hung up mid-request is routine on a public port, not a warning. And WebClient logs each
      // warning Slack returns on every call (`warnings.forEach(logger.warn)`); the bot logs those worth acting
      // on once, with the fix.
      const routine = CLIENT_ABORTS.test(text) || isWarningsForEach(parts);
      const at = routine ? 'debug' : level;
      if (error) child[at]({ err: error }, text);
      else child[at](text);
    };
  return {
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    setLevel: () => {
      // The level is owned by LOG_LEVEL; Bolt's requests to change it are ignored on purpose.
    },
    getLevel: () => fromPino[child.level] ?? SlackLogLevel.ERROR,
    setName: () => {},
  };
}

/** WebClient's `response_metadata.warnings.forEach(logger.warn)`: (warning, index, warnings). */
function isWarningsForEach(parts: unknown[]): boolean {
  return (
    parts.length === 3 &&
    typeof parts[0] === 'string' &&
    typeof parts[1] === 'number' &&
    Array.isArray(parts[2])
  );
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
