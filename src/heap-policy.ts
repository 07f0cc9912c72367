import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets the old generation grow past what survived its last full collection before it collects
 * again, in percent. V8's own choice under load is up to 300% (4x): with the bot's small live heap (about
 * 30 MB) that left 100 MB and more of dead jobs resident after a burst. 150% keeps the peak RSS of the
 * benchmark's 10,000-thread run under 200 MB; 50% did too, but collected so often that latency suffered.
 * It is not a cap: the heap still grows as far as live data needs.
 */
export const HEAP_GROWING_PERCENT = 150;

/** Applies HEAP_GROWING_PERCENT unless the operator chose a value (NODE_OPTIONS or node's flags). */
export function applyHeapPolicy(): void {
  const chosen = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((arg) =>
    arg.includes('heap-growing-percent'),
  );
  if (!chosen) setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
