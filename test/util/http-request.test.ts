import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpPools, sendHttpRequest } from '../../src/util/http-request.js';

describe('sendHttpRequest', () => {
  let server: http.Server;
  let url: string;
  const pools = new HttpPools(4);

  beforeAll(async () => {
    // Sends the headers and the first bytes of a body at once, and never finishes it.
    server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"status":');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/slow`;
  });
  afterAll(async () => {
    pools.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("rejects with the signal's reason when aborted halfway through a response", async () => {
    const controller = new AbortController();
    const reason = new Error('the thread was reset');
    const pending = sendHttpRequest(pools, { method: 'GET', url, headers: {}, signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it('rejects with ETIMEDOUT when the whole exchange outlasts its deadline', async () => {
    const started = Date.now();
    await expect(
      sendHttpRequest(pools, { method: 'GET', url, headers: {}, deadlineMs: 200 }),
    ).rejects.toMatchObject({
      code: 'ETIMEDOUT',
    });
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
