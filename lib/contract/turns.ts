/**
 * The checks of a turn's requests (docs/DESIGN.md, "Snapshots and commits"), the same for the store,
 * the server's turn route (before it takes the lease) and any engine: a snapshot's keys and pages,
 * a commit's id, token and changes; and of the list writes' options (append, whole-list save,
 * truncate), which every engine checks alike before any request.
 */
import { ValidationError } from './errors.js';
import { isHash } from './hash.js';
import { checkId, keyBoundProblem, keyOfCursor } from './ids.js';
import { jsonBody } from './json.js';
import { MAX_COMMIT_ITEMS, MAX_TURN_KEYS, WRITE_ID_PATTERN, WRITE_ID_RULE } from './limits.js';
import { checkToken } from './lock.js';
import { checkRevision } from './revisions.js';
import type {
  AppendOptions,
  CommitRequest,
  ListSaveOptions,
  PageOptions,
  SnapshotRequest,
  TruncateOptions,
} from './types.js';

const COUNT_RULE = 'must be a non-negative integer';
const HASH_RULE = 'must be a list hash (sha256:<64 hex>)';

/** Refuses a write id that is not 1 to 64 of `[A-Za-z0-9._:-]` (an Idempotency-Key, a commit id). */
function checkWriteId(writeId: unknown): void {
  if (writeId !== undefined && (typeof writeId !== 'string' || !WRITE_ID_PATTERN.test(writeId)))
    throw new ValidationError('writeId', WRITE_ID_RULE);
}

/** An append's options checked: its token, `expectedCount`, `expectedHash` and `writeId`. */
export function checkAppendOptions(options: AppendOptions): AppendOptions {
  checkToken(options.token, 'optional');
  if (!Number.isSafeInteger(options.expectedCount) || options.expectedCount < 0)
    throw new ValidationError('expectedCount', COUNT_RULE);
  if (options.expectedHash !== undefined && !isHash(options.expectedHash))
    throw new ValidationError('expectedHash', HASH_RULE);
  checkWriteId(options.writeId);
  return options;
}

/** A whole-list save's options checked: its token and `ifHash`. */
export function checkListSaveOptions(options: ListSaveOptions): ListSaveOptions {
  checkToken(options.token, 'optional');
  if (options.ifHash !== undefined && !isHash(options.ifHash)) throw new ValidationError('ifHash', HASH_RULE);
  return options;
}

/** A truncate's options checked: present, its token, `count`, `expectedHash` and `writeId`. */
export function checkTruncateOptions(options: TruncateOptions): TruncateOptions {
  if (typeof options !== 'object' || options === null) throw new ValidationError('options', 'required');
  checkToken(options.token, 'optional');
  if (!Number.isSafeInteger(options.count) || options.count < 0)
    throw new ValidationError('count', COUNT_RULE);
  if (!isHash(options.expectedHash)) throw new ValidationError('expectedHash', HASH_RULE);
  checkWriteId(options.writeId);
  return options;
}

/** Refuses a page (`offset`, `limit`, `last`) that is not non-negative integers, or `last` with the others. */
export function checkPage(page: PageOptions): void {
  for (const field of ['offset', 'limit', 'last'] as const) {
    const value = page[field];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0))
      throw new ValidationError(field, 'must be a non-negative integer');
  }
  if (page.last !== undefined && (page.offset !== undefined || page.limit !== undefined))
    throw new ValidationError('last', 'cannot be combined with offset or limit');
}

// ---- validation --------------------------------------------------------------------------------

/** Checks a snapshot request as `snapshot` does (the turn route checks it before it takes the lease). */
export function checkSnapshot(request: SnapshotRequest) {
  if (typeof request !== 'object' || request === null) throw new ValidationError('request', 'required');
  const values = request.values ?? [];
  const lists = request.lists ?? [];
  if (!Array.isArray(values)) throw new ValidationError('values', 'must be an array of keys');
  if (!Array.isArray(lists)) throw new ValidationError('lists', 'must be an array');
  const page = request.valuePage;
  if (page !== undefined && (typeof page !== 'object' || page === null))
    throw new ValidationError('valuePage', 'must be an object');
  const pageKeys = page?.limit ?? 0;
  if (page !== undefined) {
    if (!Number.isSafeInteger(pageKeys) || pageKeys < 1)
      throw new ValidationError('valuePage.limit', 'must be a positive integer');
    if (page.prefix !== undefined) {
      const problem = typeof page.prefix === 'string' ? keyBoundProblem(page.prefix) : 'must be a string';
      if (problem) throw new ValidationError('valuePage.prefix', problem);
    }
    if (page.cursor !== undefined) keyOfCursor(page.cursor, 'valuePage.cursor');
  }
  if (values.length + lists.length + pageKeys > MAX_TURN_KEYS)
    throw new ValidationError(
      'values',
      `at most ${MAX_TURN_KEYS} keys (values, lists and the value page's limit together)`,
    );
  values.forEach((key, i) => {
    checkKey(`values[${i}]`, key);
  });
  lists.forEach((l, i) => {
    if (typeof l !== 'object' || l === null) throw new ValidationError(`lists[${i}]`, 'must be an object');
    checkKey(`lists[${i}].key`, l.key);
    if (l.last !== undefined) checkPage({ last: l.last });
  });
  unique('values', values);
  unique(
    'lists',
    lists.map((l) => l.key),
  );
  return { values, lists, ...(page ? { page } : {}) };
}

