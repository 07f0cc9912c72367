/**
 * The benchmark's targets, one table: `npm run bench` prints a PASS/FAIL line for each and docs/benchmark.md quotes
 * them. Every target is on the bot; "ratio" targets divide the bot's figure by the minimal durable relay's
 * in the same scenario of the same run.
 */

export type ScenarioKey = 'steady' | 'burst' | 'newThreads' | 'manyThreads';

/** The figures targets are set on (see Row in run.ts for how each is measured). */
export type Measure =
  | 'ackP99'
  | 'addedP99'
  | 'lost'
  | 'duplicated'
  | 'slowestAckMs'
  | 'slowestAnswerMs'
  | 'peakRssMb';

export interface Target {
  scenario: ScenarioKey;
  measure: Measure;
  /** 'bot': the bot's own figure; 'ratio': the bot's figure over the relay's. */
  of: 'bot' | 'ratio';
  /** '<': under the limit; '<=': at most the limit. */
  compare: '<' | '<=';
  limit: number;
  /** As the PASS/FAIL line and docs/benchmark.md say it. */
  text: string;
}

export const TARGETS: readonly Target[] = [
  {
    scenario: 'steady',
    measure: 'addedP99',
    of: 'ratio',
    compare: '<=',
    limit: 1.5,
    text: 'added latency p99 at most 1.5x the durable relay',
  },
  {
    scenario: 'steady',
    measure: 'ackP99',
    of: 'ratio',
    compare: '<=',
    limit: 1.3,
    text: 'ack p99 at most 1.3x the durable relay',
  },
  { scenario: 'steady', measure: 'lost', of: 'bot', compare: '<=', limit: 0, text: '0 lost' },
  { scenario: 'steady', measure: 'duplicated', of: 'bot', compare: '<=', limit: 0, text: '0 duplicated' },
  {
    scenario: 'newThreads',
    measure: 'slowestAnswerMs',
    of: 'bot',
    compare: '<=',
    limit: 2_500,
    text: 'all answered within 2.5 s of their event',
  },
  {
    scenario: 'manyThreads',
    measure: 'addedP99',
    of: 'bot',
    compare: '<',
    limit: 1_000,
    text: 'added latency p99 < 1 s',
  },
  {
    scenario: 'manyThreads',
    measure: 'peakRssMb',
    of: 'bot',
    compare: '<',
    limit: 200,
    text: 'peak RSS < 200 MB',
  },
  { scenario: 'manyThreads', measure: 'lost', of: 'bot', compare: '<=', limit: 0, text: '0 lost' },
  {
    scenario: 'manyThreads',
    measure: 'duplicated',
    of: 'bot',
    compare: '<=',
    limit: 0,
    text: '0 duplicated',
  },
  {
    scenario: 'burst',
    measure: 'slowestAckMs',
    of: 'bot',
    compare: '<=',
    limit: 1_000,
    text: 'slowest acknowledgement within 1 s',
  },
];

export interface Verdict {
  target: Target;
  value: number;
  pass: boolean;
}

/** NaN (a figure missing, e.g. the relay not run for a ratio) never passes. */
export function judge(target: Target, value: number): Verdict {
  const pass = target.compare === '<' ? value < target.limit : value <= target.limit;
  return { target, value, pass };
}
