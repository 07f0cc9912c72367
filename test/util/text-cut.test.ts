import { describe, expect, it } from 'vitest';
import { cutAt, cutIndex } from '../../src/util/text-cut.js';

describe('cutAt', () => {
  it('keeps a character written as two code units whole, before the cut rather than split by it', () => {
    expect(cutAt('ab😀c', 3)).toBe('ab');
    expect(cutAt('ab😀c', 4)).toBe('ab😀');
    expect(cutAt('😀😀', 3)).toBe('😀');
  });

  it('cuts anywhere else where asked, and past the end keeps the whole text', () => {
    expect(cutAt('abcdef', 3)).toBe('abc');
    expect(cutAt('ab', 10)).toBe('ab');
    expect(cutAt('ab', 0)).toBe('');
  });

  it('never cuts nothing but the empty text: one pair at the start is kept whole', () => {
    expect(cutIndex('😀abc', 1)).toBe(2);
  });
});
