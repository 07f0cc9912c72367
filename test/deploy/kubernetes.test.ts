import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import type { IIngress, INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1';
import type { IConfigMap, IContainer, IContainerPort, IProbe, ISecret, IService } from 'kubernetes-models/v1';
import { beforeAll, describe, expect, it } from 'vitest';
import { ENV_VARIABLES, loadConfig } from '../../src/config/index.js';
import { postgresConnections } from '../../src/store/database.js';
import { schemaProblems } from './kubernetes-schema.js';
import {
  type Env,
  EXIT_MARGIN_MS,
  imageUser,
  type K8sObject,
  kubectlStatus,
  kustomize,
  LISTENERS,
  listenerOn,
  ROOT,
  SLACK_SOCKET_CONNECTION_LIMIT,
  shutdownTimeoutMs,
} from './support.js';

const KUBERNETES = path.join(ROOT, 'deploy/kubernetes');

interface Variant {
  name: string;
  /** The kustomization to render; created by `prepare` when it is not in the repository. */
  dir: string;
  prepare?: () => void;
  mode: 'socket' | 'http';
  autoscaled: boolean;
}

// The Socket Mode deployment with the optional autoscaler, as an operator would combine them.
const SOCKET_WITH_HPA = path.join(ROOT, 'test/.tmp/kustomize-socket-hpa');

const VARIANTS: Variant[] = [
  { name: 'deploy/kubernetes', dir: KUBERNETES, mode: 'socket', autoscaled: false },
  {
    name: 'deploy/kubernetes with components/hpa',
    dir: SOCKET_WITH_HPA,
    prepare: () => {
      const base = path.relative(SOCKET_WITH_HPA, KUBERNETES);
      mkdirSync(SOCKET_WITH_HPA, { recursive: true });
      writeFileSync(
        path.join(SOCKET_WITH_HPA, 'kustomization.yaml'),
        `resources: [${base}]\ncomponents: [${base}/components/hpa]\n`,
      );
    },
    mode: 'socket',
    autoscaled: true,
  },
  {
    name: 'deploy/kubernetes/overlays/http-ingress',
    dir: path.join(KUBERNETES, 'overlays/http-ingress'),
    mode: 'http',
    autoscaled: true,
  },
];

const kubectl = kubectlStatus();
const inCI = process.env.CI === 'true';
if (!kubectl.ok && !inCI) console.warn(`Skipping the Kubernetes manifest tests: ${kubectl.reason}.`);

/** PostgreSQL's default max_connections (100) less the 3 it reserves for superusers. */
const POSTGRES_DEFAULT_CONNECTIONS = 97;

function only<T>(objects: readonly K8sObject[], kind: string): T[] {
  return objects.filter((object) => object.kind === kind) as unknown as T[];
}

function one<T>(objects: readonly K8sObject[], kind: string): T {
  const found = only<T>(objects, kind);
  if (found.length !== 1) throw new Error(`expected one ${kind}, rendered ${found.length}`);
  return found[0] as T;
}

function decode(secret: ISecret): Record<string, string> {
  const values: Record<string, string> = { ...secret.stringData };
  for (const [key, value] of Object.entries(secret.data ?? {})) {
    values[key] = Buffer.from(value, 'base64').toString('utf8');
  }
  return values;
}

/** The environment the container's process starts with, resolved against the rendered objects. */
function containerEnv(container: IContainer, objects: readonly K8sObject[]) {
  const configMaps = new Map(
    only<IConfigMap>(objects, 'ConfigMap').map((map) => [map.metadata?.name, map.data]),
  );
  const secrets = new Map(
    only<ISecret>(objects, 'Secret').map((secret) => [secret.metadata?.name, decode(secret)]),
  );
  const env: Env = {};
  const names: string[] = [];
  const missing: string[] = [];
  for (const source of container.envFrom ?? []) {
    const ref = source.configMapRef ?? source.secretRef;
    const values = source.configMapRef ? configMaps.get(ref?.name) : secrets.get(ref?.name);
    if (!values) {
      if (!ref?.optional) missing.push(`envFrom ${ref?.name}`);
      continue;
    }
    for (const [key, value] of Object.entries(values)) {
      names.push(key);
      env[`${source.prefix ?? ''}${key}`] = value;
    }
  }
  for (const variable of container.env ?? []) {
    names.push(variable.name);
    if (variable.value !== undefined) {
      env[variable.name] = variable.value;
      continue;
    }
    const ref = variable.valueFrom?.secretKeyRef ?? variable.valueFrom?.configMapKeyRef;
    const values = variable.valueFrom?.secretKeyRef ? secrets.get(ref?.name) : configMaps.get(ref?.name);
    const value = ref ? values?.[ref.key] : undefined;
    if (value !== undefined) env[variable.name] = value;
    else if (!ref?.optional) missing.push(`${variable.name} (${ref?.name ?? 'no source'}/${ref?.key})`);
  }
  return { env, names, missing };
}

function portNumber(container: IContainer, port: number | string | undefined): number | undefined {
  if (typeof port === 'number') return port;
  return container.ports?.find((declared: IContainerPort) => declared.name === port)?.containerPort;
}

function matches(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined) {
  return (
    selector !== undefined &&
    Object.keys(selector).length > 0 &&
    Object.entries(selector).every(([key, value]) => labels?.[key] === value)
  );
}

function cpuCores(quantity: string | number): number {
  const text = String(quantity);
  return text.endsWith('m') ? Number(text.slice(0, -1)) / 1000 : Number(text);
}

function bytes(quantity: string | number): number {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(quantity));
  if (!match) throw new Error(`unsupported memory quantity ${quantity}`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Number(match[1]) * (match[2] ? unit[match[2] as keyof typeof unit] : 1);
}

describe('the schema check', () => {
  it('reports a misspelt field, a wrong type and an unknown kind', async () => {
    const problems = await schemaProblems([
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        // A line break TypeScript sees (U+2028) in a value, before the problems: they are still placed right.
        metadata: { name: 'broken', annotations: { note: 'one\u2028two' } },
        spec: {
          selector: { matchLabels: { app: 'x' } },
          template: {
            spec: {
              containers: [
                { name: 'bot', readinesProbe: {}, ports: [{ containerPort: '80' }] },
                { name: 'side', image: 'x', imagePullPolicyy: 'Always' },
              ],
            },
          },
        },
      },
      { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } },
    ]);
    expect(problems).toEqual([
      expect.stringMatching(/containerPort must be integer/),
      'Widget/w: no schema for example.com/v1 Widget',
      'Deployment/broken.spec.template.spec.containers[1].imagePullPolicyy: no such field in the schema',
      'Deployment/broken.spec.template.spec.containers[0].readinesProbe: no such field in the schema',
    ]);
  });
});

