import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runTsc } from '../helpers/typescript.js';
import type { K8sObject } from './support.js';
import { ROOT } from './support.js';

type ModelModule = Record<string, unknown>;

/** The API groups the manifests use; another one fails the check until it is added here. */
const MODELS: Record<string, () => Promise<ModelModule>> = {
  v1: () => import('kubernetes-models/v1'),
  'apps/v1': () => import('kubernetes-models/apps/v1'),
  'autoscaling/v2': () => import('kubernetes-models/autoscaling/v2'),
  'networking.k8s.io/v1': () => import('kubernetes-models/networking.k8s.io/v1'),
  'policy/v1': () => import('kubernetes-models/policy/v1'),
};

interface Validatable {
  validate(): void;
}

/**
 * Every problem the Kubernetes schemas find in these objects: kubernetes-models' validators (generated from
 * Kubernetes' OpenAPI document) for types, required fields and formats, plus fields the schema does not
 * have, which those validators let through but `kubectl apply` rejects (`unknownFields`).
 */
export async function schemaProblems(objects: readonly K8sObject[]): Promise<string[]> {
  const problems: string[] = [];
  for (const object of objects) {
    const where = `${object.kind}/${object.metadata?.name}`;
    const load = MODELS[object.apiVersion];
    const Model = load ? (await load())[object.kind] : undefined;
    if (typeof Model !== 'function') {
      problems.push(`${where}: no schema for ${object.apiVersion} ${object.kind}`);
      continue;
    }
    try {
      (new (Model as new (data: unknown) => Validatable)(unwrapBase64(object)) as Validatable).validate();
    } catch (error) {
      problems.push(`${where}: ${(error as Error).message}`);
    }
  }
  return [...problems, ...(await unknownFields(objects.filter((object) => MODELS[object.apiVersion])))];
}

/**
 * kustomize wraps long base64 values of a Secret's `data` at 76 characters; the API server's decoder skips
 * the line breaks, the schema's `byte` format does not.
 */
function unwrapBase64(object: K8sObject): K8sObject {
  if (object.kind !== 'Secret' || typeof object.data !== 'object' || object.data === null) return object;
  const data = Object.fromEntries(
    Object.entries(object.data).map(([key, value]) => [key, String(value).replace(/\s+/g, '')]),
  );
  return { ...object, data };
}

/** A line of the literal written for `tsc`, and where in the object it is. */
interface Line {
  text: string;
  at: (string | number)[];
}

/** `value` as a TypeScript literal, one property or element a line, each line with its place in the object. */
function literal(value: unknown, at: Line['at'], lines: Line[], head: string, tail: string): void {
  if (Array.isArray(value)) {
    lines.push({ text: `${head}[`, at });
    value.forEach((item, index) => {
      literal(item, [...at, index], lines, '', ',');
    });
    lines.push({ text: `]${tail}`, at });
  } else if (value !== null && typeof value === 'object') {
    lines.push({ text: `${head}{`, at });
    for (const [key, child] of Object.entries(value)) {
      literal(child, [...at, key], lines, `${json(key)}: `, ',');
    }
    lines.push({ text: `}${tail}`, at });
  } else {
    lines.push({ text: `${head}${json(value)}${tail}`, at });
  }
}

/** JSON, but with the two characters JSON leaves as they are and TypeScript counts as line breaks escaped. */
function json(value: unknown): string {
  return JSON.stringify(value).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

function written(at: Line['at']): string {
  return at.map((step) => (typeof step === 'number' ? `[${step}]` : `.${step}`)).join('');
}

/** Takes the property or element at `at` out of `value`. */
function remove(value: unknown, at: Line['at']): void {
  const parent = at
    .slice(0, -1)
    .reduce<unknown>((node, step) => (node as Record<string, unknown>)?.[step], value);
  const last = at.at(-1);
  if (Array.isArray(parent) && typeof last === 'number') parent.splice(last, 1);
  else if (parent && typeof parent === 'object' && last !== undefined)
    delete (parent as Record<string, unknown>)[last];
}

const DIAGNOSTIC = /^check\.ts\((\d+),\d+\): error TS(\d+): /;
/**
 * TypeScript's "Object literal may only specify known properties", and the same with a "Did you mean"
 * suggestion (given for a misspelt key written as an identifier; keys here are quoted, but a typo is as
 * unknown either way).
 */
const UNKNOWN_PROPERTY = new Set(['2353', '2561']);
/** Each round takes out what it found; a check that still finds something after this many is cut short. */
const MAX_ROUNDS = 30;

/**
 * Fields that the objects' types do not declare, found by `tsc`: each object is written as a literal of its
 * TypeScript type, which kubernetes-models generates from the same OpenAPI document. `tsc` reports one
 * problem per literal at a time, so each round takes out what it reported and checks again. Only unknown
 * fields are reported: wrong types and missing fields are the validators' to report (a value taken out for
 * its type would otherwise come back as a missing field). A null property counts as absent, as the API
 * server reads it.
 */
async function unknownFields(objects: readonly K8sObject[]): Promise<string[]> {
  const remaining = objects.map(
    (object) => JSON.parse(JSON.stringify(object, (_, v) => v ?? undefined)) as unknown,
  );
  const names = objects.map((object) => `${object.kind}/${object.metadata?.name}`);
  const dir = await mkdtemp(path.join(ROOT, 'test/.tmp/kubernetes-types-'));
  const problems: string[] = [];
  try {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const lines: (Line & { object?: number })[] = objects.map(({ apiVersion, kind }, index) => ({
        text: `import type { I${kind} as T${index} } from 'kubernetes-models/${apiVersion}/${kind}';`,
        at: [],
      }));
      remaining.forEach((object, index) => {
        const start = lines.length;
        literal(object, [], lines, `export const o${index}: T${index} = `, ';');
        for (const line of lines.slice(start)) line.object = index;
      });
      await writeFile(path.join(dir, 'check.ts'), lines.map((line) => line.text).join('\n'));
      const checked = await runTsc(
        [
          '--ignoreConfig',
          '--noEmit',
          '--strict',
          '--skipLibCheck',
          '--types',
          '',
          '--module',
          'nodenext',
          'check.ts',
        ],
        dir,
      );
      if (checked.code === 0) return problems;
      const found = checked.stdout.split('\n').flatMap((text) => {
        const match = DIAGNOSTIC.exec(text);
        const line = match ? lines[Number(match[1]) - 1] : undefined;
        return match && line?.object !== undefined && line.at.length > 0
          ? [{ object: line.object, at: line.at, code: match[2] ?? '' }]
          : [];
      });
      if (found.length === 0) return [...problems, checked.output.trim()];
      for (const { object, at, code } of found)
        if (UNKNOWN_PROPERTY.has(code))
          problems.push(`${names[object]}${written(at)}: no such field in the schema`);
      // Last first: taking out an element moves the ones after it.
      for (const { object, at } of found.reverse()) remove(remaining[object], at);
    }
    return [...problems, `still finding problems after ${MAX_ROUNDS} rounds`];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
