/**
 * AgentStateStore on any `ObjectStoreDriver`: the reference contract (AgentScope's AgentStateStore)
 * with none of its faults. `createStateStore(...).forUser(userId)` is the user-scoped `SessionStore`.
 */
import { ObjectConditionFailedError, ObjectNotFoundError } from '../drivers/errors.js';
import type { ObjectInfo, ObjectStoreDriver, StoredObject } from '../drivers/types.js';
import {
  backendError,
  backoff,
  checkToken,
  getOrUndefined,
  jsonBody,
  listAll,
  MAX_WRITE_ATTEMPTS,
  parseJsonObject,
  type StoreContext,
} from './context.js';
import type { ContentEncoding } from './encoding.js';
import {
  AppendConflictError,
  ContendedError,
  CorruptValueError,
  FencedError,
  PartialDeleteError,
  PreconditionFailedError,
  PreconditionUnsupportedError,
  ValidationError,
} from './errors.js';
import { chainHash, EMPTY_HASH } from './hash.js';
import { checkId, checkPrefix, decodeId, layoutFor, type UserLayout } from './ids.js';
import { MAX_APPEND_ITEMS, MAX_SESSION_PAGE } from './limits.js';
import { EMPTY_STATE, type ListState, Lists, slicePage } from './lists.js';
import { type Marker, Sessions } from './sessions.js';
import type {
  AppendOptions,
  ListPage,
  ListWriteResult,
  MetricsSink,
  PageOptions,
  SaveOptions,
  SessionPage,
  SessionStore,
  WorkspaceUploadRequest,
  WriteOptions,
} from './types.js';
import { Workspaces } from './workspaces.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Options of `createStateStore`. */
export interface StateStoreOptions {
  readonly driver: ObjectStoreDriver;
  /** Prefix of every object name; default `agent-state/`. Ends with `/`, at most 128 bytes. */
  readonly prefix?: string;
  /** Days a session lives after its last activity; default 30. */
  readonly retentionDays?: number;
  /** Keep-alive interval R in ms: the marker is refreshed at most once per R; default 1 hour. */
  readonly keepAliveMs?: number;
  /** Days state objects outlive their marker under the lifecycle rules (lib/lifecycle); default 2. */
  readonly stateGraceDays?: number;
  /** Counters sink; default none. */
  readonly metrics?: MetricsSink;
  /** Clock; default `Date.now`. */
  readonly now?: () => number;
  /** Enables `truncateAllSessions` (every user; for tests); default false. */
  readonly allowTruncate?: boolean;
  /** Unfolded slots that trigger re-materializing `.list.json`; default 32 (the bound on slots a read fetches). */
  readonly foldEvery?: number;
  /** Slots after which a generation is rolled over; default 512. */
  readonly rolloverAt?: number;
  /** Age after which past generations' slots are deleted; default 10 minutes. */
  readonly retireAfterMs?: number;
  /** Longest read-to-commit of a list write before it gives up (retryable); default 60 s. */
  readonly maxCommitMs?: number;
  /** How archived lists are stored; default `gzip`. */
  readonly archiveEncoding?: ContentEncoding;
  /** Seconds presigned URLs stay valid; default 900 (15 minutes). */
  readonly presignExpiresIn?: number;
  /** Days a restored copy of an archived object stays readable; default 1. */
  readonly restoreDays?: number;
  /** Largest single value committed from a direct upload; default 64 MiB. */
  readonly maxValueBytes?: number;
}

/** The store: user-scoped stores, and the test-only truncate. */
export interface StateStore {
  /** The store of one user; null or blank is the anonymous user. */
  forUser(userId: string | null | undefined): SessionStore;
  /** Deletes every session of every user under the prefix; only with `allowTruncate`. */
  truncateAllSessions?(): Promise<void>;
}

