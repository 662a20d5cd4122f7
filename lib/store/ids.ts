/**
 * Ids, their encoding into object names, and the object layout (DESIGN.md, "Ids and limits" and
 * "Object layout"):
 *
 *   <prefix><user>/<session>/<key>.json                 single value
 *   <prefix><user>/<session>/<key>.list.json            list materialization (the whole array)
 *   <prefix><user>/<session>/<key>.list.hash            list head (CAS format) or pointer (append format)
 *   <prefix><user>/<session>/<key>.list~g~<inc>~<gen>~<first>~<last>~<hash>  sealed segment (CAS format)
 *   <prefix><user>/<session>/<key>.list~i~<inc>~<gen>~<n>~<hash>   a list item over 1 MiB (CAS format)
 *   <prefix><user>/<session>/<key>.list~l~<inc>~<gen>~<seq>~<tag>  list log or segment (append format)
 *   <prefix><user>/<session>/<key>.list~a~<inc>~<gen>   archived list (generation <gen>)
 *   <prefix><user>/~sessions/<session>                  session marker
 *   <prefix><user>/~deleted/<session>                   tombstone of a session deleted with a token
 *   <prefix><user>/<session>/~ws~<inc>/<name>           workspace (a blob, kind=workspace)
 *   <prefix><user>/<session>/~wsu~<inc>/<name>          its pending upload (what was declared)
 *   <prefix><user>/<session>/~vu/<key>~<id>             a big single value uploaded, not yet committed
 *
 * An id made only of `[A-Za-z0-9._-]` (not `.`/`..`, not `anon` for a user, not ending in `.list`
 * or `.json` for a key) appears as it is; any other id is `!` + unpadded base64url of its UTF-8.
 * Encoded ids never contain `~` or `/`, so they cannot collide with the names the system adds, and
 * no two distinct (user, session, key) triples share an object.
 */
import { ValidationError } from './errors.js';

/** Byte limits of DESIGN.md. */
export const LIMITS = { userId: 128, sessionId: 180, key: 128, workspace: 128, prefix: 128 } as const;
/** The user segment of the anonymous user. */
export const ANONYMOUS = 'anon';
/** Digits of generation and sequence numbers in names (2^53 has 16), so name order is number order. */
const NUMBER_DIGITS = 16;

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
  if (Buffer.byteLength(id) > LIMITS[kind])
    throw new ValidationError(kind, `must be at most ${LIMITS[kind]} bytes`);
  return id;
}

/**
 * What is wrong with a key bound (a `listKeys` `prefix` or `startAfter`: a key or the start of one):
 * at most the key limit in bytes, valid UTF-8, no control characters; undefined when nothing is.
 * The store (keys.ts) and the HTTP query schema (lib/protocol/schemas.ts) apply the same rule.
 */
export function keyBoundProblem(value: string): string | undefined {
  if (Buffer.byteLength(value) > LIMITS.key) return `must be at most ${LIMITS.key} bytes`;
  if (CONTROL.test(value)) return 'must not contain control characters';
  if (LONE_SURROGATE.test(value)) return 'must be valid UTF-8 (no lone surrogates)';
  return undefined;
}

/** Refuses a prefix that is over-long, has control characters, or does not end with `/` (unless empty). */
export function checkPrefix(prefix: string): string {
  if (Buffer.byteLength(prefix) > LIMITS.prefix)
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
  if (kind === 'userId' && id === ANONYMOUS) return true;
  if (kind === 'key' && (id.endsWith('.list') || id.endsWith('.json'))) return true;
  return false;
}

/** The object-name segment of an id (checked first). */
export function encodeId(kind: IdKind, id: string): string {
  checkId(kind, id);
  return needsEncoding(kind, id) ? `!${Buffer.from(id, 'utf8').toString('base64url')}` : id;
}

/** The id of an object-name segment; throws `ValidationError` for a segment `encodeId` cannot produce. */
export function decodeId(kind: IdKind, segment: string): string {
  let id = segment;
  if (segment.startsWith('!')) {
    const body = segment.slice(1);
    if (!BASE64URL.test(body)) throw new ValidationError(kind, 'not an encoded id');
    id = Buffer.from(body, 'base64url').toString('utf8');
  }
  if (encodeId(kind, id) !== segment) throw new ValidationError(kind, 'not an encoded id');
  return id;
}