for (const variant of VARIANTS) {
  describe.skipIf(!kubectl.ok && !inCI)(`kubectl kustomize ${variant.name}`, () => {
    let objects: K8sObject[];
    let deployment: IDeployment;
    let container: IContainer;
    let env: Env;
    let hpa: IHorizontalPodAutoscaler | undefined;

    beforeAll(() => {
      if (!kubectl.ok) throw new Error(`${kubectl.reason}: CI must install it to check the manifests`);
      variant.prepare?.();
      objects = kustomize(variant.dir);
      deployment = one<IDeployment>(objects, 'Deployment');
      const containers = deployment.spec?.template.spec?.containers ?? [];
      expect(containers).toHaveLength(1);
      container = containers[0] as IContainer;
      env = containerEnv(container, objects).env;
      hpa = only<IHorizontalPodAutoscaler>(objects, 'HorizontalPodAutoscaler')[0];
    });

    it('renders objects that Kubernetes schemas accept', async () => {
      expect(await schemaProblems(objects)).toEqual([]);
    });

    it('sets only variables the bot reads, from objects that exist, to a configuration it accepts', () => {
      const { names, missing } = containerEnv(container, objects);
      expect(names.filter((name) => !ENV_VARIABLES.includes(name))).toEqual([]);
      expect(missing).toEqual([]);
      expect(() => loadConfig(env)).not.toThrow();
    });

    it(`runs in ${variant.mode === 'socket' ? 'Socket Mode' : 'HTTP mode'} on PostgreSQL, which replicas share`, () => {
      expect(env.DATABASE_URL).toMatch(/^postgres(ql)?:\/\//);
      if (variant.mode === 'socket') expect(env.SLACK_APP_TOKEN).toMatch(/^xapp-/);
      else {
        expect(env.SLACK_APP_TOKEN).toBeUndefined();
        expect(env.SLACK_SIGNING_SECRET).toBeTruthy();
      }
    });

    it('probes the bot where it answers: liveness /healthz, readiness /readyz', () => {
      const expected: [string, IProbe | undefined, string][] = [
        ['livenessProbe', container.livenessProbe, '/healthz'],
        ['readinessProbe', container.readinessProbe, '/readyz'],
      ];
      if (container.startupProbe) expected.push(['startupProbe', container.startupProbe, '/healthz']);
      for (const [name, probe, path] of expected) {
        const port = portNumber(container, probe?.httpGet?.port);
        const listener = port === undefined ? undefined : listenerOn(port, env);
        expect({ name, listener: listener !== undefined, path: probe?.httpGet?.path }).toEqual({
          name,
          listener: true,
          path,
        });
        expect(LISTENERS[listener as keyof typeof LISTENERS].paths).toContain(path);
      }
      // Every declared port is one the bot listens on, and Prometheus is pointed at /metrics.
      for (const declared of container.ports ?? [])
        expect(listenerOn(declared.containerPort, env)).toBeDefined();
      const annotations = deployment.spec?.template.metadata?.annotations ?? {};
      if (annotations['prometheus.io/scrape'] === 'true') {
        const listener = listenerOn(Number(annotations['prometheus.io/port']), env);
        expect(listener).toBeDefined();
        expect(LISTENERS[listener as keyof typeof LISTENERS].paths).toContain(
          annotations['prometheus.io/path'],
        );
      }
    });

    it('lets the drain finish before the kubelet kills the pod', () => {
      const preStopSeconds = container.lifecycle?.preStop?.sleep?.seconds ?? 0;
      const graceMs = (deployment.spec?.template.spec?.terminationGracePeriodSeconds ?? 30) * 1000;
      expect(graceMs).toBeGreaterThanOrEqual(preStopSeconds * 1000 + shutdownTimeoutMs(env) + EXIT_MARGIN_MS);
    });

    it('runs as the image user, non-root, on a read-only root filesystem with nothing writable mounted', () => {
      const pod = deployment.spec?.template.spec;
      const security = { ...pod?.securityContext, ...container.securityContext };
      expect(security.runAsNonRoot).toBe(true);
      expect(security.runAsUser).toBe(imageUser().uid);
      expect(security.runAsUser).not.toBe(0);
      expect(container.securityContext?.readOnlyRootFilesystem).toBe(true);
      expect(container.securityContext?.allowPrivilegeEscalation).toBe(false);
      expect(container.securityContext?.capabilities?.drop).toContain('ALL');
      expect(pod?.automountServiceAccountToken).toBe(false);
      // With PostgreSQL the bot writes no files; the embedded store (DATA_DIR) is for one process only.
      expect((container.volumeMounts ?? []).filter((mount) => !mount.readOnly)).toEqual([]);
    });

    it('requests and caps CPU and memory', () => {
      const { requests = {}, limits = {} } = container.resources ?? {};
      for (const resource of ['cpu', 'memory']) {
        expect(requests[resource], `requests.${resource}`).toBeDefined();
        expect(limits[resource], `limits.${resource}`).toBeDefined();
      }
      expect(cpuCores(requests.cpu as string)).toBeLessThanOrEqual(cpuCores(limits.cpu as string));
      expect(bytes(requests.memory as string)).toBeLessThanOrEqual(bytes(limits.memory as string));
    });

    it('keeps pods available through rollouts and node drains', () => {
      const labels = deployment.spec?.template.metadata?.labels;
      expect(matches(deployment.spec?.selector.matchLabels, labels)).toBe(true);
      const pdb = one<IPodDisruptionBudget>(objects, 'PodDisruptionBudget');
      expect(matches(pdb.spec?.selector?.matchLabels, labels)).toBe(true);
      const fewestPods = hpa ? (hpa.spec?.minReplicas ?? 1) : (deployment.spec?.replicas ?? 1);
      expect(fewestPods).toBeGreaterThanOrEqual(2);
      // A drain may evict this many at once; at least one pod must stay.
      expect(Number(pdb.spec?.maxUnavailable)).toBeLessThan(fewestPods);
      expect(deployment.spec?.strategy?.rollingUpdate?.maxUnavailable).toBe(0);
    });

    it(
      variant.autoscaled ? 'is scaled by an autoscaler that owns the replica count' : 'has no autoscaler',
      () => {
        if (!variant.autoscaled) {
          expect(hpa).toBeUndefined();
          return;
        }
        expect(hpa?.spec?.scaleTargetRef).toEqual({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          name: deployment.metadata?.name,
        });
        // A fixed count in the Deployment would undo the autoscaler at every `kubectl apply`.
        expect(deployment.spec?.replicas).toBeUndefined();
      },
    );

    it("keeps the replicas' database connections within PostgreSQL's default max_connections", () => {
      const maxPods = Math.max(deployment.spec?.replicas ?? 1, hpa?.spec?.maxReplicas ?? 0);
      const surge = Number(deployment.spec?.strategy?.rollingUpdate?.maxSurge ?? 1);
      // Draining pods still hold their pools while new ones open theirs.
      const pods = 2 * maxPods + surge;
      const store = loadConfig(env).store;
      expect(store.kind).toBe('postgres');
      const connections = pods * (store.kind === 'postgres' ? postgresConnections(store.poolSize) : 0);
      expect(connections).toBeLessThanOrEqual(POSTGRES_DEFAULT_CONNECTIONS);
    });

    if (variant.mode === 'socket') {
      it(`keeps Socket Mode connections within Slack's ${SLACK_SOCKET_CONNECTION_LIMIT} per app token`, () => {
        const maxPods = Math.max(deployment.spec?.replicas ?? 1, hpa?.spec?.maxReplicas ?? 0);
        const surge = deployment.spec?.strategy?.rollingUpdate?.maxSurge;
        expect(typeof surge, 'maxSurge as a number of pods').toBe('number');
        // During a rollout every old pod may still hold its connection while it drains, next to up to
        // maxPods + maxSurge new ones.
        expect(2 * maxPods + (surge as number)).toBeLessThanOrEqual(SLACK_SOCKET_CONNECTION_LIMIT);
        expect(only(objects, 'Ingress')).toEqual([]);
      });
    } else {
      it("exposes only Slack's request URL through the Ingress, served by the bot's PORT listener", () => {
        const ingress = one<IIngress>(objects, 'Ingress');
        const service = one<IService>(objects, 'Service');
        expect(matches(service.spec?.selector, deployment.spec?.template.metadata?.labels)).toBe(true);
        const paths = (ingress.spec?.rules ?? []).flatMap((rule) => rule.http?.paths ?? []);
        expect(paths.map((entry) => entry.path)).toEqual(['/slack/events']);
        for (const entry of paths) {
          const backend = entry.backend.service;
          expect(backend?.name).toBe(service.metadata?.name);
          const servicePort = service.spec?.ports?.find(
            (port) => port.name === backend?.port?.name || port.port === backend?.port?.number,
          );
          const target = portNumber(container, servicePort?.targetPort ?? servicePort?.port);
          expect(target === undefined ? undefined : listenerOn(target, env)).toBe('PORT');
        }
      });
    }

    it('admits to the admin port only the metrics scraper, and to PORT only the Ingress controller in HTTP mode', () => {
      const labels = deployment.spec?.template.metadata?.labels;
      const policies = only<INetworkPolicy>(objects, 'NetworkPolicy').filter((policy) =>
        matches(policy.spec?.podSelector?.matchLabels, labels),
      );
      expect(policies).toHaveLength(1);
      const policy = policies[0] as INetworkPolicy;
      expect(policy.spec?.policyTypes).toContain('Ingress');
      // Which listener each rule opens, to whom: every rule names its sources (none admits any pod) and its ports.
      const admitted = (policy.spec?.ingress ?? []).flatMap((rule) => {
        expect(rule.from?.length, 'a rule without sources admits everyone').toBeGreaterThan(0);
        expect(rule.ports?.length, 'a rule without ports opens every port').toBeGreaterThan(0);
        return (rule.ports ?? []).map((port) => ({
          listener: listenerOn(portNumber(container, port.port) ?? -1, env),
          from: (rule.from ?? []).map((peer) => {
            // Both selectors in one peer: those pods of that namespace, not any pod anywhere.
            expect(peer.namespaceSelector?.matchLabels).toBeDefined();
            expect(peer.podSelector?.matchLabels).toBeDefined();
            expect(peer.ipBlock).toBeUndefined();
            return peer.podSelector?.matchLabels?.['app.kubernetes.io/name'];
          }),
        }));
      });
      expect(admitted).toEqual([
        { listener: 'ADMIN_PORT', from: ['prometheus'] },
        ...(variant.mode === 'http' ? [{ listener: 'PORT', from: ['ingress-nginx'] }] : []),
      ]);
    });

    it('ships placeholder secrets, never real values', () => {
      for (const secret of only<ISecret>(objects, 'Secret')) {
        for (const [key, value] of Object.entries(decode(secret))) expect(value, key).toContain('CHANGE-ME');
      }
    });
  });
}