/** Creates a state store over a driver. */
export function createStateStore(options: StateStoreOptions): StateStore {
  const prefix = checkPrefix(options.prefix ?? 'agent-state/');
  const retentionDays = options.retentionDays ?? 30;
  if (!(retentionDays > 0)) throw new ValidationError('retentionDays', 'must be positive');
  if ((options.stateGraceDays ?? 2) * DAY_MS <= 2 * (options.keepAliveMs ?? 3_600_000)) {
    throw new ValidationError('stateGraceDays', 'must be well over the keep-alive interval');
  }
  const ctx: StoreContext = {
    driver: options.driver,
    prefix,
    retentionMs: retentionDays * DAY_MS,
    keepAliveMs: options.keepAliveMs ?? 60 * 60 * 1000,
    stateGraceMs: (options.stateGraceDays ?? 2) * DAY_MS,
    foldEvery: options.foldEvery ?? 32,
    rolloverAt: options.rolloverAt ?? 512,
    retireAfterMs: options.retireAfterMs ?? 10 * 60 * 1000,
    maxCommitMs: options.maxCommitMs ?? 60_000,
    archiveEncoding: options.archiveEncoding ?? 'gzip',
    presignExpiresIn: options.presignExpiresIn ?? 900,
    restoreDays: options.restoreDays ?? 1,
    maxValueBytes: options.maxValueBytes ?? 64 * 1024 * 1024,
    now: options.now ?? Date.now,
    metrics: options.metrics ?? { count: () => {} },
  };
  const store: StateStore = {
    forUser: (userId) => {
      if (userId != null && userId.trim() !== '') checkId('userId', userId);
      return guarded(new UserStore(ctx, layoutFor(prefix, userId)));
    },
  };
  if (options.allowTruncate) {
    store.truncateAllSessions = async () => {
      const names = (await listAll(ctx.driver, prefix)).map((o) => o.key);
      const { failed } = await ctx.driver.deleteMany(names);
      if (failed.length > 0) throw new PartialDeleteError(failed);
    };
  }
  return store;
}