/** Checks a commit request as `commit` does. */
export function checkCommit(request: CommitRequest): void {
  if (typeof request !== 'object' || request === null) throw new ValidationError('request', 'required');
  const { commitId, values = [], lists = [] } = request;
  if (typeof commitId !== 'string' || !WRITE_ID_PATTERN.test(commitId))
    throw new ValidationError('commitId', WRITE_ID_RULE);
  checkToken(request.token, 'optional');
  if (!Array.isArray(values)) throw new ValidationError('values', 'must be an array');
  if (!Array.isArray(lists)) throw new ValidationError('lists', 'must be an array');
  if (values.length + lists.length > MAX_TURN_KEYS)
    throw new ValidationError('values', `at most ${MAX_TURN_KEYS} keys (values and lists together)`);
  values.forEach((v, i) => {
    const at = `values[${i}]`;
    if (typeof v !== 'object' || v === null) throw new ValidationError(at, 'must be an object');
    checkKey(`${at}.key`, v.key);
    if ('delete' in v) {
      if (v.delete !== true) throw new ValidationError(`${at}.delete`, 'must be true');
      if ('value' in v) throw new ValidationError(at, 'a delete has no value');
      return;
    }
    if (!('value' in v)) throw new ValidationError(`${at}.value`, 'required (or delete: true)');
    jsonBody(v.value);
    if (v.ifVersion !== undefined && (typeof v.ifVersion !== 'string' || v.ifVersion === ''))
      throw new ValidationError(`${at}.ifVersion`, 'must be a version (an etag)');
    if (v.ifAbsent !== undefined && typeof v.ifAbsent !== 'boolean')
      throw new ValidationError(`${at}.ifAbsent`, 'must be a boolean');
    if (v.ifVersion !== undefined && v.ifAbsent)
      throw new ValidationError(`${at}.ifVersion`, 'cannot be combined with ifAbsent');
    if (v.seenVersion !== undefined && (typeof v.seenVersion !== 'string' || v.seenVersion === ''))
      throw new ValidationError(`${at}.seenVersion`, 'must be a version (an etag)');
    if (v.seenVersion !== undefined && (v.ifVersion !== undefined || v.ifAbsent))
      throw new ValidationError(`${at}.seenVersion`, 'is a hint for a save without ifVersion or ifAbsent');
    checkRevision(`${at}.ifRevision`, v.ifRevision);
    if (v.ifRevision !== undefined && v.ifAbsent)
      throw new ValidationError(`${at}.ifRevision`, 'cannot be combined with ifAbsent');
    checkRevision(`${at}.seenRevision`, v.seenRevision);
    if (v.seenRevision !== undefined && v.ifVersion === undefined && v.seenVersion === undefined)
      throw new ValidationError(
        `${at}.seenRevision`,
        'is the revision of ifVersion or seenVersion: name one',
      );
  });
  let items = 0;
  lists.forEach((l, i) => {
    const at = `lists[${i}]`;
    if (typeof l !== 'object' || l === null) throw new ValidationError(at, 'must be an object');
    checkKey(`${at}.key`, l.key);
    const kinds = (['append', 'replace', 'truncate'] as const).filter((k) => k in l);
    if (kinds.length !== 1) throw new ValidationError(at, 'needs exactly one of append, replace, truncate');
    const hash = (required: boolean) => {
      const value = (l as { expectedHash?: unknown }).expectedHash;
      if ((required || value !== undefined) && !isHash(value))
        throw new ValidationError(`${at}.expectedHash`, 'must be a list hash (sha256:<64 hex>)');
    };
    if ('append' in l) {
      if (!Array.isArray(l.append) || l.append.length < 1)
        throw new ValidationError(`${at}.append`, 'must hold at least one item');
      if (!Number.isSafeInteger(l.expectedCount) || l.expectedCount < 0)
        throw new ValidationError(`${at}.expectedCount`, 'must be a non-negative integer');
      hash(true);
      items += l.append.length;
      for (const item of l.append) jsonBody(item);
    } else if ('replace' in l) {
      if (!Array.isArray(l.replace)) throw new ValidationError(`${at}.replace`, 'must be an array');
      hash(false);
      items += l.replace.length;
      for (const item of l.replace) jsonBody(item);
    } else {
      if (!Number.isSafeInteger(l.truncate) || l.truncate < 0)
        throw new ValidationError(`${at}.truncate`, 'must be a non-negative integer');
      hash(true);
    }
  });
  if (items > MAX_COMMIT_ITEMS)
    throw new ValidationError('lists', `at most ${MAX_COMMIT_ITEMS} list items per commit`);
  // A value key and a list key may share a name (they are different objects); not two of one kind.
  unique(
    'values',
    values.map((v) => v.key),
  );
  unique(
    'lists',
    lists.map((l) => l.key),
  );
}

/** A key, refused with the field it came in. */
function checkKey(field: string, key: unknown): void {
  try {
    checkId('key', key);
  } catch (error) {
    if (error instanceof ValidationError)
      throw new ValidationError(field, error.message.replace(/^key: /, ''));
    throw error;
  }
}

function unique(field: string, keys: readonly string[]): void {
  const seen = new Set<string>();
  for (const key of keys) {
    if (seen.has(key)) throw new ValidationError(field, `the key ${JSON.stringify(key)} is there twice`);
    seen.add(key);
  }
}
