import { type Logger, LogLevel } from '@slack/web-api';

/**
 * A logger for Slack's clients in tests that make Slack refuse calls on purpose: the clients log every
 * refusal at error level, and a passing run must print no `[ERROR]` blocks. The test asserts the refusal.
 */
export function silentSlackLogger(): Logger {
  let level = LogLevel.ERROR;
  return {
    debug: () => {},
    info: () => {},
    warn: () => {},
    error: () => {},
    setLevel: (next) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => {},
  };
}
