import { createServer } from 'node:net';
import { StartupError } from '../config/errors.js';
import type { Config } from '../config/index.js';

/**
 * That PORT and ADMIN_PORT can be listened on, checked with the other start-up checks so a port another
 * process holds is reported with whatever else is wrong, not only once those are fixed. The bot listens
 * moments later; a port taken in between still fails the start then.
 */
export async function checkPortsFree(
  config: Pick<Config, 'port' | 'adminPort' | 'host'> & {
    slack?: Pick<Config['slack'], 'auth' | 'connection'>;
  },
): Promise<void> {
  const taken = await Promise.all(
    (['PORT', 'ADMIN_PORT'] as const).map(async (variable) => {
      const port = variable === 'PORT' ? config.port : config.adminPort;
      const host = variable === 'PORT' ? publicPortHost(config) : config.host;
      return (await canListen(port, host)) ? [] : [`${variable} ${port}`];
    }),
  );
  const inUse = taken.flat();
  if (inUse.length > 0)
    throw new StartupError(
      `${inUse.join(' and ')} ${inUse.length === 1 ? 'is' : 'are'} already in use by another process`,
    );
}

/**
 * Where PORT listens: HOST, but in Socket Mode with OAuth every address. Bolt's Socket Mode receiver serves
 * the install pages (and the health routes beside them) on a server of its own, which it listens on with a
 * port and no address, and whose errors nothing can handle: a port held on any address must fail here.
 */
function publicPortHost(
  config: Pick<Config, 'host'> & { slack?: Pick<Config['slack'], 'auth' | 'connection'> },
): string | undefined {
  const boltsOwnServer = config.slack?.connection.mode === 'socket' && config.slack.auth.mode === 'oauth';
  return boltsOwnServer ? undefined : config.host;
}

/** Whether `port` can be listened on as the bot listens (every interface unless `host`). Only "in use" is false. */
function canListen(port: number, host: string | undefined): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') resolve(false);
      // HOST names no address of this machine (or none at all): the bot could listen on neither port.
      else if (host !== undefined && error.code === 'EAI_AGAIN')
        reject(
          new StartupError(
            `HOST ${host} could not be looked up for now (EAI_AGAIN): no name server answered`,
          ),
        );
      else if (host !== undefined && ['EADDRNOTAVAIL', 'ENOTFOUND'].includes(error.code ?? ''))
        reject(
          new StartupError(
            `HOST ${host} is not an address of this machine (${error.code}); leave HOST unset for every address`,
          ),
        );
      else reject(error);
    });
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
