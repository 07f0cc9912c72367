import { describe, expect, it } from 'vitest';
import { describeFailure, diskProblemOf } from '../../src/store/disk-errors.js';

/** The shape of PGlite's Emscripten file error (test/store/database.test.ts provokes the real one). */
const errnoError = (errno: number) => ({ name: 'ErrnoError', errno });

describe('diskProblemOf', () => {
  it.each([
    [51, 'ENOSPC', 'the disk is full (ENOSPC)', true],
    [19, 'EDQUOT', 'the disk quota is used up (EDQUOT)', true],
    [69, 'EROFS', 'the file system is read-only (EROFS)', true],
    [2, 'EACCES', 'permission denied (read-only for this process) (EACCES)', true],
    [63, 'EPERM', 'operation not permitted (read-only for this process) (EPERM)', true],
    [29, 'EIO', 'the disk reported an I/O error (EIO)', true],
    [54, 'ENOTDIR', 'a part of the path is a file, not a directory (ENOTDIR)', false],
    [44, 'ENOENT', 'a file or directory is missing (ENOENT)', false],
  ])(
    "reads Emscripten's errno %i as %s, and whether writes are refused",
    (errno, code, text, refusesWrites) => {
      expect(diskProblemOf(errnoError(errno))).toEqual({ code, text, refusesWrites });
    },
  );

  it("reads a Node error's code, and no other code", () => {
    expect(diskProblemOf(Object.assign(new Error('write failed'), { code: 'ENOSPC' }))).toMatchObject({
      code: 'ENOSPC',
      refusesWrites: true,
    });
    expect(diskProblemOf(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBeUndefined();
    expect(diskProblemOf(errnoError(1234))).toBeUndefined();
  });

  it("reads PostgreSQL's disk_full, and the operating system's words in its file errors only", () => {
    expect(diskProblemOf({ code: '53100', message: 'could not extend file "base/5/16384"' })?.code).toBe(
      'ENOSPC',
    );
    expect(
      diskProblemOf({ code: '42501', message: 'could not write to file "pg_wal/x": Read-only file system' })
        ?.code,
    ).toBe('EROFS');
    expect(
      diskProblemOf({ code: 'XX000', message: 'could not write to file "x": No space left on device' })?.code,
    ).toBe('ENOSPC');
    expect(diskProblemOf({ message: 'could not fsync file "x": Input/output error' })?.code).toBe('EIO');
    // Its own "permission denied" about a table is not a disk problem.
    expect(diskProblemOf({ code: '42501', message: 'permission denied for table inbox' })).toBeUndefined();
  });

  it('finds nothing in what is not an error object', () => {
    for (const thrown of [undefined, null, 'No space left on device in file x', 28]) {
      expect(diskProblemOf(thrown)).toBeUndefined();
    }
  });
});

describe('describeFailure', () => {
  it('names a disk problem in words, whatever carried it', () => {
    expect(describeFailure(errnoError(51))).toBe('the disk is full (ENOSPC)');
    expect(describeFailure(Object.assign(new Error('EROFS: x'), { code: 'EROFS' }))).toBe(
      'the file system is read-only (EROFS)',
    );
  });

  it('gives an error its first line, a file error it cannot name its errno, another object its JSON', () => {
    expect(describeFailure(new Error('connection refused\n    at somewhere'))).toBe('connection refused');
    expect(describeFailure(errnoError(1234))).toBe('file system error (errno 1234)');
    expect(describeFailure({ reason: 'odd' })).toBe('{"reason":"odd"}');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(describeFailure(circular)).toBe('[object Object]');
    expect(describeFailure('plain words')).toBe('plain words');
    expect(describeFailure(undefined)).toBe('undefined');
  });
});
