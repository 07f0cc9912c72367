/**
 * Neither PostgreSQL nor the embedded store can keep U+0000 in a text column, and a lone UTF-16 surrogate
 * has no UTF-8 form (the driver would silently turn it into U+FFFD). Both are legal in JSON, so words from
 * the agent service or from Slack may hold them: they are cleaned where those words come in, so that what
 * is posted is what is stored, and the store never refuses it.
 */

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** The text without NULs, and with each lone surrogate replaced by U+FFFD. */
export function storableText(text: string): string {
  return text.replaceAll('\u0000', '').replace(LONE_SURROGATE, '\uFFFD');
}

/** JSON of a value whose every string is made storable (for payloads that are later read back as text). */
export function storableJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    typeof inner === 'string' ? storableText(inner) : inner,
  );
}
