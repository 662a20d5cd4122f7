/**
 * The client's lists. What it knows of each list (the count and hash after its last write or read)
 * lets a save that extends a known list send only the new items, and an append whose answer was
 * lost tell whether it landed. A list (or archive) larger than an answer is read whole a page at a
 * time, checked against the first page's hash; the last items of a list are read whole the same way.
 */

import {
  AppendConflictError,
  PayloadTooLargeError,
  RestoreInProgressError,
  StoreError,
} from '../contract/errors.js';
import { canonicalJson, chainHash, EMPTY_HASH } from '../contract/hash.js';
import { MAX_APPEND_ITEMS } from '../contract/limits.js';
import type {
  AppendOptions,
  ArchiveInfo,
  ListPage,
  ListSaveOptions,
  ListWriteResult,
  PageOptions,
  TruncateOptions,
  WriteOptions,
} from '../contract/types.js';
import { paths } from '../protocol/paths.js';
import { HEADER_NAMES, schemas } from '../protocol/schemas.js';
import { randomId } from './random-id.js';
import {
  answered,
  bodyOf,
  callOf,
  fail,
  fence,
  hiddenRedirect,
  type Requests,
  requestIdOf,
  tagged,
} from './requests.js';
import type { CallOptions } from './types.js';

/**
 * A whole read of a list (or archive) found it rewritten before its end on every attempt: it changes
 * faster than it can be read. Read it with `limit` pages, or retry later.
 */
export class ListChangedError extends StoreError {
  override name = 'ListChangedError';
  constructor(
    readonly sessionId: string,
    readonly key: string,
    /** Whole reads started. */
    readonly attempts: number,
    readonly archiveId?: string,
  ) {
    super(
      `${archiveId === undefined ? 'list' : `archive ${archiveId} of list`} ${key} of session ${sessionId} changed during each of ${attempts} whole reads`,
    );
  }
}

/**
 * A list item too large for an answer, in a runtime whose fetch hides the 303 to where it is
 * stored (a browser): out of reach there.
 */
const hiddenItem = (at: number) =>
  new PayloadTooLargeError(
    `an item from ${at} of the list is larger than an answer, and this runtime's fetch hides the redirect to it (a browser): read it with agent-state-store/client/node`,
  );

/** Times a whole list read starts again when the list was rewritten meanwhile. */
const LIST_READ_RESTARTS = 3;

/** A page of a list read, with the request id of its answer. */
type PageRead<T> = ListPage<T> & { readonly requestId?: string | undefined };

/** A page without its request id. */
const pageOnly = <T>({ requestId: _, ...page }: PageRead<T>): ListPage<T> => page;

/** What the client knows of each list: count and hash after its last write or read. */
export class KnownLists {
  private readonly lists = new Map<string, { count: number; hash: string }>();

  get(sessionId: string, key: string): { count: number; hash: string } | undefined {
    return this.lists.get(listName(sessionId, key));
  }

  remember(sessionId: string, key: string, r: { count: number; hash: string }): void {
    this.lists.set(listName(sessionId, key), { count: r.count, hash: r.hash });
  }

  forget(sessionId: string, key: string): void {
    this.lists.delete(listName(sessionId, key));
  }

  /** Forgets every list of a session. */
  forgetSession(sessionId: string): void {
    for (const name of this.lists.keys()) if (name.startsWith(`${sessionId}\u0000`)) this.lists.delete(name);
  }

  forgetAll(): void {
    this.lists.clear();
  }
}

const listName = (sessionId: string, key: string) => `${sessionId}\u0000${key}`;

/**
 * A whole list (or archive) from `offset`, a page at a time. The first page's count N and hash H
 * fix the snapshot; later pages fill it to N items (they may report more: an appender was busy);
 * the chain hash of the N items must be H, else the list was rewritten meanwhile and the read starts
 * again (at most `LIST_READ_RESTARTS` times, then `changed`). A read from an offset that needs more
 * than one answer reads from 0: only the whole list can be checked against H. Undefined when
 * `read` finds nothing (an archive).
 */
