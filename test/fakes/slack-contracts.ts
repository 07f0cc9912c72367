// Imported rather than read, so that a compiled copy (the bench's dist/) carries it along.
import methodsJson from './slack-contracts/methods.json' with { type: 'json' };

/**
 * The documented contracts of the Web API methods the fake implements (slack-contracts/methods.json, made by
 * slack-contracts/generate.ts from Slack's method reference; the file names its source and commit), and the
 * checks Slack makes before a method runs: required arguments, argument limits, bot scopes.
 */

/** Limits Slack states for an argument. */
export interface ArgLimits {
  enum?: string[];
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
  /** Limits of each string item of an array argument. */
  items?: { minLength?: number; maxLength?: number };
}

export interface ArgFacts extends ArgLimits {
  /** The documented error for the argument's absence (else Slack's generic `invalid_arguments`). */
  missingError?: string;
  /** The documented error for a value outside its limits (else `invalid_arguments`). */
  invalidError?: string;
  /** A length limit stated with its own error (e.g. chat.update's `text` and `msg_too_long`). */
  tooLong?: { maxLength: number; error: string };
}

export interface MethodContract {
  /** Slack's rate-limit tier; `special` methods have limits of their own. */
  tier: 't1' | 't2' | 't3' | 't4' | 'special';
  /** Required arguments, the token aside. */
  required: string[];
  /** Bot scopes that allow the method; several are alternatives (see `neededScope`). */
  botScopes: string[];
  /** Error codes documented for the method itself. */
  errors: string[];
  args?: Record<string, ArgFacts>;
}

export interface SlackContracts {
  source: {
    repository: string;
    commit: string;
    methods: string;
    commonErrors: string;
    commonErrorsAdded: string[];
  };
  /** Errors Slack documents for every method (authentication, rate limits, scopes, malformed calls). */
  commonErrors: string[];
  methods: Record<string, MethodContract>;
}

export type ConversationType = 'channel' | 'group' | 'im' | 'mpim';

export type ContractRefusal = { ok: false; error: string; [key: string]: unknown };

