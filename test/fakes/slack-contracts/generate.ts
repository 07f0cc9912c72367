/**
 * Regenerates methods.json, the contracts of the Web API methods the fake implements, from Slack's method
 * reference as mirrored in slack-ruby/slack-api-ref (docs.slack.dev/methods/<method>.json, Slack's own data
 * behind https://docs.slack.dev/reference/methods). Run by hand, never by CI:
 *
 *   git clone https://github.com/slack-ruby/slack-api-ref /tmp/slack-api-ref
 *   npx tsx test/fakes/slack-contracts/generate.ts /tmp/slack-api-ref [commit]
 *
 * Only facts are kept (argument names, required flags, limits, rate tier, bot scopes, error codes); no prose.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ArgLimits, MethodContract, SlackContracts } from '../slack-contracts.js';

const SOURCE_REPO = 'slack-ruby/slack-api-ref';
const DEFAULT_COMMIT = 'f4837c0cb6dba1b1122ce66a5b69195ce47213f8';
const METHOD_PATH = 'docs.slack.dev/methods/<method>.json';
/** The mirror's list of errors any method can answer (Slack's method pages show them under every method). */
const COMMON_ERRORS_PATH = 'methods/_errors/common.json';
/**
 * Errors Slack's method pages list as common to all methods that the mirror's common list lacks (each
 * docs.slack.dev method page ends with them).
 */
const COMMON_ERRORS_NOT_IN_MIRROR = [
  'internal_error',
  'invalid_arguments',
  'invalid_auth',
  'team_access_not_granted',
];

/** Every method test/fakes/slack.ts implements. */
export const FAKE_METHODS = [
  'auth.test',
  'apps.connections.open',
  'oauth.v2.access',
  'chat.postMessage',
  'chat.update',
  'chat.delete',
  'chat.postEphemeral',
  'chat.getPermalink',
  'chat.startStream',
  'chat.appendStream',
  'chat.stopStream',
  'reactions.add',
  'reactions.remove',
  'users.info',
  'conversations.info',
  'conversations.replies',
  'conversations.history',
  'assistant.threads.setStatus',
  'assistant.threads.setSuggestedPrompts',
  'assistant.threads.setTitle',
  'agents.sessions.setStatus',
  'agents.sessions.rename',
] as const;

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function show(repo: string, commit: string, path: string): Json {
  const text = execFileSync('git', ['-C', repo, 'show', `${commit}:${path}`], { encoding: 'utf8' });
  const parsed: unknown = JSON.parse(text);
  if (!isRecord(parsed)) throw new Error(`${path}: not a JSON object`);
  return parsed;
}

function errorDescriptions(errors: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (!isRecord(errors)) return out;
  for (const [code, value] of Object.entries(errors)) {
    const desc =
      isRecord(value) && typeof value.desc === 'string' ? value.desc : typeof value === 'string' ? value : '';
    out.set(code, desc);
  }
  return out;
}

function num(text: string): number {
  return Number(text.replace(/,/g, ''));
}

/** An argument's schema, flattening `anyOf` alternatives (null excluded) into one. */
function flatten(schema: Json): Json {
  const alternatives = Array.isArray(schema.anyOf) ? schema.anyOf.filter(isRecord) : [];
  const merged: Json = { ...schema };
  for (const alternative of alternatives) {
    if (alternative.type === 'null') continue;
    for (const [key, value] of Object.entries(alternative)) if (!(key in merged)) merged[key] = value;
  }
  return merged;
}

