import { LogLevel } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import { boltLogger } from '../../src/observability/bolt-logger.js';
import { createLogger } from '../../src/observability/logger.js';

/** A pino logger at `level` writing to memory, and the lines it wrote, parsed. */
function capture(level: 'debug' | 'info' | 'warn') {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level,
    secrets: ['the-signing-secret'],
    destination: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  });
  return { logger, lines };
}

describe("Bolt's and WebClient's lines through the bot's logger", () => {
  it('writes them as the bot writes its own, tagged bolt, with an error as err and secrets scrubbed', () => {
    const { logger, lines } = capture('info');
    boltLogger(logger).error('could not verify', new Error('bad signature'), {
      secret: 'the-signing-secret',
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, component: 'bolt', err: { message: 'bad signature' } });
    expect(lines[0]?.msg).toBe('could not verify {"secret":"[redacted]"}');
  });

  it('takes a client that hung up mid-request, and each warning WebClient repeats, as routine', () => {
    const { logger, lines } = capture('info');
    const bolt = boltLogger(logger);
    bolt.error('An unhandled error occurred while Bolt processed a request: Error: request aborted');
    const warnings = ['missing_charset', 'superfluous_charset'];
    warnings.forEach(bolt.warn);
    expect(lines).toEqual([]);

    const verbose = capture('debug');
    boltLogger(verbose.logger).error('request aborted');
    expect(verbose.lines.map((line) => line.level)).toEqual([20]);
  });

  it("reports LOG_LEVEL as Bolt's level and ignores Bolt's requests to change it", () => {
    const { logger } = capture('warn');
    const bolt = boltLogger(logger);
    expect(bolt.getLevel()).toBe(LogLevel.WARN);
    bolt.setLevel(LogLevel.DEBUG);
    expect(bolt.getLevel()).toBe(LogLevel.WARN);
    expect(boltLogger(capture('debug').logger).getLevel()).toBe(LogLevel.DEBUG);
  });
});
