import { isObject, type JsonObject } from './response.js';
import { isValidSessionId } from './session-ids.js';

export interface AgentSessionRecord {
  uuid: string;
  sessionName?: string;
  createdAt?: string;
}

/** Below this a number since the epoch is seconds (in milliseconds it would be early 1973). */
const EPOCH_SECONDS_BELOW = 1e11;

/**
 * When a listed session was created, in milliseconds since the epoch, whatever form the service gives (the
 * API does not show it): an ISO date (UTC when it has no offset), or seconds or milliseconds since the epoch.
 * undefined: unreadable.
 */
export function createdAtMs(record: AgentSessionRecord): number | undefined {
  const value = record.createdAt?.trim();
  if (!value) return undefined;
  if (/^\d{1,15}(\.\d{1,9})?$/.test(value)) {
    const number = Number(value);
    return number < EPOCH_SECONDS_BELOW ? number * 1000 : number;
  }
  // A date and time with no offset would be read in this machine's time zone: a service means UTC by it.
  const ms = Date.parse(WITHOUT_OFFSET.test(value) ? `${value.replace(' ', 'T')}Z` : value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** `2026-11-28 08:32:11` or `2026-11-28T08:32:11.5`: no `Z`, no `+01:00`. */
const WITHOUT_OFFSET = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?$/;

/** Keys under which a service may wrap its list of sessions. */
const LIST_WRAPPER_KEYS = ['items', 'sessions', 'data', 'results', 'records'] as const;

function toRecord(value: unknown): AgentSessionRecord | undefined {
  if (!isObject(value) || typeof value.uuid !== 'string' || !isValidSessionId(value.uuid)) return undefined;
  const record: AgentSessionRecord = { uuid: value.uuid };
  if (typeof value.session_name === 'string') record.sessionName = value.session_name;
  if (typeof value.created_at === 'string') record.createdAt = value.created_at;
  else if (typeof value.created_at === 'number') record.createdAt = String(value.created_at);
  return record;
}

/** Reads `data` as one record, an array, or an object wrapping an array; `records` undefined = unknown shape. */
export function extractRecords(envelope: JsonObject): {
  records: AgentSessionRecord[] | undefined;
  hints: JsonObject[];
} {
  const data = envelope.data;
  const hints: JsonObject[] = [envelope];
  const fromList = (list: unknown[]) =>
    list.map(toRecord).filter((r): r is AgentSessionRecord => r !== undefined);
  if (data === undefined || data === null) {
    // An explicit success with no data reads as an empty list; otherwise the shape is unknown.
    return { records: envelope.status === true ? [] : undefined, hints };
  }
  if (Array.isArray(data)) return { records: fromList(data), hints };
  if (!isObject(data)) return { records: undefined, hints };
  for (const key of LIST_WRAPPER_KEYS) {
    const inner = data[key];
    if (Array.isArray(inner)) return { records: fromList(inner), hints: [data, envelope] };
  }
  const single = toRecord(data);
  return { records: single ? [single] : [], hints };
}

/** The next page a body hints at (`next`, `next_page`, `has_more` + `page`, `total_pages` + `page`), if any. */
export function nextPage(hints: JsonObject[], current: number): number | undefined {
  for (const hint of hints) {
    const explicit = toPageNumber(hint.next_page) ?? toPageNumber(hint.next);
    if (explicit !== undefined) return explicit;
    const page = toPageNumber(hint.page) ?? current;
    if (hint.has_more === true) return page + 1;
    const total = toPageNumber(hint.total_pages);
    if (total !== undefined && hint.has_more === undefined) return page < total ? page + 1 : undefined;
    if (hint.has_more === false) return undefined;
  }
  return undefined;
}

function toPageNumber(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isInteger(value) && value > 0) return value;
  if (typeof value === 'string') {
    if (/^\d+$/.test(value)) return Number(value);
    // A next URL is mined for its page number only; following it could send the key to another host.
    const match = /[?&]page=(\d+)/.exec(value);
    if (match?.[1]) return Number(match[1]);
  }
  return undefined;
}
