import { createServer } from 'node:net';
import { StartupError } from '../config/errors.js';
import type { Config } from '../config/index.js';

/**
 * That PORT and ADMIN_PORT can be listened on, checked with the other start-up checks so a port another
 * process holds is reported with whatever else is wrong, not only once those are fixed. The bot listens
 * moments later; a port taken in between still fails the start then.
 */
export async function checkPortsFree(config: Pick<Config, 'port' | 'adminPort' | 'host'>): Promise<void> {
  const taken = await Promise.all(
    (['PORT', 'ADMIN_PORT'] as const).map(async (variable) => {
      const port = variable === 'PORT' ? config.port : config.adminPort;
      return (await canListen(port, config.host)) ? [] : [`${variable} ${port}`];
    }),
  );
  const inUse = taken.flat();
  if (inUse.length > 0)
    throw new StartupError(
      `${inUse.join(' and ')} ${inUse.length === 1 ? 'is' : 'are'} already in use by another process`,
    );
}

/** Whether `port` can be listened on as the bot listens (every interface unless `host`). Only "in use" is false. */
function canListen(port: number, host: string | undefined): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' ? resolve(false) : reject(error),
    );
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
