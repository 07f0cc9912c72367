import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export type Env = Record<string, string | undefined>;

/**
 * What the bot serves on each of its two listeners, keyed by the variable that sets the port (README,
 * Operations). It mirrors the bot's routes: a route moved there must be moved here.
 */
export const LISTENERS = {
  PORT: { defaultPort: 3000, paths: ['/slack/events', '/healthz', '/readyz'] },
  ADMIN_PORT: { defaultPort: 9090, paths: ['/metrics', '/healthz', '/readyz'] },
} as const;
export type Listener = keyof typeof LISTENERS;

const DEFAULT_SHUTDOWN_TIMEOUT_MS = 20_000;
/** Time the process needs after the drain: closing the store and Slack connections, then exiting. */
export const EXIT_MARGIN_MS = 5_000;
/** Slack's limit on open Socket Mode connections per app token. */
export const SLACK_SOCKET_CONNECTION_LIMIT = 10;

export function listenerPort(listener: Listener, env: Env): number {
  return Number(env[listener] ?? LISTENERS[listener].defaultPort);
}

/** The listener that a port number belongs to in a process with this environment. */
export function listenerOn(port: number, env: Env): Listener | undefined {
  return (Object.keys(LISTENERS) as Listener[]).find((listener) => listenerPort(listener, env) === port);
}

export function shutdownTimeoutMs(env: Env): number {
  return Number(env.SHUTDOWN_TIMEOUT_MS ?? DEFAULT_SHUTDOWN_TIMEOUT_MS);
}

export function readProjectFile(relative: string): string {
  return readFileSync(path.join(ROOT, relative), 'utf8');
}

// ---------------------------------------------------------------------------------------------------------
// kubectl

export type KubectlStatus = { ok: true } | { ok: false; reason: string };

/** kubectl with a kustomize recent enough for these manifests (components, `labels`, `patches`). */
export function kubectlStatus(): KubectlStatus {
  const result = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
  if (result.error) return { ok: false, reason: `kubectl is not installed (${result.error.message})` };
  if (result.status !== 0) return { ok: false, reason: `kubectl version failed: ${result.stderr.trim()}` };
  const kustomize = String(JSON.parse(result.stdout).kustomizeVersion ?? '');
  const major = Number(/^v(\d+)\./.exec(kustomize)?.[1] ?? 0);
  if (major < 5) {
    return {
      ok: false,
      reason: `kubectl's kustomize is ${kustomize || 'missing'}; the manifests need kustomize v5 (kubectl 1.27 or later)`,
    };
  }
  return { ok: true };
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** `kubectl kustomize <dir>`, parsed. */
export function kustomize(dir: string): K8sObject[] {
  const result = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`kubectl kustomize ${dir} failed:\n${result.stderr}`);
  return parseAllDocuments(result.stdout).map((document) => {
    if (document.errors.length > 0) throw new Error(`kubectl kustomize ${dir}: ${document.errors[0]}`);
    return document.toJS() as K8sObject;
  });
}

// ---------------------------------------------------------------------------------------------------------
// Dockerfile

export interface Instruction {
  keyword: string;
  args: string;
}

export interface Stage {
  image: string;
  name?: string;
  instructions: Instruction[];
}

/** Stages and their instructions; continuation lines joined, comments and parser directives dropped. */
export function parseDockerfile(text: string): Stage[] {
  const logicalLines: string[] = [];
  let pending = '';
  for (const line of text.split('\n')) {
    if (pending === '' && /^\s*#/.test(line)) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    logicalLines.push(pending + line);
    pending = '';
  }
  const stages: Stage[] = [];
  for (const line of logicalLines) {
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!match?.[1] || match[2] === undefined) continue;
    const keyword = match[1].toUpperCase();
    const args = match[2].trim();
    if (keyword === 'FROM') {
      const [image = '', , name] = args.split(/\s+/);
      stages.push({ image, name, instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`Dockerfile: ${keyword} before FROM`);
    stage.instructions.push({ keyword, args });
  }
  return stages;
}

/** `ENV A=1 B=2` instructions of a stage, merged. */
export function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { keyword, args } of stage.instructions) {
    if (keyword !== 'ENV') continue;
    for (const pair of args.split(/\s+/)) {
      const [name = '', ...value] = pair.split('=');
      env[name] = value.join('=');
    }
  }
  return env;
}

/** The uid and gid of the final stage's USER, which must be numeric. */
export function imageUser(): { uid: number; gid: number | undefined; raw: string } {
  const stages = parseDockerfile(readProjectFile('Dockerfile'));
  const user = stages.at(-1)?.instructions.findLast((instruction) => instruction.keyword === 'USER');
  if (!user) throw new Error('the final stage of the Dockerfile sets no USER');
  const [uid = '', gid] = user.args.split(':');
  return { uid: Number(uid), gid: gid === undefined ? undefined : Number(gid), raw: user.args };
}
