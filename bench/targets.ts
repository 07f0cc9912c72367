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
  | 'peakRssMb'
  | 'rssGrowthMb';

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
  { scenario: 'steady', measure: 'ackP99', of: 'bot', compare: '<', limit: 100, text: 'ack p99 < 100 ms' },
  {
    scenario: 'steady',
    measure: 'addedP99',
    of: 'bot',
    compare: '<',
    limit: 100,
    text: 'added latency p99 < 100 ms',
  },
  { scenario: 'steady', measure: 'lost', of: 'bot', compare: '<=', limit: 0, text: '0 lost' },
  { scenario: 'steady', measure: 'duplicated', of: 'bot', compare: '<=', limit: 0, text: '0 duplicated' },
  {
    scenario: 'steady',
    measure: 'ackP99',
    of: 'ratio',
    compare: '<=',
    limit: 2,
    text: 'ack p99 at most 2x the durable relay',
  },
  {
    scenario: 'steady',
    measure: 'addedP99',
    of: 'ratio',
    compare: '<=',
    limit: 2,
    text: 'added latency p99 at most 2x the durable relay',
  },
  {
    scenario: 'burst',
    measure: 'slowestAckMs',
    of: 'bot',
    compare: '<=',
    limit: 2_000,
    text: 'every event acknowledged within 2 s',
  },
  {
    scenario: 'burst',
    measure: 'slowestAckMs',
    of: 'ratio',
    compare: '<=',
    limit: 1.5,
    text: 'slowest acknowledgement at most 1.5x the durable relay',
  },
  {
    scenario: 'newThreads',
    measure: 'slowestAnswerMs',
    of: 'bot',
    compare: '<=',
    limit: 2_500,
    text: 'every thread answered within 2.5 s of its event',
  },
  {
    scenario: 'manyThreads',
    measure: 'peakRssMb',
    of: 'bot',
    compare: '<',
    limit: 250,
    text: 'peak RSS < 250 MB',
  },
  {
    scenario: 'manyThreads',
    measure: 'rssGrowthMb',
    of: 'bot',
    compare: '<=',
    limit: 5,
    text: 'RSS flat once drained (grows at most 5 MB over the samples)',
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
