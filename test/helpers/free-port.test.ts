import { createServer } from 'node:net';
import { expect, it } from 'vitest';
import { freePort } from './free-port.js';

it('hands out distinct ports below the ephemeral range, each one bindable as the bot binds it', async () => {
  const ports: number[] = [];
  for (let i = 0; i < 50; i++) ports.push(await freePort());
  expect(new Set(ports).size).toBe(50);
  for (const port of ports) expect(port).toBeLessThan(32_768);
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: ports[0] }, resolve);
  });
  await new Promise((resolve) => server.close(resolve));
});
