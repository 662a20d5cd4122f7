/**
 * Ids (docs/DESIGN.md, "Ids and the object layout"): what a user, session, key or workspace id
 * may be, and its encoding as one segment of a name. An id made only of `[A-Za-z0-9._-]` (not
 * `.`/`..`, not `anon` or `__anon__` for a user, not ending in `.list` or `.json` for a key) is written as it
 * is; any other id is `!` + unpadded base64url of its UTF-8. Encoded ids never contain `~` or `/`,
 * so they cannot collide with the names an engine adds, and no two distinct (user, session, key)
 * triples share a name. The object store's names are lib/store/layout.ts.
 */
import { fromBase64Url, toBase64Url, utf8Length } from '../util/bytes.js';
import { ValidationError } from './errors.js';
import { LIMITS, MAX_KEY_PAGE, MAX_SESSION_PAGE } from './limits.js';

/** The user segment of the anonymous user. */
export const ANONYMOUS = 'anon';
/**
 * The anonymous user's segment in the AgentScope reference's layout (lib/store/reference.ts): a
 * real user of that id is encoded, as one named `anon` is, so the segment is never a user's.
 */
export const REFERENCE_ANONYMOUS = '__anon__';

/**
 * The memory session (docs/DESIGN.md, "Sessions"): the one session of each user that never expires,
 * where the LangGraph memory store keeps its items (the checkpointer never maps a thread to it).
 * The object-storage engine never counts its marker over-age nor refreshes it, and writes its
 * markers and state objects with the tag `kind=memory` (`MEMORY_KIND`), which no lifecycle rule
 * selects (lib/lifecycle/index.ts). Its archives and workspaces keep their own rules.
 */
export const MEMORY_SESSION = '~memory';
/** The `kind` tag of the memory session's markers and state objects: no lifecycle rule selects it. */
export const MEMORY_KIND = 'memory';
/** Whether a session is the memory session, which never expires. */
export const isMemorySession = (sessionId: string): boolean => sessionId === MEMORY_SESSION;

/** An id written as itself, in object names and in URLs (and not `.` or `..`). */
export const PLAIN_ID = /^[A-Za-z0-9._-]+$/;
/** Unpadded base64url, the form of any other id (after `!` in object names, `~` in URLs). */
export const BASE64URL = /^[A-Za-z0-9_-]+$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

type IdKind = 'userId' | 'sessionId' | 'key' | 'workspace';

/** Refuses an id that is not a non-blank string of valid UTF-8 without control characters, within its limit. */
export function checkId(kind: IdKind, id: unknown): string {
  if (typeof id !== 'string') throw new ValidationError(kind, 'must be a string');
  if (id.trim() === '') throw new ValidationError(kind, 'must not be empty or blank');
  if (CONTROL.test(id)) throw new ValidationError(kind, 'must not contain control characters');
  if (LONE_SURROGATE.test(id)) throw new ValidationError(kind, 'must be valid UTF-8 (no lone surrogates)');
  if (utf8Length(id) > LIMITS[kind]) throw new ValidationError(kind, `must be at most ${LIMITS[kind]} bytes`);
  return id;
}

/**
 * What is wrong with a key bound (a `listKeys` `prefix` or `startAfter`: a key or the start of one):
 * at most the key limit in bytes, valid UTF-8, no control characters; undefined when nothing is.
 * The store (keys.ts) and the HTTP query schema (lib/protocol/schemas.ts) apply the same rule.
 */
export function keyBoundProblem(value: string): string | undefined {
  if (utf8Length(value) > LIMITS.key) return `must be at most ${LIMITS.key} bytes`;
  if (CONTROL.test(value)) return 'must not contain control characters';
  if (LONE_SURROGATE.test(value)) return 'must be valid UTF-8 (no lone surrogates)';
  return undefined;
}

/** Refuses a prefix that is over-long, has control characters, or does not end with `/` (unless empty). */
export function checkPrefix(prefix: string): string {
  if (utf8Length(prefix) > LIMITS.prefix)
    throw new ValidationError('prefix', `at most ${LIMITS.prefix} bytes`);
  if (CONTROL.test(prefix) || LONE_SURROGATE.test(prefix))
    throw new ValidationError('prefix', 'invalid characters');
  if (prefix !== '' && !prefix.endsWith('/')) throw new ValidationError('prefix', 'must end with "/"');
  if (prefix.split('/').some((s) => s === '.' || s === '..'))
    throw new ValidationError('prefix', 'no "." or ".." segments');
  return prefix;
}

function needsEncoding(kind: IdKind, id: string): boolean {
  if (!PLAIN_ID.test(id) || id === '.' || id === '..') return true;
  if (kind === 'userId' && (id === ANONYMOUS || id === REFERENCE_ANONYMOUS)) return true;
  if (kind === 'key' && (id.endsWith('.list') || id.endsWith('.json'))) return true;
  return false;
}

