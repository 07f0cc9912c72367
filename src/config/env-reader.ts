import type { ConfigProblem } from './errors.js';
import type { EnvVariable } from './variables.js';

export type Env = Record<string, string | undefined>;

export const TRUE_WORDS = ['true', '1', 'yes', 'on'];
export const FALSE_WORDS = ['false', '0', 'no', 'off'];

/** Reads variables and records every problem instead of stopping at the first. */
export class EnvReader {
  readonly problems: ConfigProblem[] = [];

  constructor(private readonly env: Env) {}

  read(name: EnvVariable): string | undefined {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  fail(variable: EnvVariable, problem: string): void {
    this.problems.push({ variable, problem });
  }

  /**
   * A value still ending in `...` (or `…`), as `.env.example` has them (`xoxb-...`), is refused as a
   * placeholder rather than sent to Slack or the agent service to be refused there.
   */
  placeholder(name: EnvVariable): boolean {
    const value = this.read(name);
    if (value === undefined || !/(\.\.\.|…)$/.test(value)) return false;
    // Only a bare placeholder is echoed: a real secret with dots at its end must not be.
    const shown = /^[a-z]{0,5}-?(\.\.\.|…)$/.test(value) ? ` ("${value}")` : '';
    this.fail(name, `is still the placeholder${shown} from .env.example: set the real value`);
    return true;
  }

  /**
   * A URL on example.com, .net or .org (or under them), as `.env.example` has AGENT_BASE_URL, is refused as a
   * placeholder: those domains are reserved for examples (RFC 2606).
   */
  placeholderUrl(name: EnvVariable, url: string | undefined): boolean {
    if (url === undefined) return false;
    const domain = /(?:^|\.)(example\.(?:com|net|org))\.?$/.exec(new URL(url).hostname)?.[1];
    if (domain === undefined) return false;
    this.fail(
      name,
      `is a placeholder ("${url}"): ${domain} is reserved for examples, so no real service is there; set the real URL`,
    );
    return true;
  }

  required(name: EnvVariable, hint: string): string {
    const value = this.read(name);
    if (value === undefined) this.fail(name, `is required (${hint})`);
    return value ?? '';
  }

  integer(name: EnvVariable, fallback: number, min: number, max: number): number {
    const raw = this.read(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
      this.fail(name, `must be a whole number from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  }

  boolean(name: EnvVariable, fallback: boolean): boolean {
    const raw = this.read(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (TRUE_WORDS.includes(raw)) return true;
    if (FALSE_WORDS.includes(raw)) return false;
    this.fail(name, `must be true or false (got "${raw}")`);
    return fallback;
  }

  /** `30d`, `12h`, `15m`, `90s`, or `0` (off). */
  duration(name: EnvVariable, fallback: string): number {
    const raw = this.read(name) ?? fallback;
    const parsed = parseDuration(raw);
    if (parsed === undefined) {
      this.fail(name, `must be a duration like 30d, 12h, 15m or 90s, or 0 for off (got "${raw}")`);
      return parseDuration(fallback) ?? 0;
    }
    return parsed;
  }

  httpUrl(name: EnvVariable, raw: string | undefined): string | undefined {
    if (raw === undefined) return undefined;
    // Not echoed when it may hold credentials (user:password@).
    const problem = `must be an http(s) URL (got "${raw.includes('@') ? '(not shown: it has an @)' : raw}")`;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      this.fail(name, problem);
      return undefined;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      this.fail(name, problem);
      return undefined;
    }
    return raw;
  }

  /** A comma-separated list of Slack ids (T…, C…, G…, U…, W…). */
  idList(name: EnvVariable): ReadonlySet<string> {
    const ids = (this.read(name) ?? '')
      .split(',')
      .map((id) => id.trim())
      .filter(Boolean);
    const bad = ids.find((id) => !/^[A-Z0-9]+$/.test(id));
    if (bad !== undefined)
      this.fail(name, `must be a comma-separated list of Slack ids (bad entry "${bad}")`);
    return new Set(ids);
  }
}

/** `30d`, `12h`, `15m`, `90s`, or `0`; undefined when it is none of those. */
export function parseDuration(raw: string): number | undefined {
  if (raw === '0') return 0;
  const match = /^(\d+)\s*(s|m|h|d)$/.exec(raw.toLowerCase());
  const unitMs = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
  if (!match?.[1] || !match[2]) return undefined;
  return Number(match[1]) * unitMs[match[2] as keyof typeof unitMs];
}
