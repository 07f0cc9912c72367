import http from 'node:http';
import https from 'node:https';

/** Longest an idle keep-alive socket is kept (less when the server announces a shorter Keep-Alive). */
const IDLE_SOCKET_MS = 30_000;

export interface KeepAliveAgents {
  http: http.Agent;
  https: https.Agent;
}

/**
 * Connection pools for an outbound HTTP client. `timeout` is what makes Node close an idle socket a second
 * before the server's `Keep-Alive: timeout` hint (Node applies the hint only when the agent has a timeout);
 * without it a socket the server is closing gets reused and the request fails with ECONNRESET. Requests
 * set their own timeouts, which take precedence while they run.
 */
export function keepAliveAgents(maxSockets: number): KeepAliveAgents {
  const options = { keepAlive: true, maxSockets, timeout: IDLE_SOCKET_MS };
  return { http: new http.Agent(options), https: new https.Agent(options) };
}
