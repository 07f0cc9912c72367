import type { IncomingMessage } from 'node:http';

export const LOOPBACK = '127.0.0.1';

const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/i;

/**
 * Whether a request to the demo comes from this machine's own page (or the bot), not from another site.
 * The servers listen on loopback only, but a browser on this machine can still be made to reach them:
 * a DNS-rebound name carries a foreign Host, another site's page a foreign Origin (on POSTs and on
 * fetches) or a cross-site Sec-Fetch-Site (even on a plain GET such as an <img>). A link followed to the
 * page itself (a GET navigation) is fine: only what the page's own script does has effects.
 */
export function isLocalRequest(req: IncomingMessage): boolean {
  const host = req.headers.host ?? '';
  if (!LOOPBACK_HOST.test(host)) return false;
  const origin = req.headers.origin;
  if (origin !== undefined && origin.toLowerCase() !== `http://${host.toLowerCase()}`) return false;
  const site = req.headers['sec-fetch-site'];
  if (site === undefined || site === 'same-origin' || site === 'none') return true;
  return req.headers['sec-fetch-mode'] === 'navigate' && (req.method === 'GET' || req.method === 'HEAD');
}
