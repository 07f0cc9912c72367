/**
 * Where a text may be cut at or before `index` without splitting a character written as two UTF-16 code units
 * (an emoji, many CJK characters). A lone half has no UTF-8 form: Slack would show it broken, and the Web API
 * client's form encoding either refuses a string that ends in one (ERR_INVALID_URI, so the post never
 * leaves) or merges it with the character after it into another one.
 */
export function cutIndex(text: string, index: number): number {
  if (index <= 0 || index >= text.length) return Math.max(0, index);
  const before = text.charCodeAt(index - 1);
  const after = text.charCodeAt(index);
  const splitsPair = before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff;
  // At index 1 there is nothing before the pair to keep: keep the pair whole rather than cut nothing.
  if (splitsPair) return index > 1 ? index - 1 : index + 1;
  return index;
}

/** The first `chars` UTF-16 code units of `text`, or one fewer where the last would be half a character. */
export function cutAt(text: string, chars: number): string {
  return text.slice(0, cutIndex(text, chars));
}
