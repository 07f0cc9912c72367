/** Longer than any id a service hands out: such a value is not an id. */
const MAX_SESSION_ID_CHARS = 256;

/**
 * A session id the service handed us goes into a URL path: `.` and `..` would be normalised into another
 * request (`DELETE /session/{agent}/..` is `DELETE /session/`), and control characters or huge values are
 * not ids. Everything else is sent percent-encoded.
 */
export function isValidSessionId(id: string): boolean {
  return (
    id !== '' &&
    id !== '.' &&
    id !== '..' &&
    id.length <= MAX_SESSION_ID_CHARS &&
    ![...id].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f)
  );
}

/** One path segment, percent-encoded. */
export function enc(segment: string): string {
  return encodeURIComponent(segment);
}

export function requireId(name: string, value: string): void {
  // An empty segment would silently address a different resource (e.g. DELETE /session/{agent}/).
  if (typeof value !== 'string' || value === '') throw new TypeError(`${name} must be a non-empty string`);
}

export function requireSessionId(sessionId: string): void {
  if (typeof sessionId !== 'string' || !isValidSessionId(sessionId)) {
    throw new TypeError('sessionId is not an id that can be sent in a URL path');
  }
}
