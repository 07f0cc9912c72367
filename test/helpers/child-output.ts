import type { ChildProcess } from 'node:child_process';

/** What a child process has printed so far, and its end. */
export interface ChildOutput {
  stdout(): string;
  stderr(): string;
  /** Both streams, in the order their chunks arrived. */
  output(): string;
  /** Once its output has been read to the end ('close', not 'exit': it may exit before that). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface WatchOptions {
  /** For a command that ends by itself: killed if it has not by then, so a hang fails its test, not outlives it. */
  timeoutMs?: number;
  /** It was started `detached`, leading a process group of its own (npm and its node, tsc and its compiler). */
  group?: boolean;
}

/** Collects a child's output as it arrives; past `timeoutMs` it is killed, with its group if it leads one. */
export function watchOutput(child: ChildProcess, options: WatchOptions = {}): ChildOutput {
  let stdout = '';
  let stderr = '';
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    output += chunk.toString();
  });
  const killer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(
          () => (options.group ? killProcessGroup(child) : child.kill('SIGKILL')),
          options.timeoutMs,
        );
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal });
    }),
  );
  return { stdout: () => stdout, stderr: () => stderr, output: () => output, exited };
}

/** SIGKILL to the process group a `detached` child leads. */
export function killProcessGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
