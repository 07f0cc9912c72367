import type { FakeSlack } from '../fakes/slack.js';
import type { InstallChoice } from '../fakes/slack-oauth.js';

export interface InstallJourney {
  /** The fake Slack consent page's URL the app's install page sent the person to. */
  authorizeUrl: string;
  /** Where Slack sent the browser back to: the app's redirect URL with `code` and `state`. */
  redirectUrl: string;
  /** The app's answer to that redirect (its success or failure page). */
  status: number;
  body: string;
}

/**
 * A person installs the app as a browser would, without one: opens the app's install page (`installUrl`,
 * e.g. `/slack/install`), follows its "Add to Slack" link (or redirect) to the fake Slack, presses Allow for
 * `choice` (a workspace, or an org when org-wide), and is sent back to the app's redirect URL carrying the
 * cookie the install page set (Bolt's installer checks its state against it).
 */
export async function installThroughSlack(
  installUrl: string,
  slack: FakeSlack,
  choice: InstallChoice,
): Promise<InstallJourney> {
  const page = await fetch(installUrl, { redirect: 'manual' });
  const cookie = page.headers
    .getSetCookie()
    .map((setCookie) => setCookie.split(';')[0])
    .join('; ');
  const authorizeUrl = page.status === 302 ? (page.headers.get('location') ?? '') : linkIn(await page.text());
  const redirectUrl = slack.oauth.approve(authorizeUrl, choice);
  const back = await fetch(redirectUrl, { headers: cookie ? { cookie } : {}, redirect: 'manual' });
  return { authorizeUrl, redirectUrl, status: back.status, body: await back.text() };
}

/** The consent page link of an "Add to Slack" page. */
function linkIn(html: string): string {
  const href = /href="([^"]*\/oauth\/v2\/authorize[^"]*)"/.exec(html)?.[1];
  if (href === undefined) throw new Error(`the install page has no link to Slack's consent page:\n${html}`);
  return href.replaceAll('&amp;', '&').replaceAll('&#38;', '&');
}