const SCOPE_PREFIX: Record<ConversationType, string> = {
  channel: 'channels',
  group: 'groups',
  im: 'im',
  mpim: 'mpim',
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function loadContracts(): SlackContracts {
  const raw: unknown = methodsJson;
  if (!isRecord(raw) || !isRecord(raw.methods) || !Array.isArray(raw.commonErrors)) {
    throw new Error('test/fakes/slack-contracts/methods.json is not a contracts file; regenerate it');
  }
  return raw as unknown as SlackContracts;
}

function refusal(error: string, message: string): ContractRefusal {
  // Slack names what was wrong in response_metadata.messages.
  return { ok: false, error, response_metadata: { messages: [`[ERROR] ${message}`] } };
}

/** Form encoding sends every value as a string; absent means not sent (or sent as null). */
function absent(value: unknown): boolean {
  return value === undefined || value === null;
}

function limitBreach(name: string, value: unknown, limits: ArgLimits): string | undefined {
  if (limits.enum && !limits.enum.includes(String(value))) {
    return `${name} must be one of ${limits.enum.join(', ')}`;
  }
  if (typeof value === 'string') {
    const length = Array.from(value).length;
    if (limits.maxLength !== undefined && length > limits.maxLength)
      return `${name} is longer than ${limits.maxLength} characters`;
    if (limits.minLength !== undefined && length < limits.minLength)
      return `${name} is shorter than ${limits.minLength} characters`;
  }
  if (Array.isArray(value)) {
    if (limits.maxItems !== undefined && value.length > limits.maxItems)
      return `${name} has more than ${limits.maxItems} items`;
    if (limits.minItems !== undefined && value.length < limits.minItems)
      return `${name} has fewer than ${limits.minItems} items`;
    for (const item of limits.items ? value : []) {
      const breach =
        typeof item === 'string' ? limitBreach(`${name} item`, item, limits.items ?? {}) : undefined;
      if (breach) return breach;
    }
  }
  if (limits.minimum !== undefined || limits.maximum !== undefined) {
    const number = typeof value === 'number' ? value : Number(value);
    if (Number.isFinite(number)) {
      if (limits.maximum !== undefined && number > limits.maximum)
        return `${name} is more than ${limits.maximum}`;
      if (limits.minimum !== undefined && number < limits.minimum)
        return `${name} is less than ${limits.minimum}`;
    }
  }
  return undefined;
}

/**
 * Required arguments and stated limits. An absent required argument gets the error the method documents for
 * it (chat.postMessage without `channel`: `channel_not_found`), else `invalid_arguments`, Slack's generic
 * answer to a call that breaks its arguments' contract; so does a value outside a stated limit.
 */
export function checkArguments(
  contract: MethodContract,
  args: Record<string, unknown>,
): ContractRefusal | undefined {
  for (const name of contract.required) {
    if (absent(args[name])) {
      return refusal(
        contract.args?.[name]?.missingError ?? 'invalid_arguments',
        `missing required field: ${name}`,
      );
    }
  }
  for (const [name, facts] of Object.entries(contract.args ?? {})) {
    const value = args[name];
    if (absent(value)) continue;
    if (facts.tooLong && typeof value === 'string' && Array.from(value).length > facts.tooLong.maxLength) {
      return refusal(facts.tooLong.error, `${name} is longer than ${facts.tooLong.maxLength} characters`);
    }
    const breach = limitBreach(name, value, facts);
    if (breach) return refusal(facts.invalidError ?? 'invalid_arguments', breach);
  }
  return undefined;
}

/**
 * The scope a call needs, as Slack names it in `needed`. Where the reference lists one scope per kind of
 * conversation (channels:history, groups:history, im:history, mpim:history), the conversation's kind picks
 * it; otherwise any listed scope will do, and all are named.
 */
export function neededScope(contract: MethodContract, conversation: ConversationType | undefined): string[] {
  const scopes = contract.botScopes;
  const perConversation = scopes.length > 1 && conversationSuffix(scopes) !== undefined;
  if (perConversation && conversation) {
    const scope = `${SCOPE_PREFIX[conversation]}:${conversationSuffix(scopes)}`;
    if (scopes.includes(scope)) return [scope];
  }
  return scopes;
}

/** `history` when every scope is `<kind of conversation>:history`. */
function conversationSuffix(scopes: string[]): string | undefined {
  const prefixes = new Set(Object.values(SCOPE_PREFIX));
  const suffixes = new Set<string>();
  for (const scope of scopes) {
    const [prefix, suffix] = scope.split(':');
    if (!prefix || !suffix || !prefixes.has(prefix)) return undefined;
    suffixes.add(suffix);
  }
  return suffixes.size === 1 ? [...suffixes][0] : undefined;
}

/** `missing_scope` with Slack's `needed` / `provided`, when the granted scopes allow none of the needed. */
export function checkScope(
  contract: MethodContract,
  granted: readonly string[],
  conversation: ConversationType | undefined,
): ContractRefusal | undefined {
  const needed = neededScope(contract, conversation);
  if (needed.length === 0 || needed.some((scope) => granted.includes(scope))) return undefined;
  return { ok: false, error: 'missing_scope', needed: needed.join(','), provided: granted.join(',') };
}

/** Whether Slack documents `error` as an answer of `method` (its own errors, or those common to all). */
export function documentsError(contracts: SlackContracts, method: string, error: string): boolean {
  if (contracts.commonErrors.includes(error)) return true;
  if (method === '*') return false;
  return contracts.methods[method]?.errors.includes(error) ?? false;
}

/** Why an answer is one Slack could not give (an error it does not document for the method), if it is. */
export function undocumentedAnswer(
  contracts: SlackContracts,
  method: string,
  body: { ok: boolean; error?: unknown },
): string | undefined {
  if (body.ok) return undefined;
  const error = String(body.error);
  return documentsError(contracts, method, error)
    ? undefined
    : `${method} answered ${error}, which Slack does not document for it`;
}
