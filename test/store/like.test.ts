import { describe, expect, it } from 'vitest';
import { startsWithPattern } from '../../src/store/like.js';

describe('startsWithPattern', () => {
  it.each([
    ['T1:C1:', 'T1:C1:%'],
    ['T_1:', 'T\\_1:%'],
    ['100%:', '100\\%:%'],
    ['a\\b', 'a\\\\b%'],
    ['', '%'],
  ])('%s → %s', (prefix, pattern) => {
    expect(startsWithPattern(prefix)).toBe(pattern);
  });
});
