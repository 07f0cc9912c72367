declare module 'pg/lib/utils.js' {
  /** How `pg` turns a query parameter into the text (or bytes) it sends. */
  export function prepareValue(value: unknown): string | Buffer | null;
}
