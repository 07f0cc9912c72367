import { readdirSync, readFileSync } from 'node:fs';

/** Figures from /proc (Linux): what the benchmark reads about the processes it measures and the machine. */

/** /proc/<pid>/stat counts CPU in clock ticks; 100 a second on Linux. */
const TICKS_PER_SECOND = 100;

function statTicks(pid: number | string): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime + stime
}

export interface ProcessFigures {
  /** Highest resident memory since the process started (VmHWM). */
  peakRssMb: number;
  /** Resident memory now (VmRSS). */
  rssMb: number;
  cpuSeconds: number;
}

export function processFigures(pid: number): ProcessFigures {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN);
    return {
      peakRssMb: kb('VmHWM') / 1024,
      rssMb: kb('VmRSS') / 1024,
      cpuSeconds: statTicks(pid) / TICKS_PER_SECOND,
    };
  } catch {
    return { peakRssMb: Number.NaN, rssMb: Number.NaN, cpuSeconds: Number.NaN };
  }
}

/**
 * CPU ticks so far, by pid, of the PostgreSQL processes that work for `database`: its backends, and the
 * server's own processes (WAL writer, checkpointer, ...), which work for every database. Backends of other
 * databases (other work on the machine) are left out.
 */
export function postgresTicks(database: string): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (!readFileSync(`/proc/${pid}/stat`, 'utf8').includes('(postgres)')) continue;
      // A backend's title: "postgres: <cluster>: <user> <database> <host>(<port>) <state>".
      const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0', 1)[0] ?? '';
      const servedDatabase =
        /^postgres: [^:]+: \S+ (\S+) (?:\S+\(\d+\)|\[local\])/.exec(title)?.[1] ??
        /^postgres: [^:]+: autovacuum worker (\S+)/.exec(title)?.[1];
      if (servedDatabase !== undefined && servedDatabase !== database) continue;
      ticks.set(Number(pid), statTicks(pid));
    } catch {
      // The process ended meanwhile.
    }
  }
  return ticks;
}

/** CPU seconds between two readings: a process started in between counts whole; one that ended is missed. */
export function postgresCpuSeconds(before: Map<number, number>, after: Map<number, number>): number {
  let ticks = 0;
  for (const [pid, now] of after) ticks += now - (before.get(pid) ?? 0);
  return ticks / TICKS_PER_SECOND;
}

/** CPU time the whole machine has spent busy so far (all cores: user, nice, system, irq, softirq). */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const [, user, nice, system, , , irq, softirq] = line.trim().split(/\s+/).map(Number);
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0)) / TICKS_PER_SECOND;
}
