/**
 * What a failure of the embedded store's files means, in words an operator acts on. PGlite reports a file
 * system failure as Emscripten's `ErrnoError` (not an Error: it prints as `[object Object]`) carrying
 * Emscripten's own errno numbers, as a Node error with a `code`, or as PostgreSQL's error (SQLSTATE 53100
 * disk_full, or the operating system's words in the message).
 */
export interface DiskProblem {
  code: string;
  /** One clause: "the disk is full (ENOSPC)". */
  text: string;
  /** Whether writes are refused (the store cannot take new work) rather than the store being unusable. */
  refusesWrites: boolean;
}

/** Emscripten's errno numbers (its ERRNO_CODES) for the failures worth naming. */
const EMSCRIPTEN_ERRNO: Record<number, string> = {
  2: 'EACCES',
  19: 'EDQUOT',
  29: 'EIO',
  44: 'ENOENT',
  54: 'ENOTDIR',
  63: 'EPERM',
  69: 'EROFS',
  51: 'ENOSPC',
};

const MEANING: Record<string, { text: string; refusesWrites: boolean }> = {
  ENOSPC: { text: 'the disk is full', refusesWrites: true },
  EDQUOT: { text: 'the disk quota is used up', refusesWrites: true },
  EROFS: { text: 'the file system is read-only', refusesWrites: true },
  EACCES: { text: 'permission denied (read-only for this process)', refusesWrites: true },
  EPERM: { text: 'operation not permitted (read-only for this process)', refusesWrites: true },
  EIO: { text: 'the disk reported an I/O error', refusesWrites: true },
  ENOTDIR: { text: 'a part of the path is a file, not a directory', refusesWrites: false },
  ENOENT: { text: 'a file or directory is missing', refusesWrites: false },
};

/** The operating system's words for the same failures, as PostgreSQL quotes them. */
const OS_WORDS: [RegExp, string][] = [
  [/no space left on device/i, 'ENOSPC'],
  [/disk quota exceeded/i, 'EDQUOT'],
  [/read-only file system/i, 'EROFS'],
  [/permission denied/i, 'EACCES'],
  [/input\/output error/i, 'EIO'],
];

export function diskProblemOf(error: unknown): DiskProblem | undefined {
  const code = codeOf(error);
  const meaning = code === undefined ? undefined : MEANING[code];
  return code && meaning
    ? { code, text: `${meaning.text} (${code})`, refusesWrites: meaning.refusesWrites }
    : undefined;
}

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const fields = error as { name?: unknown; errno?: unknown; code?: unknown; message?: unknown };
  if (fields.name === 'ErrnoError' && typeof fields.errno === 'number') return EMSCRIPTEN_ERRNO[fields.errno];
  if (typeof fields.code === 'string' && fields.code in MEANING) return fields.code;
  // PostgreSQL's disk_full; other file errors carry the operating system's words in the message.
  if (fields.code === '53100') return 'ENOSPC';
  const message = typeof fields.message === 'string' ? fields.message : '';
  // Only PostgreSQL's file errors ("could not write to file …: Read-only file system"), not e.g. its own
  // "permission denied for table".
  if (!/\bfile\b/.test(message)) return undefined;
  return OS_WORDS.find(([words]) => words.test(message))?.[1];
}

/** A failure's message on one line, whatever was thrown (an ErrnoError has none: its errno is named). */
export function describeFailure(error: unknown): string {
  const problem = diskProblemOf(error);
  if (problem) return problem.text;
  if (error instanceof Error) return error.message.split('\n')[0] ?? error.name;
  if (typeof error === 'object' && error !== null) {
    const { name, errno } = error as { name?: unknown; errno?: unknown };
    if (name === 'ErrnoError') return `file system error (errno ${String(errno)})`;
    try {
      return JSON.stringify(error);
    } catch {
      return Object.prototype.toString.call(error);
    }
  }
  return String(error);
}
