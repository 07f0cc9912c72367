import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';

/** Where the proxy forwards to: `{ host, port }`, or a URL such as `postgres://user@127.0.0.1:5432/db`. */
export type ProxyTarget = { host: string; port: number } | string;

export interface TcpProxyOptions {
  target: ProxyTarget;
  /** Port to listen on, 127.0.0.1 only; default: any free port. */
  port?: number;
}

/** One client connection and, once forwarding has begun, its upstream twin. */
interface Link {
  client: Socket;
  upstream?: Socket;
}

type Mode = 'forwarding' | 'blackholed';

function parseTarget(target: ProxyTarget): { host: string; port: number; url?: URL } {
  if (typeof target !== 'string') return target;
  const url = new URL(target);
  if (url.port === '') throw new Error(`TcpProxy: target ${target} names no port`);
  return { host: url.hostname, port: Number(url.port), url };
}

/**
 * A TCP proxy on 127.0.0.1 in front of one host:port (in tests: PostgreSQL), for injecting the network
 * faults a store must survive: `cut()` drops every connection at once, `blackhole()` keeps connections
 * open but moves no bytes (a half-open network), `restore()` heals it.
 */
export class TcpProxy {
  private readonly server: Server;
  private readonly target: { host: string; port: number; url?: URL };
  private readonly links = new Set<Link>();
  private mode: Mode = 'forwarding';

  private constructor(target: ProxyTarget) {
    this.target = parseTarget(target);
    this.server = createServer((client) => this.accept(client));
  }

  static async start(options: TcpProxyOptions): Promise<TcpProxy> {
    const proxy = new TcpProxy(options.target);
    await new Promise<void>((resolve, reject) => {
      proxy.server.once('error', reject);
      proxy.server.listen(options.port ?? 0, '127.0.0.1', () => {
        proxy.server.off('error', reject);
        resolve();
      });
    });
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The target URL with its host and port replaced by the proxy's (`tcp://127.0.0.1:<port>` for a host:port target). */
  get url(): string {
    if (!this.target.url) return `tcp://127.0.0.1:${this.port}`;
    const url = new URL(this.target.url);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  /** Client connections currently open through the proxy, including ones held by a blackhole. */
  get connectionCount(): number {
    return this.links.size;
  }

  /**
   * Drops every open connection at once with a TCP reset on both sides, as a network failure would end
   * them. Connections made afterwards work (unless blackholed).
   */
  cut(): void {
    for (const link of this.links) {
      link.client.resetAndDestroy();
      link.upstream?.resetAndDestroy();
    }
    this.links.clear();
  }

  /**
   * From now on no byte moves either way: open connections stay open but silent, and new ones are accepted
   * and held without reaching the target. Bytes sent meanwhile wait, as TCP would retransmit them, and flow
   * after `restore()`; a client's own timeout is what notices the outage.
   */
  blackhole(): void {
    if (this.mode === 'blackholed') return;
    this.mode = 'blackholed';
    for (const link of this.links) this.stopFlow(link);
  }

  /** Forwards again: held bytes flow, and connections accepted during the blackhole reach the target. */
  restore(): void {
    if (this.mode === 'forwarding') return;
    this.mode = 'forwarding';
    for (const link of this.links) this.startFlow(link);
  }

  /** Stops listening and destroys every connection. */
  async stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const link of this.links) {
      link.client.destroy();
      link.upstream?.destroy();
    }
    this.links.clear();
    await closed;
  }

  private accept(client: Socket): void {
    const link: Link = { client };
    this.links.add(link);
    // Resets are the point of this class; they must not surface as unhandled errors.
    client.on('error', () => {});
    client.on('close', () => {
      this.links.delete(link);
      link.upstream?.destroy();
    });
    if (this.mode === 'forwarding') this.startFlow(link);
    else client.pause();
  }

  /** Connects upstream on first use and pipes both directions. */
  private startFlow(link: Link): void {
    if (link.client.destroyed) return;
    if (!link.upstream) {
      const upstream = createConnection({ host: this.target.host, port: this.target.port });
      link.upstream = upstream;
      upstream.on('error', () => {});
      // The target going away ends the client's connection too, as a direct connection would.
      upstream.on('close', () => link.client.destroy());
    }
    link.client.pipe(link.upstream);
    link.upstream.pipe(link.client);
  }

  /** Unpiped streams pause and keep what they already read, so nothing is lost or reordered. */
  private stopFlow(link: Link): void {
    link.client.unpipe();
    link.client.pause();
    if (link.upstream) {
      link.upstream.unpipe();
      link.upstream.pause();
    }
  }
}
