import path from 'node:path';
import ts from 'typescript';
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
 * have, which those validators let through but `kubectl apply` rejects.
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
  return [...problems, ...unknownFields(objects.filter((object) => MODELS[object.apiVersion]))];
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

const TYPE_OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  types: [],
};
const PARSED = new Map<string, ts.SourceFile>();

/**
 * Fields that the objects' types do not declare, found by walking each object along the TypeScript
 * declarations that kubernetes-models generates from the same OpenAPI document.
 */
function unknownFields(objects: readonly K8sObject[]): string[] {
  const file = path.join(ROOT, 'test/deploy/__kubernetes-types__.ts');
  const source = objects
    .map(
      ({ apiVersion, kind }, index) =>
        `import type { I${kind} as T${index} } from 'kubernetes-models/${apiVersion}/${kind}';\nexport type R${index} = T${index};`,
    )
    .join('\n');
  // The type file exists only in memory.
  const host = ts.createCompilerHost(TYPE_OPTIONS);
  const { getSourceFile, fileExists } = host;
  host.getSourceFile = (name, language, ...rest) => {
    if (name === file) return ts.createSourceFile(name, source, language);
    // Parsed once per process: each check reads the same standard library and kubernetes-models files.
    const parsed = PARSED.get(name) ?? getSourceFile.call(host, name, language, ...rest);
    if (parsed) PARSED.set(name, parsed);
    return parsed;
  };
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  const program = ts.createProgram([file], TYPE_OPTIONS, host);
  const unresolved = ts.getPreEmitDiagnostics(program);
  if (unresolved.length > 0) {
    return unresolved.map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
  }
  const checker = program.getTypeChecker();
  const aliases = (program.getSourceFile(file)?.statements ?? []).filter((statement) =>
    ts.isTypeAliasDeclaration(statement),
  );
  const problems: string[] = [];

  const walk = (value: unknown, declared: ts.Type, where: string): void => {
    if (value === null || typeof value !== 'object') return;
    const type = checker.getNonNullableType(declared);
    if (Array.isArray(value)) {
      const element = checker.getIndexTypeOfType(type, ts.IndexKind.Number);
      if (!element) problems.push(`${where}: a list where the schema has none`);
      else
        value.forEach((item, index) => {
          walk(item, element, `${where}[${index}]`);
        });
      return;
    }
    const mapValues = checker.getIndexTypeOfType(type, ts.IndexKind.String);
    for (const [key, child] of Object.entries(value)) {
      const property = checker.getPropertyOfType(type, key);
      if (property) walk(child, checker.getTypeOfSymbol(property), `${where}.${key}`);
      else if (mapValues) walk(child, mapValues, `${where}.${key}`);
      else problems.push(`${where}.${key}: no such field in the schema`);
    }
  };

  objects.forEach((object, index) => {
    const alias = aliases[index];
    if (alias && ts.isTypeAliasDeclaration(alias)) {
      walk(object, checker.getTypeAtLocation(alias.name), `${object.kind}/${object.metadata?.name}`);
    }
  });
  return problems;
}
