import type { BotMetrics } from '../observability/metrics.js';

/** A reconnect shorter than this does not make the bot unready (Slack asks clients to reconnect now and then). */
export const SOCKET_GRACE_MS = 5_000;

/**
 * Socket Mode's connection to Slack, for readiness and metrics: ready while the WebSocket is open and Slack said
 * hello, or for a short grace period after it closed (a routine reconnect); counts reconnects.
 */
export class SocketHealth {
  private connected = false;
  private everConnected = false;
  private downSince = Date.now();

  constructor(
    /** The Socket Mode client's connection events. */
    socket: { on(event: 'connected' | 'disconnected' | 'reconnecting', listener: () => void): unknown },
    metrics: BotMetrics,
    private readonly graceMs = SOCKET_GRACE_MS,
  ) {
    // `connected` is emitted on Slack's hello, not on the WebSocket's open.
    socket.on('connected', () => {
      if (this.everConnected) metrics.slackSocketReconnects.inc();
      this.everConnected = true;
      this.connected = true;
      metrics.slackSocketConnected.set(1);
    });
    const down = () => {
      if (this.connected) this.downSince = Date.now();
      this.connected = false;
      metrics.slackSocketConnected.set(0);
    };
    socket.on('disconnected', down);
    socket.on('reconnecting', down);
  }

  ready(): boolean {
    return this.connected || (this.everConnected && Date.now() - this.downSince < this.graceMs);
  }
}
