import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BotMetrics } from '../../src/observability/metrics.js';
import { SOCKET_GRACE_MS, SocketHealth } from '../../src/slack-in/socket-health.js';

async function value(metrics: BotMetrics, name: string): Promise<number | undefined> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((entry) => entry.name === name);
  return metric?.values[0]?.value;
}

describe('Socket Mode health', () => {
  let socket: EventEmitter;
  let metrics: BotMetrics;
  let health: SocketHealth;

  beforeEach(() => {
    vi.useFakeTimers();
    socket = new EventEmitter();
    metrics = new BotMetrics();
    health = new SocketHealth(socket, metrics);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('is not ready before Slack first says hello', () => {
    expect(health.ready()).toBe(false);
    socket.emit('reconnecting');
    expect(health.ready()).toBe(false);
  });

  it('is ready once connected, and stays ready through a short reconnect', async () => {
    socket.emit('connected');
    expect(health.ready()).toBe(true);
    expect(await value(metrics, 'slack_socket_connected')).toBe(1);
    socket.emit('disconnected');
    expect(await value(metrics, 'slack_socket_connected')).toBe(0);
    vi.advanceTimersByTime(SOCKET_GRACE_MS - 1);
    expect(health.ready()).toBe(true);
    vi.advanceTimersByTime(1);
    expect(health.ready()).toBe(false);
  });

  it('counts reconnects, not the first connection', async () => {
    socket.emit('connected');
    expect(await value(metrics, 'slack_socket_reconnects_total')).toBe(0);
    socket.emit('reconnecting');
    socket.emit('connected');
    expect(await value(metrics, 'slack_socket_reconnects_total')).toBe(1);
    expect(health.ready()).toBe(true);
  });

  it('measures the grace from when the connection dropped, not from the last reconnect attempt', () => {
    socket.emit('connected');
    socket.emit('disconnected');
    vi.advanceTimersByTime(SOCKET_GRACE_MS / 2);
    socket.emit('reconnecting');
    vi.advanceTimersByTime(SOCKET_GRACE_MS / 2);
    expect(health.ready()).toBe(false);
  });
});
