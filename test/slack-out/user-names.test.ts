import { WebClient } from '@slack/web-api';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { cachedUserNameResolver } from '../../src/slack-out/user-names.js';
import { FakeSlack } from '../fakes/slack.js';
import { sleep } from '../helpers/wait.js';

/**
 * Moves the cache's clock on. lru-cache keeps the `performance` object it found at import and calls its
 * `now()`; vi.useFakeTimers swaps in another object, which the cache never sees, so `now` itself is
 * spied on. The cache also reuses one reading of the clock for 1 ms (a real timer): waiting that 1 ms makes
 * its next look read the clock moved on.
 */
async function advanceCacheClock(ms: number): Promise<void> {
  const now = performance.now();
  vi.spyOn(performance, 'now').mockReturnValue(now + ms);
  await sleep(1);
}

describe('the user-name cache', () => {
  let slack: FakeSlack;
  let client: WebClient;
  beforeAll(async () => {
    slack = await FakeSlack.start({
      users: {
        U0ALICE: { name: 'alice', realName: 'Alice Liddell' },
        U0BOB: { name: 'bob', realName: 'Bob' },
        U0CAROL: { name: 'carol', realName: 'Carol' },
      },
    });
    client = new WebClient(slack.botToken, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } });
  });
  afterAll(() => slack.stop());
  afterEach(() => {
    vi.restoreAllMocks();
  });

  const lookupsOf = (user: string) => slack.callsOf('users.info').filter((call) => call.args.user === user);

  it('asks Slack once per person, however many mentions arrive at once', async () => {
    const resolve = cachedUserNameResolver(client);
    const names = await Promise.all(Array.from({ length: 5 }, () => resolve('U0ALICE')));
    expect(new Set(names).size).toBe(1);
    expect(names[0]).toBeTruthy();
    expect(await resolve('U0ALICE')).toBe(names[0]);
    expect(lookupsOf('U0ALICE')).toHaveLength(1);
  });

  it('remembers that an id names nobody, so a repeated bogus mention costs one call', async () => {
    const resolve = cachedUserNameResolver(client);
    expect(await resolve('U0NOBODY')).toBeUndefined();
    expect(await resolve('U0NOBODY')).toBeUndefined();
    expect(lookupsOf('U0NOBODY')).toHaveLength(1);
  });

  it('forgets the least recently used name past its size, and every name after its time', async () => {
    const resolve = cachedUserNameResolver(client, { maxEntries: 2, ttlMs: 200 });
    const before = lookupsOf('U0BOB').length;
    await resolve('U0BOB');
    await resolve('U0CAROL');
    await resolve('U0BOB');
    await resolve('U0ALICE'); // Carol, used least recently, goes.
    await resolve('U0BOB');
    expect(lookupsOf('U0BOB')).toHaveLength(before + 1);
    const carol = lookupsOf('U0CAROL').length;
    await resolve('U0CAROL');
    expect(lookupsOf('U0CAROL')).toHaveLength(carol + 1);
    await advanceCacheClock(250);
    await resolve('U0BOB');
    expect(lookupsOf('U0BOB')).toHaveLength(before + 2);
  });

  it('asks again soon after Slack failed to answer', async () => {
    const resolve = cachedUserNameResolver(client, { ttlMs: 200 });
    slack.failNext('users.info', { type: 'http', status: 503 });
    expect(await resolve('U0CAROL')).toBeUndefined();
    await advanceCacheClock(250);
    expect(await resolve('U0CAROL')).toBeTruthy();
  });

  it('remembers a failed lookup for a minute only, a name for as long as it was told', async () => {
    const resolve = cachedUserNameResolver(client);
    expect(await resolve('U0ALICE')).toBeTruthy();
    slack.failNext('users.info', { type: 'http', status: 503 });
    expect(await resolve('U0BOB')).toBeUndefined();
    const [alice, bob] = [lookupsOf('U0ALICE').length, lookupsOf('U0BOB').length];
    await advanceCacheClock(59_000);
    await resolve('U0BOB');
    expect(lookupsOf('U0BOB')).toHaveLength(bob);
    await advanceCacheClock(2_000);
    expect(await resolve('U0BOB')).toBeTruthy();
    expect(await resolve('U0ALICE')).toBeTruthy();
    expect(lookupsOf('U0BOB')).toHaveLength(bob + 1);
    expect(lookupsOf('U0ALICE')).toHaveLength(alice);
  });
});