async function readWhole<T>(
  read: (offset: number) => Promise<PageRead<T> | undefined>,
  offset: number,
  changed: (attempts: number) => ListChangedError,
): Promise<ListPage<T> | undefined> {
  for (let attempt = 1; ; attempt++) {
    const first = await read(offset);
    // One answer is one snapshot.
    if (!first || offset + first.items.length >= first.count) return first && pageOnly(first);
    const { count, hash } = first;
    const items = offset === 0 ? first.items : [];
    let last: PageRead<T> = first;
    while (items.length < count) {
      const page = await read(items.length);
      if (!page || page.count < count) break; // gone or shorter: rewritten
      last = page;
      if (page.items.length === 0)
        throw tagged(
          new PayloadTooLargeError(`item ${items.length} of the list is larger than an answer may be`),
          page,
        );
      for (const item of page.items.slice(0, count - items.length)) items.push(item);
    }
    if (items.length === count && chainHash(EMPTY_HASH, items) === hash) {
      const baseHash = offset === 0 ? EMPTY_HASH : chainHash(EMPTY_HASH, items.slice(0, offset));
      return { items: offset === 0 ? items : items.slice(offset), count, hash, offset, baseHash };
    }
    if (attempt > LIST_READ_RESTARTS) throw tagged(changed(attempt), last);
  }
}

/**
 * The last `n` items of a list, whole: a server answers `last` from what it reads at once and
 * may cut it at its old end (a young log or head, an answer's cap); the items before the cut are
 * read forward a page at a time and checked against the cut page's `baseHash` (a rewrite
 * meanwhile starts the read again, at most `LIST_READ_RESTARTS` times, then `changed`).
 */
async function readLast<T>(
  read: (query: PageOptions) => Promise<PageRead<T>>,
  n: number,
  changed: (attempts: number) => ListChangedError,
): Promise<ListPage<T>> {
  for (let attempt = 1; ; attempt++) {
    const tail = await read({ last: n });
    const from = Math.max(0, tail.count - n);
    if (tail.offset <= from) return pageOnly(tail);
    const before: T[] = [];
    let baseHash: string | undefined;
    let last: PageRead<T> = tail;
    while (from + before.length < tail.offset) {
      const at = from + before.length;
      const page = await read({ offset: at, limit: tail.offset - at });
      last = page;
      if (page.offset !== at || page.count < tail.count) break; // shorter: rewritten
      if (page.items.length === 0)
        throw tagged(
          new PayloadTooLargeError(`item ${at} of the list is larger than an answer may be`),
          page,
        );
      baseHash ??= page.baseHash;
      before.push(...page.items.slice(0, tail.offset - at));
    }
    if (
      baseHash !== undefined &&
      from + before.length === tail.offset &&
      chainHash(baseHash, before) === tail.baseHash
    )
      return { ...pageOnly(tail), items: [...before, ...tail.items], offset: from, baseHash };
    if (attempt > LIST_READ_RESTARTS) throw tagged(changed(attempt), last);
  }
}

/** The list calls of the client: reads, saves, appends, truncates, archives. */
export class Lists {
  constructor(
    private readonly requests: Requests,
    private readonly known: KnownLists,
  ) {}

  /**
   * A page of a list or an archive, as the server answers it (a list's first item too large for an
   * answer read from where it is stored); undefined for an absent archive.
   */
  private async readPage<T>(
    path: string,
    query: PageOptions,
    o: CallOptions | undefined,
    archived?: string,
  ): Promise<PageRead<T> | undefined> {
    const { offset, limit, last } = query;
    const response = await this.requests.call('GET', path, { query: { offset, limit, last }, call: o });
    if (archived !== undefined) {
      if (response.status === 404) return undefined;
      if (response.status === 202)
        throw await answered(new RestoreInProgressError(`archive ${archived}`), response);
    }
    if (hiddenRedirect(response)) throw hiddenItem(query.offset ?? 0);
    if (response.status === 303 && archived === undefined) {
      // The page's first item alone is over the answer cap: it is read from where it is stored.
      const {
        download,
        size: _,
        expiresAt: __,
        ...page
      } = await bodyOf(response, schemas.ListItemLocation, 'getList');
      const item = await this.requests.readStored<T>(download, o);
      return { ...page, items: [item], requestId: requestIdOf(response) };
    }
    if (response.status !== 200) return fail(response);
    const page = await bodyOf(response, schemas.ListPage, archived === undefined ? 'getList' : 'getArchive');
    return { ...(page as ListPage<T>), requestId: requestIdOf(response) };
  }

