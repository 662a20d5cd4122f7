/**
 * What every list format offers the store (docs/DESIGN.md, "Lists"): one owner per format, the
 * store only checks ids and options and delegates. Also what both formats share: the page
 * arithmetic, the write records and their answers, and the reads and creates of their objects.
 */
import { randomBytes } from 'node:crypto';
import {
  BackendError,
  IdempotencyKeyReusedError,
  ListPreconditionFailedError,
  ListTooShortError,
} from '../../contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../contract/hash.js';
import { jsonBody } from '../../contract/json.js';
import { checkPage } from '../../contract/turns.js';
import type {
  AppendOptions,
  ListAction,
  ListPage,
  ListSaveOptions,
  ListWriteResult,
  PageOptions,
  TruncateOptions,
} from '../../contract/types.js';
import { ObjectConditionFailedError } from '../../drivers/errors.js';
import type { ObjectStoreDriver, StoredObject } from '../../drivers/types.js';
import type { Marker, MarkerRead } from '../sessions.js';
import { compareRecord, type Fence } from '../write-path.js';

/** What `listKeys` shows of a list. */
export interface ListStat {
  readonly count: number;
  readonly hash: string;
  /** When the list was last written (its head, or its current log). */
  readonly lastModified: Date;
}

/**
 * A list as a commit read it before its first write (lib/store/commits.ts, docs/DESIGN.md
 * "Snapshots and commits"): its state, and (kept by the format) what it read, so that
 * `appendPeeked` writes without reading the list again.
 */
export interface ListPeek {
  readonly count: number;
  readonly hash: string;
  /** The highest fencing token the list's writes carried. */
  readonly token: number | null;
  /** The list is absent or deleted in the incarnation read (a token write to it raises the marker's token). */
  readonly creates: boolean;
  /**
   * The answer recorded for this write id (a `recordId`), when the list remembers it (its last 64
   * writes): looked for in what was read, and with `deep` in the current log's history too (one
   * GET in the append format). `IdempotencyKeyReusedError` when its name is recorded with another body.
   */
  recorded(writeId: string, deep: boolean): Promise<ListWriteResult | undefined>;
}

/**
 * The fence of a list write (lib/store/write-path.ts): the formats compare tokens only through it.
 * A named write's `writeId` is a record id (`recordId`: its Idempotency-Key or commit bound to the
 * request's digest); a write without one gets a random one (`newWriteId`), never taken for reused.
 */
export interface Fenced {
  readonly fence: Fence;
}

/** The list operations of one user's sessions, in one storage format (archives are the store's: lists/archives.ts). */
export interface ListFormat {
  /**
   * A page (or, without `limit` and `last`, the whole list); an absent list is empty. `marker`: a
   * marker read shared with other reads (a snapshot reads it once), used for the first attempt.
   */
  read(sessionId: string, key: string, page: PageOptions, marker?: Promise<MarkerRead>): Promise<ListPage>;
  /**
   * The pre-read of a commit: the list's head (CAS) or current log's tail (append) as the
   * incarnation of `marker` (the commit's one marker read, in parallel) sees it;
   * `CorruptValueError` when it is damaged.
   */
  peek(sessionId: string, key: string, marker: Promise<MarkerRead>): Promise<ListPeek>;
  /**
   * `append` on what `peek` read (nothing read again unless the write loses a race), under the
   * marker the commit's `forWrite` answered. The caller has checked the options.
   */
  appendPeeked(
    sessionId: string,
    key: string,
    items: readonly unknown[],
    options: ListAppend & { readonly writeId: string },
    marker: Marker,
    peek: ListPeek,
  ): Promise<ListWriteResult>;
  append(
    sessionId: string,
    key: string,
    items: readonly unknown[],
    options: ListAppend,
  ): Promise<ListWriteResult>;
  save(
    sessionId: string,
    key: string,
    items: readonly unknown[],
    options: ListSave,
  ): Promise<ListWriteResult>;
  /** Archives and removes the list; the marker it wrote under, or undefined when there was nothing to remove. */
  remove(sessionId: string, key: string, options: Fenced): Promise<Marker | undefined>;
  /**
   * Keeps the first `options.count` items if the list has `options.expectedHash` (the store has
   * checked the options): archives the removed ones (from `count` on), then commits a new
   * generation that keeps the old one's immutable objects wholly inside the kept prefix as they are.
   */
  truncate(sessionId: string, key: string, options: ListTruncate): Promise<ListWriteResult>;
  /**
   * The list's count, hash and last write as incarnation `inc` sees it (the caller read the
   * marker), or undefined when it is absent or deleted; `CorruptValueError` when it is damaged.
   */
  stat(sessionId: string, key: string, inc: string): Promise<ListStat | undefined>;
  /** The object name of item `n` where the format stores it as an object of its own, else undefined. */
  itemObject?(sessionId: string, key: string, n: number): Promise<string | undefined>;
}

/** The options of a format's writes: the caller's, with the fence in place of the token. */
export type ListAppend = Omit<AppendOptions, 'token'> & Fenced;
export type ListSave = Omit<ListSaveOptions, 'token'> & Fenced;
export type ListTruncate = Omit<TruncateOptions, 'token'> & Fenced;

/** The content type of segments and logs (item lines). */
export const NDJSON = 'application/x-ndjson';

