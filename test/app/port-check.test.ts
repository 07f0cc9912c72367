import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { checkPortsFree } from '../../src/app/port-check.js';
import { freePort } from '../helpers/free-port.js';

describe('checkPortsFree', () => {
  const holders: Server[] = [];
  afterEach(async () => {
    await Promise.all(holders.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  });
  /** A port another process would hold. */
  const held = async () => {
    const port = await freePort();
    const server = createServer();
    holders.push(server);
    await new Promise<void>((resolve) => server.listen(port, resolve));
    return port;
  };

  it('passes when both ports are free, and leaves them free', async () => {
    const config = { port: await freePort(), adminPort: await freePort(), host: undefined };
    await checkPortsFree(config);
    await checkPortsFree(config);
  });

  it('names the variable and the port another process holds', async () => {
    const port = await held();
    await expect(checkPortsFree({ port, adminPort: await freePort(), host: undefined })).rejects.toThrow(
      `PORT ${port} is already in use by another process`,
    );
  });

  it("in Socket Mode with OAuth checks PORT on every address, where Bolt's install-page server listens", async () => {
    const port = await freePort();
    const server = createServer();
    holders.push(server);
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.2', resolve));
    const slack = (connection: 'socket' | 'http', auth: 'oauth' | 'single') =>
      ({ connection: { mode: connection }, auth: { mode: auth } }) as Parameters<
        typeof checkPortsFree
      >[0]['slack'];
    const config = { port, adminPort: await freePort(), host: '127.0.0.1' };
    await expect(checkPortsFree({ ...config, slack: slack('socket', 'oauth') })).rejects.toThrow(
      `PORT ${port} is already in use by another process`,
    );
    // Elsewhere PORT listens on HOST alone, which is free.
    await checkPortsFree({ ...config, slack: slack('socket', 'single') });
    await checkPortsFree({ ...config, slack: slack('http', 'oauth') });
  });

  it('names HOST when it is not an address of this machine', async () => {
    for (const host of ['10.255.255.1', 'nowhere.invalid'])
      await expect(
        checkPortsFree({ port: await freePort(), adminPort: await freePort(), host }),
      ).rejects.toThrow(
        new RegExp(
          // EAI_AGAIN where no name server answers at all.
          `^HOST ${host} (is not an address of this machine \\((EADDRNOTAVAIL|ENOTFOUND)\\)|could not be looked up)`,
        ),
      );
  });

  it('names both in one line when both are held', async () => {
    const port = await held();
    const adminPort = await held();
    await expect(checkPortsFree({ port, adminPort, host: '127.0.0.1' })).rejects.toThrow(
      `PORT ${port} and ADMIN_PORT ${adminPort} are already in use by another process`,
    );
  });
});
