import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';
import { Transform } from 'node:stream';

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
  /** The client's bytes pass through here to the target, and are recorded in `sent`. */
  toUpstream?: Transform;
  sent: Buffer[];
  /** Whether client bytes are being piped to the target, and the target's bytes to the client. */
  up: boolean;
  down: boolean;
}

/**
 * `blackholed`: no byte moves; `replies-lost`: the client's bytes reach the target (so its statements run and
 * commit) but nothing comes back; `down`: connections are reset as they arrive.
 */
type Mode = 'forwarding' | 'blackholed' | 'replies-lost' | 'down';

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
  /** Client sockets left open and silent by `strand()`, closed by `stop()`. */
  private readonly stranded = new Set<Socket>();
  /** What each connection's client sent on to the target, in order, for `countSent`. */
  private readonly sent: Buffer[][] = [];
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

  /**
   * How many times clients sent `bytes` on to the target (e.g. one PostgreSQL statement), counted in each
   * connection's byte stream, so a sequence split across TCP segments is found too.
   */
  countSent(bytes: Buffer): number {
    let count = 0;
    for (const chunks of this.sent) {
      const stream = Buffer.concat(chunks);
      for (let at = stream.indexOf(bytes); at !== -1; at = stream.indexOf(bytes, at + bytes.length)) count++;
    }
    return count;
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
   * The target is gone until `restore()`: every open connection is cut, and each new one is reset as soon as
   * it arrives (a database that is down or unreachable, with the network saying so).
   */
  down(): void {
    this.mode = 'down';
    this.cut();
  }

  /**
   * From now on bytes reach the target but nothing comes back: statements run and commit while the client
   * hears nothing (a reply lost on the way, a one-way partition). The target's answers wait, and flow after
   * `restore()` to whichever client still listens.
   */
  loseReplies(): void {
    this.mode = 'replies-lost';
    for (const link of this.links) this.sync(link);
  }

  /**
   * Every open connection goes silent for good, as when its peer vanished without a word (a failover, a
   * dropped NAT entry): it stays open, nothing it sends arrives, nothing comes back, and the target's side
   * is closed. New connections are not affected; `restore()` does not bring these back.
   */
  strand(): void {
    for (const link of this.links) {
      link.client.unpipe();
      link.client.pause();
      if (link.upstream) {
        link.upstream.removeAllListeners('close');
        link.upstream.unpipe();
        link.upstream.destroy();
      }
      this.stranded.add(link.client);
    }
    this.links.clear();
  }

  /**
   * From now on no byte moves either way: open connections stay open but silent, and new ones are accepted
   * and held without reaching the target. Bytes sent meanwhile wait, as TCP would retransmit them, and flow
   * after `restore()`; a client's own timeout is what notices the outage.
   */
  blackhole(): void {
    this.mode = 'blackholed';
    for (const link of this.links) this.sync(link);
  }

  /**
   * Forwards again: held bytes flow, connections accepted during a blackhole reach the target, and new
   * connections are accepted again after `down()`.
   */
  restore(): void {
    this.mode = 'forwarding';
    for (const link of this.links) this.sync(link);
  }

  /** Stops listening and destroys every connection. */
  async stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const link of this.links) {
      link.client.destroy();
      link.upstream?.destroy();
    }
    this.links.clear();
    for (const client of this.stranded) client.destroy();
    this.stranded.clear();
    await closed;
  }

  private accept(client: Socket): void {
    // Resets are the point of this class; they must not surface as unhandled errors.
    client.on('error', () => {});
    if (this.mode === 'down') {
      client.resetAndDestroy();
      return;
    }
    const link: Link = { client, up: false, down: false, sent: [] };
    this.links.add(link);
    this.sent.push(link.sent);
    client.on('close', () => {
      this.links.delete(link);
      this.stranded.delete(client);
      link.upstream?.destroy();
    });
    this.sync(link);
  }

  /**
   * Pipes each direction the mode lets through and pauses the others. Unpiped streams pause and keep what
   * they already read, so nothing is lost or reordered; the target is connected on first use.
   */
  private sync(link: Link): void {
    if (link.client.destroyed) return;
    const up = this.mode === 'forwarding' || this.mode === 'replies-lost';
    const down = this.mode === 'forwarding';
    if (up && !link.upstream) {
      const upstream = createConnection({ host: this.target.host, port: this.target.port });
      link.upstream = upstream;
      const sent = link.sent;
      link.toUpstream = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          sent.push(chunk);
          callback(null, chunk);
        },
      });
      link.toUpstream.pipe(upstream);
      upstream.on('error', () => {});
      // The target going away ends the client's connection too, as a direct connection would.
      upstream.on('close', () => link.client.destroy());
    }
    const { client, upstream, toUpstream } = link;
    if (!upstream || !toUpstream) {
      client.pause();
      return;
    }
    if (up && !link.up) client.pipe(toUpstream);
    if (!up && link.up) {
      client.unpipe(toUpstream);
      client.pause();
    }
    if (down && !link.down) upstream.pipe(client);
    if (!down && link.down) {
      upstream.unpipe(client);
      upstream.pause();
    }
    link.up = up;
    link.down = down;
  }
}