/** The object-name segment of an id (checked first). */
export function encodeId(kind: IdKind, id: string): string {
  checkId(kind, id);
  return needsEncoding(kind, id) ? `!${toBase64Url(id)}` : id;
}

/** The id of an object-name segment; throws `ValidationError` for a segment `encodeId` cannot produce. */
export function decodeId(kind: IdKind, segment: string): string {
  let id = segment;
  if (segment.startsWith('!')) {
    const body = segment.slice(1);
    const decoded = BASE64URL.test(body) ? fromBase64Url(body) : undefined;
    if (decoded === undefined) throw new ValidationError(kind, 'not an encoded id');
    id = decoded;
  }
  if (encodeId(kind, id) !== segment) throw new ValidationError(kind, 'not an encoded id');
  return id;
}

/** A named user's checked id, or null for the anonymous user (a null or blank user id). */
export function namedUser(userId: string | null | undefined): string | null {
  return userId == null || userId.trim() === '' ? null : checkId('userId', userId);
}

/** The name segment of a user (`anon` for the anonymous user). */
export function userSegment(userId: string | null | undefined): string {
  const named = namedUser(userId);
  return named === null ? ANONYMOUS : encodeId('userId', named);
}

/**
 * The cursor of a page of keys that ended at `key` (`listKeys`, a snapshot's `valuePage`): the
 * unpadded base64url of its UTF-8, the same for every engine.
 */
export function cursorOf(key: string): string {
  return toBase64Url(key);
}

/** The key a cursor names; `ValidationError` on `field` for anything `cursorOf` cannot have made. */
export function keyOfCursor(cursor: unknown, field = 'cursor'): string {
  const refused = () => new ValidationError(field, 'not a cursor of this listing');
  if (typeof cursor !== 'string' || !BASE64URL.test(cursor)) throw refused();
  const key = fromBase64Url(cursor);
  if (key === undefined) throw refused();
  try {
    checkId('key', key);
  } catch {
    throw refused();
  }
  if (cursorOf(key) !== cursor) throw refused();
  return key;
}

/** The cursor of a session listing that ended at the session named `segment` (its encoded id). */
export function sessionCursorOf(segment: string): string {
  return toBase64Url(segment);
}

/**
 * A session listing's options checked before any request (every engine's rule): its `limit` (1 to
 * `MAX_SESSION_PAGE`, the default) and the name segment its `cursor` ends at, which must be a
 * session id's encoding (a cursor cannot name a position outside the user's sessions).
 */
export function sessionPageOptions(options: { readonly limit?: number; readonly cursor?: string }): {
  readonly limit: number;
  readonly after: string | undefined;
} {
  const limit = options.limit ?? MAX_SESSION_PAGE;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_SESSION_PAGE)
    throw new ValidationError('limit', `must be 1 to ${MAX_SESSION_PAGE}`);
  if (options.cursor === undefined) return { limit, after: undefined };
  const refused = () => new ValidationError('cursor', 'not a cursor of this listing');
  if (typeof options.cursor !== 'string' || !BASE64URL.test(options.cursor)) throw refused();
  const segment = fromBase64Url(options.cursor);
  if (segment === undefined) throw refused();
  try {
    decodeId('sessionId', segment);
  } catch {
    throw refused();
  }
  if (sessionCursorOf(segment) !== options.cursor) throw refused();
  return { limit, after: segment };
}

/** UTF-8 byte order of two strings (the order of their code points). */
export function compareUtf8(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i]?.codePointAt(0) ?? 0) - (y[i]?.codePointAt(0) ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return x.length === y.length ? 0 : x.length < y.length ? -1 : 1;
}

/** Checks a prefix or `startAfter`: a string of at most 128 bytes, valid UTF-8, no control characters. */
function checkBound(field: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new ValidationError(field, 'must be a string');
  const problem = keyBoundProblem(value);
  if (problem) throw new ValidationError(field, problem);
  return value;
}

/** A page's options, checked: the prefix, the key it starts after (the cursor's, when later), its size. */
export interface KeyPageOptions {
  readonly prefix: string;
  readonly after: string | undefined;
  readonly limit: number;
}

/** `listKeys` options checked (a `ValidationError` naming the first bad one), before any request (every engine's rule). */
export function keyPageOptions(options: {
  readonly prefix?: string;
  readonly startAfter?: string;
  readonly limit?: number;
  readonly cursor?: string;
}): KeyPageOptions {
  const prefix = checkBound('prefix', options.prefix) ?? '';
  let after = checkBound('startAfter', options.startAfter);
  if (after === '') after = undefined;
  const limit = options.limit ?? MAX_KEY_PAGE;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_KEY_PAGE)
    throw new ValidationError('limit', `must be 1 to ${MAX_KEY_PAGE}`);
  if (options.cursor !== undefined) {
    const key = keyOfCursor(options.cursor);
    if (after === undefined || compareUtf8(key, after) > 0) after = key;
  }
  return { prefix, after, limit };
}
