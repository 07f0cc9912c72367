import { describe, expect, it } from 'vitest';
import { storableJson, storableText } from '../../src/util/storable-text.js';

describe('storableText', () => {
  it('drops NULs and keeps every other character', () => {
    expect(storableText('a\u0000b\u0000\u0000c')).toBe('abc');
    expect(storableText('tab\there, emoji 🎉, accents é')).toBe('tab\there, emoji 🎉, accents é');
  });

  it('replaces a lone surrogate with U+FFFD and keeps a pair whole', () => {
    expect(storableText('x\uD83Dy')).toBe('x\uFFFDy');
    expect(storableText('x\uDE00y')).toBe('x\uFFFDy');
    expect(storableText('end\uD83D')).toBe('end\uFFFD');
    expect(storableText('\uD83D\uDE00')).toBe('😀');
  });
});

describe('storableJson', () => {
  it('cleans every string in a nested value and leaves the rest as JSON has it', () => {
    const value = { text: 'a\u0000b', list: ['\uD83D', 1, true, null], nested: { words: 'c\u0000' } };
    expect(JSON.parse(storableJson(value))).toEqual({
      text: 'ab',
      list: ['\uFFFD', 1, true, null],
      nested: { words: 'c' },
    });
  });
});