  /**
   * Without `limit`, every item from `offset` (default 0) of one snapshot of the list, read a page
   * at a time when it is larger than an answer: a busy appender's later items are left out, a
   * rewrite meanwhile starts the read again, at most 3 times, then `ListChangedError`. With
   * `last`, the last `last` items whole (the server may cut its answer at the old end: the rest is
   * read and checked the same way). With `limit`, the page the server answers (cut to fit an
   * answer). The count and hash are always the whole list's.
   */
  async getList<T>(sessionId: string, key: string, page: PageOptions & CallOptions = {}) {
    const path = paths.list(sessionId, key);
    // Never undefined: a list read answers an absent list as empty.
    const read = async (offset: number | undefined, limit?: number) =>
      (await this.readPage<T>(path, { offset, limit }, page)) as PageRead<T>;
    // `last` with `offset` or `limit` is the server's to refuse.
    if (page.limit !== undefined || (page.last !== undefined && page.offset !== undefined)) {
      const one = { offset: page.offset, limit: page.limit, last: page.last };
      const result = pageOnly((await this.readPage<T>(path, one, page)) as PageRead<T>);
      this.known.remember(sessionId, key, result);
      return result;
    }
    try {
      const changed = (attempts: number) => new ListChangedError(sessionId, key, attempts);
      if (page.last !== undefined) {
        const result = await readLast(
          async (query) => (await this.readPage<T>(path, query, page)) as PageRead<T>,
          page.last,
          changed,
        );
        this.known.remember(sessionId, key, result);
        return result;
      }
      const result = (await readWhole(read, page.offset ?? 0, changed)) as ListPage<T>;
      this.known.remember(sessionId, key, result);
      return result;
    } catch (error) {
      if (error instanceof ListChangedError) this.known.forget(sessionId, key);
      throw error;
    }
  }

  /**
   * Without `limit`, every item from `offset` (default 0) of the archive, read and checked as
   * `getList` reads a list. With `limit`, the page the server answers (cut to fit an answer).
   */
  async getArchive<T>(
    sessionId: string,
    key: string,
    archiveId: string,
    page: PageOptions & CallOptions = {},
  ) {
    const path = paths.archive(sessionId, key, archiveId);
    const read = (offset: number | undefined, limit?: number) =>
      this.readPage<T>(path, { offset, limit }, page, archiveId);
    if (page.limit !== undefined || page.last !== undefined) {
      const one = { offset: page.offset, limit: page.limit, last: page.last };
      const result = await this.readPage<T>(path, one, page, archiveId);
      return result && pageOnly(result);
    }
    return readWhole(
      read,
      page.offset ?? 0,
      (attempts) => new ListChangedError(sessionId, key, attempts, archiveId),
    );
  }

  async listArchives(sessionId: string, key: string, o?: CallOptions): Promise<ArchiveInfo[]> {
    const response = await this.requests.call('GET', paths.archives(sessionId, key), { call: o });
    if (response.status !== 200) return fail(response);
    const { archives } = await bodyOf(response, schemas.Archives, 'listArchives');
    return archives.map((a): ArchiveInfo => ({ ...a, archivedAt: new Date(a.archivedAt) }));
  }

  async saveList(
    sessionId: string,
    key: string,
    items: readonly unknown[],
    o?: ListSaveOptions & CallOptions,
  ): Promise<ListWriteResult> {
    // When the client knows the list and the new one extends it, only the new items travel.
    const last = this.known.get(sessionId, key);
    if (
      last &&
      items.length > last.count &&
      chainHash(EMPTY_HASH, items.slice(0, last.count)) === last.hash
    ) {
      try {
        const extra = items.slice(last.count);
        if (extra.length <= MAX_APPEND_ITEMS) {
          return await this.appendList(sessionId, key, extra, {
            expectedCount: last.count,
            expectedHash: last.hash,
            ...(o?.token === undefined ? {} : { token: o.token }),
            ...callOf(o),
          });
        }
      } catch (error) {
        if (!(error instanceof AppendConflictError)) throw error;
      }
    }
    // The base is the hash this client last saw (or the one given): a list changed meanwhile is
    // refused (412, ListPreconditionFailedError) rather than rewritten over.
    const base = o?.ifHash ?? last?.hash;
    const response = await this.requests.call('PUT', paths.list(sessionId, key), {
      body: items,
      headers: { ...fence(o), ...(base === undefined ? {} : { [HEADER_NAMES.ifMatch]: `"${base}"` }) },
      call: o,
    });
    if (response.status !== 200) {
      this.known.forget(sessionId, key);
      return fail(response);
    }
    const result: ListWriteResult = await bodyOf(response, schemas.ListWrite, 'saveList');
    this.known.remember(sessionId, key, result);
    return result;
  }