/** Limits stated for an argument: schema keywords, and the few fixed phrasings Slack uses in descriptions. */
function limitsOf(schema: Json): ArgLimits | undefined {
  const flat = flatten(schema);
  const limits: ArgLimits = {};
  if (Array.isArray(flat.enum)) limits.enum = flat.enum.filter((v): v is string => typeof v === 'string');
  for (const key of ['minLength', 'maxLength', 'minItems', 'maxItems', 'minimum', 'maximum'] as const) {
    if (typeof flat[key] === 'number') limits[key] = flat[key];
  }
  if (isRecord(flat.items)) {
    const items: NonNullable<ArgLimits['items']> = {};
    if (typeof flat.items.minLength === 'number') items.minLength = flat.items.minLength;
    if (typeof flat.items.maxLength === 'number') items.maxLength = flat.items.maxLength;
    if (Object.keys(items).length > 0) limits.items = items;
  }
  const desc = typeof flat.desc === 'string' ? flat.desc : '';
  const limitTo = /Limit this field to ([\d,]+) characters/.exec(desc);
  const max = /\(max ([\d,]+) characters\)/.exec(desc);
  const range = /\(([\d,]+)-([\d,]+) characters\)/.exec(desc);
  if (limitTo) limits.maxLength ??= num(limitTo[1]!);
  if (max) limits.maxLength ??= num(max[1]!);
  if (range) {
    limits.minLength ??= num(range[1]!);
    limits.maxLength ??= num(range[2]!);
  }
  return Object.keys(limits).length > 0 ? limits : undefined;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Errors about the value passed for an argument, which Slack's older methods also answer when it is absent. */
function valuePatterns(arg: string): RegExp[] {
  const a = escapeRegExp(arg);
  return [
    new RegExp(`^Value (passed )?for \`${a}\` (was|is) (missing or )?invalid`, 'i'),
    new RegExp(`given an invalid ${a}\\b`, 'i'),
  ];
}

/** The documented error for an absent argument: one saying it was not specified or missing, else invalid. */
function missingError(arg: string, errors: Map<string, string>): string | undefined {
  const named = new RegExp(`\`${escapeRegExp(arg)}\``);
  for (const [code, desc] of errors) if (named.test(desc) && /not specified|missing/i.test(desc)) return code;
  const patterns = valuePatterns(arg);
  for (const [code, desc] of errors) if (patterns.some((p) => p.test(desc))) return code;
  return undefined;
}

/** The documented error for an argument whose value is not valid. */
function invalidError(arg: string, errors: Map<string, string>): string | undefined {
  const patterns = [
    ...valuePatterns(arg),
    new RegExp(`^The \`${escapeRegExp(arg)}\` value is not a valid`, 'i'),
  ];
  for (const [code, desc] of errors) if (patterns.some((p) => p.test(desc))) return code;
  return undefined;
}

/** A limit stated in an error's description, e.g. "The `text` field cannot exceed 4,000 characters". */
function errorStatedLimits(errors: Map<string, string>): Map<string, { maxLength: number; error: string }> {
  const out = new Map<string, { maxLength: number; error: string }>();
  for (const [code, desc] of errors) {
    const match = /The `([a-z_]+)` field cannot exceed ([\d,]+) characters/.exec(desc);
    if (match) out.set(match[1]!, { maxLength: num(match[2]!), error: code });
  }
  return out;
}

function tierOf(value: unknown): MethodContract['tier'] {
  // The reference numbers Slack's "Special" tier t5.
  if (value === 't1' || value === 't2' || value === 't3' || value === 't4') return value;
  if (value === 't5') return 'special';
  throw new Error(`unknown rate tier ${String(value)}`);
}

function contractOf(data: Json): MethodContract {
  const args = isRecord(data.args) ? data.args : {};
  const properties = isRecord(args.properties) ? args.properties : {};
  const required = (Array.isArray(args.required) ? args.required : []).filter(
    (name): name is string => typeof name === 'string' && name !== 'token',
  );
  const errors = errorDescriptions(data.errors);
  const scope = isRecord(data.scope) ? data.scope : {};
  const botScopes = (Array.isArray(scope.bot) ? scope.bot : []).filter(
    (s): s is string => typeof s === 'string',
  );

  const contract: MethodContract = {
    tier: tierOf(data.rate_limits),
    required,
    botScopes,
    errors: [...errors.keys()].sort(),
  };
  const argFacts: NonNullable<MethodContract['args']> = {};
  const stated = errorStatedLimits(errors);
  for (const [name, schema] of Object.entries(properties)) {
    if (name === 'token' || !isRecord(schema)) continue;
    const limits = limitsOf(schema) ?? {};
    const fromError = stated.get(name);
    const facts: NonNullable<MethodContract['args']>[string] = { ...limits };
    if (fromError) facts.tooLong = fromError;
    const missing = required.includes(name) ? missingError(name, errors) : undefined;
    const invalid = invalidError(name, errors);
    if (missing) facts.missingError = missing;
    if (invalid && Object.keys(limits).length > 0) facts.invalidError = invalid;
    if (Object.keys(facts).length > 0) argFacts[name] = facts;
  }
  if (Object.keys(argFacts).length > 0) contract.args = argFacts;
  return contract;
}

function main(): void {
  const [repo, commit = DEFAULT_COMMIT] = process.argv.slice(2);
  if (!repo) throw new Error('usage: generate.ts <path to a slack-api-ref clone> [commit]');
  const resolved = execFileSync('git', ['-C', repo, 'rev-parse', `${commit}^{commit}`], {
    encoding: 'utf8',
  }).trim();
  const common = errorDescriptions(show(repo, resolved, COMMON_ERRORS_PATH).errors);
  const methods: Record<string, MethodContract> = {};
  for (const method of FAKE_METHODS) {
    methods[method] = contractOf(show(repo, resolved, METHOD_PATH.replace('<method>', method)));
  }
  const contracts: SlackContracts = {
    source: {
      repository: SOURCE_REPO,
      commit: resolved,
      methods: METHOD_PATH,
      commonErrors: COMMON_ERRORS_PATH,
      commonErrorsAdded: COMMON_ERRORS_NOT_IN_MIRROR,
    },
    commonErrors: [...new Set([...common.keys(), ...COMMON_ERRORS_NOT_IN_MIRROR])].sort(),
    methods,
  };
  const target = fileURLToPath(new URL('./methods.json', import.meta.url));
  writeFileSync(target, `${JSON.stringify(contracts, null, 2)}\n`);
  // In the repository's formatting, so a regeneration shows only what changed.
  execFileSync('npx', ['biome', 'format', '--write', target], { stdio: 'ignore' });
  process.stdout.write(`wrote ${Object.keys(methods).length} method contracts to ${target}\n`);
}

main();
