import { WebClient } from '@slack/web-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cachedUserNameResolver } from '../../src/slack-out/user-names.js';
import { FakeSlack } from '../fakes/slack.js';
import { sleep } from '../helpers/wait.js';

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
    await sleep(250);
    await resolve('U0BOB');
    expect(lookupsOf('U0BOB')).toHaveLength(before + 2);
  });

  it('asks again soon after Slack failed to answer', async () => {
    const resolve = cachedUserNameResolver(client, { ttlMs: 200 });
    slack.failNext('users.info', { type: 'http', status: 503 });
    expect(await resolve('U0CAROL')).toBeUndefined();
    await sleep(250);
    expect(await resolve('U0CAROL')).toBeTruthy();
  });
});