  /**
   * One logical append: one `Idempotency-Key` on every attempt, retried after a lost answer. A 409
   * `append-conflict` reporting exactly the count and hash this append makes from its base (the
   * `expectedHash`, or the hash known for `expectedCount`) is this append having landed; so is the
   * `unchanged` the store answers a replay with, after a lost answer. Either is reported as the
   * first answer would have been: `created` (from 0 items) or `appended`.
   */
  async appendList(
    sessionId: string,
    key: string,
    items: readonly unknown[],
    o: AppendOptions & CallOptions,
  ): Promise<ListWriteResult> {
    const last = this.known.get(sessionId, key);
    const baseHash =
      o.expectedHash ??
      (o.expectedCount === 0 ? EMPTY_HASH : last?.count === o.expectedCount ? last.hash : undefined);
    const retried = { lost: false };
    const response = await this.requests.call('POST', paths.listItems(sessionId, key), {
      body: {
        items,
        expectedCount: o.expectedCount,
        ...(o.expectedHash ? { expectedHash: o.expectedHash } : {}),
      },
      headers: { ...fence(o), [HEADER_NAMES.idempotencyKey]: o.writeId ?? randomId() },
      // A lost answer is retried only where the outcome can be checked: from a known base hash.
      idempotent: baseHash !== undefined,
      call: o,
      retried,
    });
    if (response.status !== 200) {
      if (response.status !== 409) return fail(response);
      this.known.forget(sessionId, key);
      const conflict: unknown = await fail(response).catch((error: unknown) => error);
      if (!(conflict instanceof AppendConflictError) || baseHash === undefined) throw conflict;
      // The items as the server hashed them: as they travelled, in JSON.
      const sent = JSON.parse(JSON.stringify(items)) as unknown[];
      const landed: ListWriteResult = {
        action: o.expectedCount === 0 ? 'created' : 'appended',
        count: o.expectedCount + items.length,
        hash: chainHash(baseHash, sent),
      };
      if (conflict.count === landed.count && conflict.hash === landed.hash) {
        this.known.remember(sessionId, key, landed);
        return landed;
      }
      // After a lost answer, another writer may have appended behind this append: it landed if
      // its items are where it put them (a conflict would otherwise claim nothing was written).
      if (retried.lost && conflict.count > o.expectedCount) {
        const at = await this.readPage(
          paths.list(sessionId, key),
          { offset: o.expectedCount, limit: items.length },
          o,
        );
        if (at && canonicalJson(at.items) === canonicalJson(sent)) return landed;
      }
      throw conflict;
    }
    let result: ListWriteResult = await bodyOf(response, schemas.ListWrite, 'appendList');
    // The store takes a replay for `unchanged`: after a lost answer, that replay is this append.
    if (result.action === 'unchanged' && retried.lost && result.count === o.expectedCount + items.length)
      result = { ...result, action: o.expectedCount === 0 ? 'created' : 'appended' };
    this.known.remember(sessionId, key, result);
    return result;
  }

  async truncateList(
    sessionId: string,
    key: string,
    o: TruncateOptions & CallOptions,
  ): Promise<ListWriteResult> {
    const response = await this.requests.call('POST', paths.listTruncate(sessionId, key), {
      body: { count: o.count, expectedHash: o.expectedHash },
      headers: { ...fence(o), [HEADER_NAMES.idempotencyKey]: o.writeId ?? randomId() },
      // The key names this truncate: a replay of one that landed answers its first answer.
      idempotent: true,
      call: o,
    });
    if (response.status !== 200) {
      if (response.status === 409 || response.status === 412) this.known.forget(sessionId, key);
      return fail(response);
    }
    const result: ListWriteResult = await bodyOf(response, schemas.ListWrite, 'truncateList');
    this.known.remember(sessionId, key, result);
    return result;
  }

  async deleteList(sessionId: string, key: string, o?: WriteOptions & CallOptions): Promise<void> {
    const response = await this.requests.call('DELETE', paths.list(sessionId, key), {
      headers: fence(o),
      call: o,
    });
    this.known.forget(sessionId, key);
    if (response.status !== 204) await fail(response);
  }

  /** Where item `n` of a list is stored, when it is too large for an answer; else undefined. */
  async locateListItem(sessionId: string, key: string, n: number, o?: CallOptions) {
    const response = await this.requests.call('GET', paths.list(sessionId, key), {
      query: { offset: n, limit: 1 },
      call: o,
    });
    if (response.status === 200) {
      await response.body?.cancel();
      return undefined;
    }
    if (hiddenRedirect(response)) throw hiddenItem(n);
    if (response.status !== 303) return fail(response);
    const located = await bodyOf(response, schemas.ListItemLocation, 'locateListItem');
    return { download: located.download, size: located.size, expiresAt: new Date(located.expiresAt) };
  }
}
