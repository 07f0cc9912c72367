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

/** CPU time used so far by every PostgreSQL process on the machine (server and backends). */
export function postgresCpuSeconds(): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (!readFileSync(`/proc/${pid}/stat`, 'utf8').includes('(postgres)')) continue;
      ticks += statTicks(pid);
    } catch {
      // The process ended meanwhile.
    }
  }
  return ticks / TICKS_PER_SECOND;
}

/** CPU time the whole machine has spent busy so far (all cores: user, nice, system, irq, softirq). */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const [, user, nice, system, , , irq, softirq] = line.trim().split(/\s+/).map(Number);
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0)) / TICKS_PER_SECOND;
}
