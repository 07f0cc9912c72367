import { describe, expect, it } from 'vitest';
import { hardWrap, openFenceAtEnd, splitLines } from '../../src/slack-out/fences.js';

describe('code fences', () => {
  it('knows which fence is open at the end, closed only by a marker as long of the same kind', () => {
    expect(openFenceAtEnd('text\n```ts\nconst a = 1;')?.marker).toBe('```');
    expect(openFenceAtEnd('```ts\ncode\n```')).toBeUndefined();
    expect(openFenceAtEnd('````\n```\nstill code')?.marker).toBe('````');
    expect(openFenceAtEnd('~~~\n```\nstill code')?.marker).toBe('~~~');
    expect(openFenceAtEnd('  - item\n    ```\n    nested')?.indent).toBe('    ');
  });

  it('reads a backtick run with a backtick after it as inline code, not a fence', () => {
    expect(openFenceAtEnd('```inline``` and more')).toBeUndefined();
  });
});

describe('splitLines', () => {
  it('keeps text that fits in one part', () => {
    expect(splitLines('one\ntwo', 100)).toEqual(['one\ntwo']);
  });

  it('cuts between lines, no part over the limit', () => {
    const lines = Array.from({ length: 10 }, (_, i) => `line number ${i}`);
    const parts = splitLines(lines.join('\n'), 40);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(40);
    expect(parts.join('\n')).toBe(lines.join('\n'));
  });

  it('closes a code block at a cut and opens it again in the next part', () => {
    const code = Array.from({ length: 8 }, (_, i) => `x${i} = ${i}`);
    const parts = splitLines(['```py', ...code, '```'].join('\n'), 40);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.startsWith('```py\n')).toBe(true);
      expect(part.endsWith('\n```')).toBe(true);
      expect(part.length).toBeLessThanOrEqual(40);
    }
    const body = parts.flatMap((part) => part.split('\n').slice(1, -1));
    expect(body).toEqual(code);
  });
});

describe('hardWrap', () => {
  it('splits a long line at spaces, or at the limit when a word is longer', () => {
    expect(hardWrap('aaa bbb ccc', 7)).toEqual(['aaa bbb', 'ccc']);
    expect(hardWrap('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
    expect(hardWrap('short', 10)).toEqual(['short']);
  });
});