/** A generation or sequence number as it appears in names. */
export function padNumber(n: number): string {
  return String(n).padStart(NUMBER_DIGITS, '0');
}

/** Object names of one user (created by `layoutFor`). */
export interface UserLayout {
  /** `<prefix><user>/` */
  readonly root: string;
  /** Prefix of the session markers. */
  readonly markers: string;
  marker(sessionId: string): string;
  tombstone(sessionId: string): string;
  /** `<prefix><user>/<session>/`: everything the session owns. */
  session(sessionId: string): string;
  value(sessionId: string, key: string): string;
  listJson(sessionId: string, key: string): string;
  listHash(sessionId: string, key: string): string;
  /** A sealed segment of items `first` to `last` (inclusive), named by its content (`tag`: a short hash). */
  segment(
    sessionId: string,
    key: string,
    inc: string,
    gen: number,
    first: number,
    last: number,
    tag: string,
  ): string;
  /** A list item stored as its own object (over 1 MiB): item `n` of generation `gen`, `tag` a short hash. */
  listItem(sessionId: string, key: string, inc: string, gen: number, n: number, tag: string): string;
  /** Prefix of every log and segment of a list in the append format (all incarnations). */
  logs(sessionId: string, key: string): string;
  /** Log `seq` of generation `gen` (named `tag`) of a list in the append format. */
  log(sessionId: string, key: string, inc: string, gen: number, seq: number, tag: string): string;
  /** Prefix of the archives of a list in one incarnation. */
  archives(sessionId: string, key: string, inc: string): string;
  archive(sessionId: string, key: string, inc: string, gen: number): string;
  /** Prefix of the workspaces of a session in one incarnation. */
  workspaces(sessionId: string, inc: string): string;
  workspace(sessionId: string, inc: string, name: string): string;
  workspaceUpload(sessionId: string, inc: string, name: string): string;
  valueUpload(sessionId: string, key: string, uploadId: string): string;
  /** The record of a commit made without a lease (its id and digest), create-only. */
  commitRecord(sessionId: string, commitId: string): string;
}

/** The layout of one user's objects under `prefix`; a null or blank user is the anonymous user. */
export function layoutFor(prefix: string, userId: string | null | undefined): UserLayout {
  const user = userId == null || userId.trim() === '' ? ANONYMOUS : encodeId('userId', userId);
  const root = `${prefix}${user}/`;
  const session = (s: string) => `${root}${encodeId('sessionId', s)}/`;
  const key = (s: string, k: string) => `${session(s)}${encodeId('key', k)}`;
  return {
    root,
    markers: `${root}~sessions/`,
    marker: (s) => `${root}~sessions/${encodeId('sessionId', s)}`,
    tombstone: (s) => `${root}~deleted/${encodeId('sessionId', s)}`,
    session,
    value: (s, k) => `${key(s, k)}.json`,
    listJson: (s, k) => `${key(s, k)}.list.json`,
    listHash: (s, k) => `${key(s, k)}.list.hash`,
    segment: (s, k, inc, gen, first, last, tag) =>
      `${key(s, k)}.list~g~${inc}~${padNumber(gen)}~${padNumber(first)}~${padNumber(last)}~${tag}`,
    listItem: (s, k, inc, gen, n, tag) =>
      `${key(s, k)}.list~i~${inc}~${padNumber(gen)}~${padNumber(n)}~${tag}`,
    logs: (s, k) => `${key(s, k)}.list~l~`,
    log: (s, k, inc, gen, seq, tag) =>
      `${key(s, k)}.list~l~${inc}~${padNumber(gen)}~${padNumber(seq)}~${tag}`,
    archives: (s, k, inc) => `${key(s, k)}.list~a~${inc}~`,
    archive: (s, k, inc, gen) => `${key(s, k)}.list~a~${inc}~${padNumber(gen)}`,
    workspaces: (s, inc) => `${session(s)}~ws~${inc}/`,
    workspace: (s, inc, name) => `${session(s)}~ws~${inc}/${encodeId('workspace', name)}`,
    workspaceUpload: (s, inc, name) => `${session(s)}~wsu~${inc}/${encodeId('workspace', name)}`,
    valueUpload: (s, k, id) => `${session(s)}~vu/${encodeId('key', k)}~${id}`,
    commitRecord: (s, commitId) => `${session(s)}~commits/${encodeId('key', commitId)}`,
  };
}