/** Wraps every method so that driver failures surface as typed store errors. */
function guarded(target: SessionStore): SessionStore {
  return new Proxy(target, {
    get(obj, name, receiver) {
      const value = Reflect.get(obj, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        (value as (...a: unknown[]) => Promise<unknown>).apply(obj, args).catch((error: unknown) => {
          throw backendError(error);
        });
    },
  });
}

class UserStore implements SessionStore {
  private readonly sessions: Sessions;
  private readonly lists: Lists;
  private readonly workspaces: Workspaces;

  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
  ) {
    this.sessions = new Sessions(ctx, layout);
    this.lists = new Lists(ctx, layout);
    this.workspaces = new Workspaces(ctx, layout, this.sessions);
  }

  private ids(sessionId: string, key?: string): void {
    checkId('sessionId', sessionId);
    if (key !== undefined) checkId('key', key);
  }

  // ---- single values -------------------------------------------------------------------------

  async get<T>(sessionId: string, key: string): Promise<T | undefined> {
    return (await this.getVersioned<T>(sessionId, key))?.value;
  }

  async getVersioned<T>(sessionId: string, key: string) {
    this.ids(sessionId, key);
    const [read, object] = await Promise.all([
      this.sessions.read(sessionId),
      getOrUndefined(this.ctx.driver, this.layout.value(sessionId, key)),
    ]);
    if (!read.live || !object || object.metadata.inc !== read.live.inc) return undefined;
    return { value: this.parseValue<T>(object, key), version: object.etag };
  }

  private parseValue<T>(object: StoredObject, key: string): T {
    try {
      return JSON.parse(Buffer.from(object.body).toString('utf8')) as T;
    } catch (error) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(key, { cause: error });
    }
  }

  async save(sessionId: string, key: string, value: unknown, options: SaveOptions = {}) {
    this.ids(sessionId, key);
    checkToken(options.token);
    const body = jsonBody(value);
    const { driver } = this.ctx;
    const cas = driver.capabilities.conditionalOverwrite;
    if (options.ifVersion !== undefined && !cas) throw new PreconditionUnsupportedError(driver.name);
    if (options.ifVersion !== undefined && options.ifAbsent) {
      throw new ValidationError('ifVersion', 'cannot be combined with ifAbsent');
    }
    const name = this.layout.value(sessionId, key);
    const conditional =
      options.ifVersion !== undefined || options.ifAbsent === true || options.token !== undefined;
    for (let attempt = 0; ; attempt++) {
      const [read, head] = await Promise.all([
        this.sessions.read(sessionId),
        conditional ? headOrUndefined(driver, name) : undefined,
      ]);
      const marker = await this.sessions.forWrite(sessionId, read, options.token);
      // An object of another incarnation is a leftover: absent for every purpose but its etag.
      const current = head && head.metadata.inc === marker.inc ? head : undefined;
      const stored = Number(current?.metadata.token);
      if (options.token !== undefined && Number.isSafeInteger(stored) && stored > options.token) {
        this.ctx.metrics.count('fencedWrites');
        throw new FencedError(options.token, stored);
      }
      if (options.ifAbsent && current) throw new PreconditionFailedError(current.etag);
      if (options.ifVersion !== undefined && current?.etag !== options.ifVersion) {
        throw new PreconditionFailedError(current?.etag ?? null);
      }
      const metadata: Record<string, string> = { inc: marker.inc };
      if (options.token !== undefined) metadata.token = String(options.token);
      // The write is conditional on what was just read, so the checks above hold atomically with it.
      const condition = !conditional
        ? {}
        : head === undefined
          ? { ifNoneMatch: '*' as const }
          : cas
            ? { ifMatch: head.etag }
            : {};
      try {
        const { etag } = await driver.put(name, body, {
          contentType: 'application/json',
          metadata,
          tags: { kind: 'state' },
          ...condition,
        });
        return { version: etag };
      } catch (error) {
        if (!(error instanceof ObjectConditionFailedError)) throw error;
        if (options.ifVersion !== undefined || options.ifAbsent) {
          const now = await headOrUndefined(driver, name);
          throw new PreconditionFailedError(now && now.metadata.inc === marker.inc ? now.etag : null);
        }
        if (attempt >= 3) throw new ContendedError('the value is too contended; nothing was written; retry');
        // A token write raced another write: read again, so the token check sees it.
      }
    }
  }

  async deleteKey(sessionId: string, key: string, options: WriteOptions = {}) {
    this.ids(sessionId, key);
    checkToken(options.token);
    const name = this.layout.value(sessionId, key);
    const [read, head] = await Promise.all([
      this.sessions.read(sessionId),
      options.token === undefined ? undefined : headOrUndefined(this.ctx.driver, name),
    ]);
    if (!read.live) return;
    await this.sessions.forWrite(sessionId, read, options.token);
    const stored = Number(head?.metadata.token);
    if (options.token !== undefined && Number.isSafeInteger(stored) && stored > options.token) {
      this.ctx.metrics.count('fencedWrites');
      throw new FencedError(options.token, stored);
    }
    await this.ctx.driver.delete(name);
  }

  // ---- lists ---------------------------------------------------------------------------------

  /** Marker, manifest and (when asked) the slot listing, in one round trip. */
  private async listMeta(sessionId: string, key: string, withSlots: boolean) {
    const [read, manifest, slots] = await Promise.all([
      this.sessions.read(sessionId),
      this.lists.readManifest(sessionId, key),
      withSlots ? this.lists.listSlots(sessionId, key) : undefined,
    ]);
    return { read, manifest, slots };
  }

  private async stateOf(
    sessionId: string,
    key: string,
    marker: Marker,
    manifest: (ListState & { inc: string }) | undefined,
    slots?: Array<{ inc: string; gen: number; seq: number }>,
  ): Promise<ListState> {
    if (manifest && manifest.inc === marker.inc) {
      const latest = slots?.filter((slot) => slot.inc === marker.inc).at(-1);
      // Without a listing the manifest is trusted; a stale one makes the slot write fail and re-read.
      if (!slots || (latest && latest.gen === manifest.gen && latest.seq === manifest.seq)) return manifest;
    }
    if (slots && !slots.some((slot) => slot.inc === marker.inc)) return EMPTY_STATE;
    this.ctx.metrics.count('manifestRepairs');
    return this.lists.stateFromSlots(sessionId, key, marker.inc);
  }

  async appendList(sessionId: string, key: string, items: readonly unknown[], options: AppendOptions) {
    this.ids(sessionId, key);
    checkToken(options.token);
    checkItems(items, 1, MAX_APPEND_ITEMS);
    const { expectedCount, expectedHash } = options;
    if (!Number.isSafeInteger(expectedCount) || expectedCount < 0) {
      throw new ValidationError('expectedCount', 'must be a non-negative integer');
    }
    const { read, manifest } = await this.listMeta(sessionId, key, false);
    const marker = await this.sessions.forWrite(sessionId, read, options.token);
    const state = await this.stateOf(sessionId, key, marker, manifest);
    const decide = (s: ListState): 'append' | ListWriteResult => {
      if (s.count === expectedCount && (expectedHash === undefined || expectedHash === s.hash))
        return 'append';
      const replay = expectedHash !== undefined && chainHash(expectedHash, items) === s.hash;
      if (s.count === expectedCount + items.length && replay)
        return { action: 'unchanged', count: s.count, hash: s.hash };
      throw new AppendConflictError(s.count, s.hash);
    };
    try {
      // The state came from the manifest alone (`firstVerified` false): a lagging manifest is
      // checked against the slots before a refusal.
      return (await this.lists.append(
        sessionId,
        key,
        marker,
        state,
        items,
        decide,
        options.token,
        false,
      )) as ListWriteResult;
    } catch (error) {
      if (!(error instanceof AppendConflictError)) throw error;
      // Without an expected hash a replay is recognised by reading the tail back.
      if (expectedHash === undefined && error.count === expectedCount + items.length) {
        const content = await this.lists.readAll(sessionId, key, marker.inc);
        const tail = content.items.slice(expectedCount);
        if (content.count === error.count && chainHash(EMPTY_HASH, tail) === chainHash(EMPTY_HASH, items)) {
          return { action: 'unchanged', count: content.count, hash: content.hash } satisfies ListWriteResult;
        }
      }
      this.ctx.metrics.count('appendConflicts');
      throw error;
    }
  }

  async saveList(sessionId: string, key: string, items: readonly unknown[], options: WriteOptions = {}) {
    this.ids(sessionId, key);
    checkToken(options.token);
    checkItems(items, 0, Number.MAX_SAFE_INTEGER);
    const { read, manifest, slots } = await this.listMeta(sessionId, key, true);
    // Saving [] over an absent list changes nothing: no session is created for it.
    if (items.length === 0 && (!read.live || !slots?.some((slot) => slot.inc === read.live?.inc))) {
      return { action: 'unchanged', count: 0, hash: EMPTY_HASH } satisfies ListWriteResult;
    }
    const marker = await this.sessions.forWrite(sessionId, read, options.token);
    let state = await this.stateOf(sessionId, key, marker, manifest, slots);
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      if (attempt > 0) await backoff(attempt);
      if (state.type === 'seal') state = await this.lists.stateFromSlots(sessionId, key, marker.inc);
      const prefixHash =
        items.length >= state.count ? chainHash(EMPTY_HASH, items.slice(0, state.count)) : undefined;
      if (prefixHash === state.hash) {
        if (items.length === state.count)
          return { action: 'unchanged', count: state.count, hash: state.hash } satisfies ListWriteResult;
        const extra = items.slice(state.count);
        const at = state;
        const decide = (s: ListState) => (s.count === at.count && s.hash === at.hash ? 'append' : 'moved');
        const result = await this.lists.append(sessionId, key, marker, state, extra, decide, options.token);
        if (result) return result;
      } else {
        // Shrunk, or an earlier item changed: a compaction. The previous list is archived first.
        const result = await this.lists.rewrite(sessionId, key, marker.inc, items, options.token);
        if (result) return result;
      }
      state = await this.lists.stateFromSlots(sessionId, key, marker.inc);
    }
    throw new ContendedError('the list is too contended; nothing was written; retry');
  }

  async getList<T>(sessionId: string, key: string, page: PageOptions = {}): Promise<ListPage<T>> {
    this.ids(sessionId, key);
    slicePage([], page);
    if (page.limit === 0) {
      // Only the count and hash: the manifest, checked against the slot listing (3 requests, no slot read).
      const { read, manifest, slots } = await this.listMeta(sessionId, key, true);
      if (!read.live) return { items: [], count: 0, hash: EMPTY_HASH };
      const state = await this.stateOf(sessionId, key, read.live, manifest, slots);
      return { items: [], count: state.count, hash: state.hash };
    }
    const inc = this.sessions.read(sessionId).then((read) => read.live?.inc);
    const content = await this.lists.readAll(sessionId, key, inc);
    return { items: slicePage(content.items, page) as T[], count: content.count, hash: content.hash };
  }

  async deleteList(sessionId: string, key: string, options: WriteOptions = {}) {
    this.ids(sessionId, key);
    checkToken(options.token);
    const read = await this.sessions.read(sessionId);
    if (!read.live) return;
    const marker = await this.sessions.forWrite(sessionId, read, options.token);
    for (let attempt = 0; ; attempt++) {
      if (attempt >= MAX_WRITE_ATTEMPTS)
        throw new ContendedError('the list is too contended; it was not deleted; retry');
      if (attempt > 0) await backoff(attempt);
      const state = await this.lists.stateFromSlots(sessionId, key, marker.inc);
      if (!state.exists || (state.count === 0 && state.type === 'start')) break;
      if (await this.lists.rewrite(sessionId, key, marker.inc, [], options.token)) break;
    }
    await this.lists.dropMaterializations(sessionId, key);
  }

  async listArchives(sessionId: string, key: string) {
    this.ids(sessionId, key);
    const read = await this.sessions.read(sessionId);
    return read.live ? this.lists.listArchives(sessionId, key, read.live.inc) : [];
  }

  async getArchive<T>(sessionId: string, key: string, archiveId: string, page: PageOptions = {}) {
    this.ids(sessionId, key);
    const read = await this.sessions.read(sessionId);
    if (!read.live) return undefined;
    return (await this.lists.getArchive(sessionId, key, read.live.inc, archiveId, page)) as
      | ListPage<T>
      | undefined;
  }

  // ---- workspaces and direct transfers -------------------------------------------------------

  async createWorkspaceUpload(
    sessionId: string,
    name: string,
    request: WorkspaceUploadRequest,
    options: WriteOptions = {},
  ) {
    this.ids(sessionId);
    checkId('workspace', name);
    checkToken(options.token);
    return this.workspaces.createUpload(sessionId, name, request, options);
  }

  async completeWorkspaceUpload(
    sessionId: string,
    name: string,
    uploadId: string,
    options: WriteOptions = {},
  ) {
    this.ids(sessionId);
    checkId('workspace', name);
    checkToken(options.token);
    return this.workspaces.completeUpload(sessionId, name, uploadId, options);
  }

  async listWorkspaces(sessionId: string) {
    this.ids(sessionId);
    return this.workspaces.list(sessionId);
  }

  async getWorkspace(sessionId: string, name: string) {
    this.ids(sessionId);
    checkId('workspace', name);
    return this.workspaces.get(sessionId, name);
  }

  async deleteWorkspace(sessionId: string, name: string, options: WriteOptions = {}) {
    this.ids(sessionId);
    checkId('workspace', name);
    checkToken(options.token);
    return this.workspaces.delete(sessionId, name, options);
  }

  async createValueUpload(sessionId: string, key: string, request: { size: number; md5: string }) {
    this.ids(sessionId, key);
    return this.workspaces.createValueUpload(sessionId, key, request);
  }

  async commitValueUpload(sessionId: string, key: string, uploadId: string, options: SaveOptions = {}) {
    this.ids(sessionId, key);
    checkToken(options.token);
    return this.workspaces.commitValueUpload(sessionId, key, uploadId, (value) =>
      this.save(sessionId, key, value, options),
    );
  }

  async locateValue(sessionId: string, key: string) {
    this.ids(sessionId, key);
    return this.workspaces.locateValue(sessionId, key);
  }

  // ---- sessions ------------------------------------------------------------------------------

  async exists(sessionId: string): Promise<boolean> {
    this.ids(sessionId);
    const head = await headOrUndefined(this.ctx.driver, this.layout.marker(sessionId));
    return head !== undefined && !this.sessions.isOverAge(head.lastModified);
  }

  async delete(sessionId: string, options: WriteOptions = {}) {
    this.ids(sessionId);
    checkToken(options.token);
    const { driver } = this.ctx;
    const read = await this.sessions.read(sessionId);
    const { token } = options;
    if (token !== undefined) {
      const seen = read.live?.token ?? null;
      if (seen !== null && seen > token) {
        this.ctx.metrics.count('fencedWrites');
        throw new FencedError(token, seen);
      }
      // The tombstone keeps the token, so a stale holder cannot bring the session back.
      const tombstone = await getOrUndefined(driver, this.layout.tombstone(sessionId));
      const previous = tombstone ? parseJsonObject(tombstone.body)?.token : undefined;
      if (typeof previous !== 'number' || previous < token) {
        await driver.put(this.layout.tombstone(sessionId), JSON.stringify({ v: 1, token }), {
          contentType: 'application/json',
          tags: { kind: 'marker' },
        });
      }
    }
    // The marker goes first: from here the session is gone for every reader.
    await driver.delete(this.layout.marker(sessionId));
    const names = await this.sessions.listOwned(sessionId);
    const { failed } = await driver.deleteMany(names);
    if (failed.length > 0) {
      this.ctx.metrics.count('persistenceFailures', failed.length);
      throw new PartialDeleteError(failed);
    }
  }

  async deleteAllSessions() {
    const failures: Array<{ key: string; code: string; message: string }> = [];
    let cursor: string | null = null;
    do {
      const page: SessionPage = await this.listSessionIds({
        limit: MAX_SESSION_PAGE,
        ...(cursor ? { cursor } : {}),
      });
      for (const { sessionId } of page.sessions) {
        await this.delete(sessionId).catch((error: unknown) => {
          if (error instanceof PartialDeleteError) failures.push(...error.failures);
          else throw error;
        });
      }
      cursor = page.nextCursor;
    } while (cursor);
    if (failures.length > 0) throw new PartialDeleteError(failures);
  }

  async listSessionIds(options: { limit?: number; cursor?: string } = {}): Promise<SessionPage> {
    const limit = options.limit ?? MAX_SESSION_PAGE;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_SESSION_PAGE)
      throw new ValidationError('limit', `must be 1 to ${MAX_SESSION_PAGE}`);
    let startAfter: string | undefined;
    if (options.cursor !== undefined) {
      // A cursor is a session id's encoded segment: it cannot name a position outside this user's markers.
      const segment = Buffer.from(options.cursor, 'base64url').toString('utf8');
      try {
        decodeId('sessionId', segment);
      } catch {
        throw new ValidationError('cursor', 'not a cursor of this listing');
      }
      if (Buffer.from(segment).toString('base64url') !== options.cursor)
        throw new ValidationError('cursor', 'not a cursor of this listing');
      startAfter = this.layout.markers + segment;
    }
    const page = await this.ctx.driver.list({ prefix: this.layout.markers, startAfter, limit });
    const sessions = [];
    let last: string | undefined;
    for (const object of page.objects) {
      const segment = object.key.slice(this.layout.markers.length);
      last = segment;
      if (this.sessions.isOverAge(object.lastModified)) continue;
      let sessionId: string;
      try {
        sessionId = decodeId('sessionId', segment);
      } catch {
        continue; // not a marker this store wrote
      }
      sessions.push({ sessionId, lastActivity: object.lastModified });
    }
    const more = page.nextCursor !== undefined && last !== undefined;
    return { sessions, nextCursor: more ? Buffer.from(last as string).toString('base64url') : null };
  }
}

async function headOrUndefined(driver: ObjectStoreDriver, name: string): Promise<ObjectInfo | undefined> {
  try {
    return await driver.head(name);
  } catch (error) {
    if (error instanceof ObjectNotFoundError) return undefined;
    throw error;
  }
}

function checkItems(items: unknown, min: number, max: number): void {
  if (!Array.isArray(items)) throw new ValidationError('items', 'must be an array');
  if (items.length < min || items.length > max)
    throw new ValidationError('items', `must hold ${min} to ${max} items`);
  for (const item of items) jsonBody(item);
}