/** Write ids a list remembers with their answers (a replay older than that is recognised by its items). */
export const KEPT_WRITES = 64;
/** Attempts of a read whose objects vanished under it (retired meanwhile, or a concurrent session delete). */
export const READ_ATTEMPTS = 3;

/** `[write id, count after, hash after, action]`: what a replay of the write answers. */
export type WriteRecord = readonly [string, number, string, ListAction];

/** Write records as `[write id, answer]`, for `recordedAnswer`. */
export function answersOf(writes: readonly WriteRecord[]): Array<readonly [string, ListWriteResult]> {
  return writes.map((w) => [w[0], { action: w[3], count: w[1], hash: w[2] }] as const);
}

/** A write id for a write whose caller gave none. */
export function newWriteId(): string {
  return `w.${randomBytes(12).toString('base64url')}`;
}

/**
 * The recorded answer of write `writeId` among a list's records (`[write id, answer]`): the answer
 * when this very request landed; for a named write (an Idempotency-Key or a commit, `recordId`)
 * whose name the list records with another body, `IdempotencyKeyReusedError`.
 */
export function recordedAnswer(
  records: Iterable<readonly [string, ListWriteResult]>,
  writeId: string,
  named: boolean,
): ListWriteResult | undefined {
  for (const [id, answer] of records) {
    const seen = compareRecord(id, writeId);
    if (seen === 'same') return answer;
    if (seen === 'reused' && named) throw new IdempotencyKeyReusedError();
  }
  return undefined;
}

/** The serialized size of an item as a stored line. */
export function itemBytes(item: unknown): number {
  return Buffer.byteLength(jsonBody(item)) + 1;
}

/** The higher of a recorded token and a write's. */
export function maxToken(recorded: number | null, token: number | undefined): number | null {
  if (token === undefined) return recorded;
  return recorded === null ? token : Math.max(recorded, token);
}

/** The chain hash after each prefix of `items` appended to `from`: `[h0, h1, …, hn]`. */
export function prefixHashes(items: readonly unknown[], from = EMPTY_HASH): string[] {
  const out = [from];
  for (const item of items) out.push(chainHash(out.at(-1) as string, [item]));
  return out;
}

/** The item range `[from, to)` a page asks for, in a list of `count` items. */
export interface PageRange {
  readonly from: number;
  readonly to: number;
  /** Which end to keep when the page must be cut: the newest items for `last`, the oldest otherwise. */
  readonly keep: 'old' | 'new';
}

/** The range a (checked) page asks for. */
export function rangeOf(page: PageOptions, count: number): PageRange {
  if (page.last !== undefined) return { from: Math.max(0, count - page.last), to: count, keep: 'new' };
  const from = Math.min(page.offset ?? 0, count);
  const to = page.limit === undefined ? count : Math.min(count, from + page.limit);
  return { from, to, keep: 'old' };
}

/** A page of a list held whole in memory (an archive). */
export function pageOfItems<T>(items: readonly T[], page: PageOptions, hash?: string): ListPage<T> {
  checkPage(page);
  const { from, to } = rangeOf(page, items.length);
  const whole = hash ?? chainHash(EMPTY_HASH, items);
  const baseHash =
    from === 0 ? EMPTY_HASH : from === items.length ? whole : chainHash(EMPTY_HASH, items.slice(0, from));
  return { items: items.slice(from, to), count: items.length, hash: whole, offset: from, baseHash };
}

/** The page of an absent list. */
export function emptyPage<T>(): ListPage<T> {
  return { items: [], count: 0, hash: EMPTY_HASH, offset: 0, baseHash: EMPTY_HASH };
}

/** The outcome an append decided without writing, or the write it wants. */
export function replayOf(
  options: AppendOptions,
  items: readonly unknown[],
  count: number,
  hash: string,
): ListWriteResult | undefined {
  const { expectedCount, expectedHash } = options;
  if (expectedHash === undefined || count !== expectedCount + items.length) return undefined;
  return chainHash(expectedHash, items) === hash ? { action: 'unchanged', count, hash } : undefined;
}

/** A truncate's checks on the list's count and hash: throws, answers `unchanged`, or undefined (cut it). */
export function checkTruncate(
  options: TruncateOptions,
  count: number,
  hash: string,
): ListWriteResult | undefined {
  if (options.expectedHash !== hash) throw new ListPreconditionFailedError(hash);
  if (options.count > count) throw new ListTooShortError(options.count, count);
  if (options.count === count) return { action: 'unchanged', count, hash };
  return undefined;
}

/** Refuses a body shorter than its object: a read that broke off, not damage (retryable). */
export function checkWholeRead(object: StoredObject, name: string): void {
  if (object.body.byteLength !== object.size) throw new BackendError(`short read of ${name}`, true);
}

/**
 * Creates an object that never changes (create-only): one already there under its name holds the
 * same bytes (a retry, or a racing writer that made the same object).
 */
export async function createOnce(
  driver: ObjectStoreDriver,
  name: string,
  body: Buffer,
  contentType: string,
): Promise<void> {
  try {
    await driver.put(name, body, { contentType, tags: { kind: 'state' }, ifNoneMatch: '*' });
  } catch (error) {
    if (!(error instanceof ObjectConditionFailedError)) throw error;
  }
}
