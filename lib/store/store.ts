/**
 * AgentStateStore on any `ObjectStoreDriver`: the reference contract (AgentScope's AgentStateStore)
 * with none of its faults. `createStateStore(...).forUser(userId)` is the user-scoped `SessionStore`.
 */

import { DEFAULTS } from '../contract/defaults.js';
import {
  ContendedError,
  CorruptValueError,
  PartialDeleteError,
  PreconditionFailedError,
  PreconditionUnsupportedError,
  SessionNotFoundError,
  ValidationError,
} from '../contract/errors.js';
import { requestDigest } from '../contract/hash.js';
import {
  ANONYMOUS,
  checkId,
  checkPrefix,
  decodeId,
  namedUser,
  sessionCursorOf,
  sessionPageOptions,
} from '../contract/ids.js';
import { checkItems, jsonBody } from '../contract/json.js';
import { MAX_APPEND_ITEMS, MAX_SESSION_PAGE } from '../contract/limits.js';
import { checkToken, type TokenAuthority } from '../contract/lock.js';
import { checkRevision } from '../contract/revisions.js';
import {
  checkAppendOptions,
  checkListSaveOptions,
  checkPage,
  checkTruncateOptions,
} from '../contract/turns.js';
import type {
  AppendOptions,
  CommitRequest,
  ListKeysOptions,
  ListPage,
  ListSaveOptions,
  MetricsSink,
  PageOptions,
  SaveOptions,
  SessionPage,
  SessionStore,
  SnapshotRequest,
  StateStore,
  TruncateOptions,
  WorkspaceUploadRequest,
  WriteOptions,
} from '../contract/types.js';
import {
  sumSweeps,
  type WorkspacePackSweeper,
  type WorkspaceSnapshotCommitRequest,
  type WorkspaceSnapshotStartRequest,
  type WorkspaceSweepOptions,
  type WorkspaceSweepResult,
} from '../contract/workspace-snapshots.js';
import { ObjectConditionFailedError } from '../drivers/errors.js';
import type { ObjectStoreDriver, StoredObject } from '../drivers/types.js';
import type { ContentEncoding } from '../util/encoding.js';
import { mapLimited } from '../util/map-limited.js';
import { DAY_MS, KIB } from '../util/units.js';
import { storeCapabilities } from './capabilities.js';
import { Commits } from './commits.js';
import {
  backendError,
  folderNames,
  getOrUndefined,
  headOrUndefined,
  listAll,
  parseJsonObject,
  type StoreContext,
  storedToken,
} from './context.js';
import { Keys } from './keys.js';
import { layoutFor, readyProbe, type UserLayout } from './layout.js';
import { AppendFormat } from './lists/append.js';
import { Archives } from './lists/archives.js';
import { CasFormat } from './lists/cas.js';
import type { ListFormat } from './lists/format.js';
import { ReferenceLists } from './lists/reference-lists.js';
import { withMemoryTags } from './memory-session.js';
import { incOf } from './reference.js';
import { ReferenceReads } from './reference-reads.js';
import { LIVE_MARKER_BYTES, type Marker, Sessions } from './sessions.js';
import { WorkspaceSnapshots } from './workspace-snapshots.js';
import { Workspaces } from './workspaces.js';
import { Fence, nextRevision, putValue, recordId, revisionOf } from './write-path.js';

/**
 * Reads and conditional writes a save without a precondition makes before it gives up as
 * contended: each round of racing writers has a winner, so 8 writers of one value all land.
 */
const SAVE_ATTEMPTS = 8;

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
  /**
   * How lists are stored (docs/DESIGN.md, "Lists"): `cas` (a head changed by compare-and-swap, with
   * sealed segments; needs conditional overwrite) or `append` (chains of appendable logs; needs
   * position append). Default: `cas` where the driver has conditional overwrite (S3, Ceph RGW, fs,
   * memory), else `append` (OSS). A driver with neither is refused.
   */
  readonly listFormat?: ListFormatName;
  /** CAS format: most bytes of items a head holds; default 116 KiB. */
  readonly listHeadBytes?: number;
  /** CAS format: bytes sealed into a segment when the head is full; default 64 KiB. */
  readonly listSealBytes?: number;
  /** Append format: bytes of its own items after which a log is sealed and a new one started; default 1 MiB. */
  readonly listLogBytes?: number;
  /** Age after which retired segments and superseded logs are deleted; default 10 minutes. */
  readonly retireAfterMs?: number;
  /** Longest read-to-commit of a list write before it gives up (retryable); default 60 s. */
  readonly maxCommitMs?: number;
  /** How archived lists are stored; default `gzip`. */
  readonly archiveEncoding?: ContentEncoding;
  /**
   * `reference`: also keep each list's whole array as `<key>.list.json`, written after rewrites and
   * brought up to date by the session's keep-alive (the reference's layout: a whole read and a PUT
   * of the list per lagging list and keep-alive); default `off` (nothing reads it; existing ones are
   * left to the lifecycle rules).
   */
  readonly listJson?: 'off' | 'reference';
  /**
   * Adopt sessions the AgentScope reference's OSS store wrote (lib/store/reference.ts): a session
   * without a marker costs one LIST more on each access; default false.
   */
  readonly adoptReference?: boolean;
  /** Seconds presigned URLs stay valid; default 900 (15 minutes). */
  readonly presignExpiresIn?: number;
  /** Days a restored copy of an archived object stays readable; default 1. */
  readonly restoreDays?: number;
  /** Largest single value committed from a direct upload; default 64 MiB. */
  readonly maxValueBytes?: number;
  /**
   * The session lock as the authority over fencing tokens (docs/DESIGN.md, "The write path"): a
   * write carrying a token is refused unless the lock granted that token to a live lease. Both
   * locks are one (`createMemoryLock`, `createDynamoDbLock`). Without one, tokens are checked
   * against what the objects and the session marker record.
   */
  readonly authority?: TokenAuthority;
}

/** The list formats (docs/DESIGN.md, "Lists"). */
export type ListFormatName = 'cas' | 'append';

/** Creates a state store over a driver. */
export function createStateStore(options: StateStoreOptions): StateStore & WorkspacePackSweeper {
  const prefix = checkPrefix(options.prefix ?? DEFAULTS.prefix);
  const retentionDays = options.retentionDays ?? DEFAULTS.retentionDays;
  const keepAliveMs = options.keepAliveMs ?? DEFAULTS.keepAliveMs;
  const stateGraceDays = options.stateGraceDays ?? DEFAULTS.stateGraceDays;
  if (!(retentionDays > 0)) throw new ValidationError('retentionDays', 'must be positive');
  if (stateGraceDays * DAY_MS <= 2 * keepAliveMs) {
    throw new ValidationError('stateGraceDays', 'must be well over the keep-alive interval');
  }
  const { capabilities } = options.driver;
  const listFormat = options.listFormat ?? (capabilities.conditionalOverwrite ? 'cas' : 'append');
  if (listFormat === 'cas' && !capabilities.conditionalOverwrite)
    throw new ValidationError(
      'listFormat',
      `cas needs conditional overwrite, which ${options.driver.name} has not`,
    );
  if (listFormat === 'append' && !capabilities.positionAppend)
    throw new ValidationError(
      'listFormat',
      `append needs position append, which ${options.driver.name} has not`,
    );
  if (listFormat !== 'cas' && listFormat !== 'append')
    throw new ValidationError('listFormat', 'must be cas or append');
  const listLogBytes = options.listLogBytes ?? 1024 * KIB;
  if (!(Number.isSafeInteger(listLogBytes) && listLogBytes >= 1024))
    throw new ValidationError('listLogBytes', 'must be an integer of at least 1024');
  const listHeadBytes = options.listHeadBytes ?? 116 * KIB;
  const listSealBytes = options.listSealBytes ?? 64 * KIB;
  if (!(listSealBytes >= 256 && listSealBytes < listHeadBytes))
    throw new ValidationError('listSealBytes', 'must be at least 256 and below listHeadBytes');
  const ctx: StoreContext = {
    // The memory session's objects are tagged so that no lifecycle rule expires them.
    driver: withMemoryTags(options.driver, prefix),
    prefix,
    retentionMs: retentionDays * DAY_MS,
    keepAliveMs,
    stateGraceMs: stateGraceDays * DAY_MS,
    listHeadBytes,
    listSealBytes,
    listLogBytes,
    retireAfterMs: options.retireAfterMs ?? 10 * 60 * 1000,
    maxCommitMs: options.maxCommitMs ?? 60_000,
    archiveEncoding: options.archiveEncoding ?? DEFAULTS.archiveEncoding,
    listJson: options.listJson ?? DEFAULTS.listJson,
    adoptReference: options.adoptReference ?? DEFAULTS.adoptReference,
    presignExpiresIn: options.presignExpiresIn ?? DEFAULTS.presignExpiresSeconds,
    restoreDays: options.restoreDays ?? DEFAULTS.restoreDays,
    maxValueBytes: options.maxValueBytes ?? DEFAULTS.maxValueBytes,
    now: options.now ?? Date.now,
    metrics: options.metrics ?? { count: () => {} },
  };
  const store: StateStore & WorkspacePackSweeper = {
    capabilities: storeCapabilities(capabilities),
    forUser: (userId, o = {}) => {
      const user = namedUser(userId);
      const authority = o.authority ?? options.authority;
      return guarded(new UserStore(ctx, layoutFor(prefix, user), listFormat, user, authority));
    },
    // A GET of a name nothing writes: absent (NoSuchKey) is ready; a missing bucket or refused
    // credentials are the driver's typed refusals. (Not a HEAD: S3 answers a HEAD on a missing
    // bucket 404 without a body, as it answers a missing key.)
    checkReady: () =>
      getOrUndefined(ctx.driver, readyProbe(prefix)).then(
        () => undefined,
        (error: unknown) => {
          throw backendError(error);
        },
      ),
    // Every user's sweep (`UserStore.sweepWorkspacePacks`), for the user folders under the prefix
    // (one LIST per 1,000 users): the scheduled sweep of a deployment (lib/lifecycle/sweep.ts).
    sweepWorkspacePacks: async (o = {}) => {
      const { sessionId, ...rest } = o;
      if (sessionId !== undefined)
        throw new ValidationError('sessionId', 'names a session of one user: forUser');
      const results: WorkspaceSweepResult[] = [];
      for (const segment of await folderNames(ctx.driver, prefix)) {
        let user: string | null;
        try {
          user = segment === ANONYMOUS ? null : decodeId('userId', segment);
        } catch {
          continue; // not a user folder of this store
        }
        const userStore = store.forUser(user) as SessionStore & WorkspacePackSweeper;
        results.push(await userStore.sweepWorkspacePacks(rest));
      }
      return sumSweeps(results);
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

/**
 * Wraps every method so that driver failures surface as typed store errors, and a call answers only
 * once the keep-alive its writes started beside them has settled (sessions.ts, `settle`).
 */
function guarded(target: UserStore): SessionStore {
  return new Proxy(target, {
    get(obj, name, receiver) {
      const value = Reflect.get(obj, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        (value as (...a: unknown[]) => Promise<unknown>).apply(obj, args).then(
          async (result) => {
            await obj.settle();
            return result;
          },
          async (error: unknown) => {
            // Made here, where its stack still names the callers, before waiting.
            const failure = backendError(error);
            await obj.settle();
            throw failure;
          },
        );
    },
  });
}

class UserStore implements SessionStore {
  private readonly sessions: Sessions;
  private readonly lists: ListFormat;
  private readonly archives: Archives;
  private readonly workspaces: Workspaces;
  private readonly snapshots: WorkspaceSnapshots;
  private readonly keys: Keys;
  private readonly referenceReads: ReferenceReads;
  private readonly commits: Commits;

  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    listFormat: ListFormatName,
    private readonly userId: string | null,
    private readonly authority: TokenAuthority | undefined,
  ) {
    this.sessions = new Sessions(ctx, layout);
    this.archives = new Archives(ctx, layout);
    const format =
      listFormat === 'cas'
        ? new CasFormat(ctx, layout, this.sessions)
        : new AppendFormat(ctx, layout, this.sessions);
    // Only with adoption on are reference lists read and converted; switch it off only after
    // `npm run adopt` has converted them (docs/backends.md).
    this.lists = ctx.adoptReference ? new ReferenceLists(ctx, layout, this.sessions, format) : format;
    this.workspaces = new Workspaces(ctx, layout, this.sessions);
    this.snapshots = new WorkspaceSnapshots(ctx, layout, this.sessions);
    this.keys = new Keys(ctx, layout, this.sessions, this.lists);
    this.referenceReads = new ReferenceReads(ctx, layout, this.sessions);
    this.commits = new Commits(ctx, layout, this.sessions, this.lists, this.keys, (s, token) =>
      this.fence(s, token),
    );
  }

  /** Waits for the keep-alives this store's writes started beside them. */
  settle(): Promise<void> {
    return this.sessions.settle();
  }

  private ids(sessionId: string, key?: string): void {
    checkId('sessionId', sessionId);
    if (key !== undefined) checkId('key', key);
  }

  /** The fence of a write to the session (its lock read starts now, beside the write's own reads). */
  private fence(sessionId: string, token: number | undefined): Fence {
    checkToken(token, 'optional');
    const { authority, userId } = this;
    return new Fence(token, authority && (() => authority.grantOf({ userId, sessionId })), this.ctx.metrics);
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
    if (!read.live) {
      const folder = await this.referenceReads.folder(sessionId);
      return folder === undefined ? undefined : this.referenceReads.value<T>(folder, key);
    }
    if (!object || incOf(object) !== read.live.inc) return undefined;
    return { value: this.parseValue<T>(object, key), version: object.etag, revision: revisionOf(object) };
  }

  private parseValue<T>(object: StoredObject, key: string): T {
    try {
      return JSON.parse(Buffer.from(object.body).toString('utf8')) as T;
    } catch (error) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(key, { cause: error });
    }
  }

  /**
   * Saves a value (docs/DESIGN.md, "Revisions"): reads its head beside the marker, checks the
   * fence and the preconditions on it, and writes the next revision conditionally on that head, so
   * that the checks and the revision hold atomically with the write where the backend has
   * conditional overwrite. A write that loses a race without a precondition reads again.
   */
  async save(sessionId: string, key: string, value: unknown, options: SaveOptions = {}) {
    this.ids(sessionId, key);
    checkToken(options.token, 'optional');
    checkRevision('ifRevision', options.ifRevision);
    const body = jsonBody(value);
    const { driver } = this.ctx;
    const cas = driver.capabilities.conditionalOverwrite;
    const conditioned = options.ifVersion !== undefined || options.ifRevision !== undefined;
    if (conditioned && !cas) throw new PreconditionUnsupportedError(driver.name);
    if (conditioned && options.ifAbsent) {
      throw new ValidationError(
        options.ifVersion !== undefined ? 'ifVersion' : 'ifRevision',
        'cannot be combined with ifAbsent',
      );
    }
    const name = this.layout.value(sessionId, key);
    const fence = this.fence(sessionId, options.token);
    for (let attempt = 0; ; attempt++) {
      // The marker's GET is awaited first: when both fail (refused credentials), its error names
      // the cause; a HEAD's answer has no body, so its error cannot.
      const heading = headOrUndefined(driver, name);
      heading.catch(() => undefined);
      const read = await this.sessions.read(sessionId);
      const head = await heading;
      // A token write that creates the value raises the marker's token (docs/DESIGN.md, "The write path").
      const creates = !head || incOf(head) !== read.live?.inc;
      const marker = await this.sessions.forWrite(sessionId, read, fence, creates);
      // An object of another incarnation is a leftover: absent for every purpose but its etag.
      const current = head && incOf(head) === marker.inc ? head : undefined;
      await fence.check(storedToken(current));
      const refused = () =>
        new PreconditionFailedError(current?.etag ?? null, current ? revisionOf(current) : null);
      if (options.ifAbsent && current) throw refused();
      if (options.ifVersion !== undefined && current?.etag !== options.ifVersion) throw refused();
      if (options.ifRevision !== undefined && (!current || revisionOf(current) !== options.ifRevision))
        throw refused();
      const revision = nextRevision(current);
      try {
        const { etag } = await putValue(driver, name, body, marker.inc, fence, {
          head,
          read: true,
          revision,
          ...(options.ifVersion !== undefined ? { ifVersion: options.ifVersion } : {}),
        });
        return { version: etag, revision };
      } catch (error) {
        if (!(error instanceof ObjectConditionFailedError)) throw error;
        if (conditioned || options.ifAbsent) {
          const now = await headOrUndefined(driver, name);
          const mine = now && incOf(now) === marker.inc ? now : undefined;
          throw new PreconditionFailedError(mine?.etag ?? null, mine ? revisionOf(mine) : null);
        }
        if (attempt >= SAVE_ATTEMPTS - 1)
          throw new ContendedError('the value is too contended; nothing was written; retry');
        // Another write landed between the read and this one: read again for its revision (and its token).
      }
    }
  }

  async deleteKey(sessionId: string, key: string, options: WriteOptions = {}) {
    this.ids(sessionId, key);
    const fence = this.fence(sessionId, options.token);
    const name = this.layout.value(sessionId, key);
    const [read, head] = await Promise.all([
      this.sessions.read(sessionId),
      options.token === undefined ? undefined : headOrUndefined(this.ctx.driver, name),
    ]);
    if (!read.live) {
      await fence.check();
      return;
    }
    const marker = await this.sessions.forWrite(sessionId, read, fence, false);
    await fence.check(storedToken(head));
    await this.ctx.driver.delete(name);
    await this.markIfEmpty(sessionId, marker);
  }

  /** After a delete: marks the session empty when nothing of it is left (docs/DESIGN.md, "Sessions"). */
  private async markIfEmpty(sessionId: string, marker: Marker): Promise<void> {
    await this.sessions.markIfEmpty(sessionId, marker, (key) =>
      this.lists.stat(sessionId, key, marker.inc).then(
        (stat) => stat !== undefined,
        () => true, // a damaged list is still something the session holds
      ),
    );
  }

  // ---- lists (the format owns the protocol: lib/store/lists/) -------------------------------

  async appendList(sessionId: string, key: string, items: readonly unknown[], options: AppendOptions) {
    this.ids(sessionId, key);
    checkItems(items, 1, MAX_APPEND_ITEMS, this.ctx.maxValueBytes);
    const { expectedCount, expectedHash, writeId } = checkAppendOptions(options);
    return this.lists.append(sessionId, key, items, {
      expectedCount,
      ...(expectedHash !== undefined ? { expectedHash } : {}),
      // The key is bound to the request: the same key with another request is refused, not replayed.
      ...(writeId !== undefined
        ? { writeId: recordId(writeId, requestDigest({ append: items, expectedCount, expectedHash })) }
        : {}),
      fence: this.fence(sessionId, options.token),
    });
  }

  async saveList(sessionId: string, key: string, items: readonly unknown[], options: ListSaveOptions = {}) {
    this.ids(sessionId, key);
    checkItems(items, 0, Number.MAX_SAFE_INTEGER, this.ctx.maxValueBytes);
    checkListSaveOptions(options);
    return this.lists.save(sessionId, key, items, {
      ...(options.ifHash !== undefined ? { ifHash: options.ifHash } : {}),
      fence: this.fence(sessionId, options.token),
    });
  }

  async truncateList(sessionId: string, key: string, options: TruncateOptions) {
    this.ids(sessionId, key);
    const { count, expectedHash, writeId } = checkTruncateOptions(options);
    return this.lists.truncate(sessionId, key, {
      count,
      expectedHash,
      ...(writeId !== undefined
        ? { writeId: recordId(writeId, requestDigest({ truncate: count, expectedHash })) }
        : {}),
      fence: this.fence(sessionId, options.token),
    });
  }

  // ---- snapshots and commits (lib/store/commits.ts) -----------------------------------------

  async snapshot(sessionId: string, request: SnapshotRequest) {
    this.ids(sessionId);
    return this.commits.snapshot(sessionId, request);
  }

  async commit(sessionId: string, request: CommitRequest) {
    this.ids(sessionId);
    return this.commits.commit(sessionId, request);
  }

  // ---- keys of a session ---------------------------------------------------------------------

  async listKeys(sessionId: string, options: ListKeysOptions = {}) {
    this.ids(sessionId);
    try {
      return await this.keys.page(sessionId, options);
    } catch (error) {
      const folder =
        error instanceof SessionNotFoundError ? await this.referenceReads.folder(sessionId) : undefined;
      if (folder === undefined) throw error;
      return this.referenceReads.keys(folder, options);
    }
  }

  async getList<T>(sessionId: string, key: string, page: PageOptions = {}): Promise<ListPage<T>> {
    this.ids(sessionId, key);
    checkPage(page);
    // A session the reference wrote under segments this store encodes (lib/store/reference-reads.ts).
    const folder = await this.referenceReads.folder(sessionId);
    if (folder !== undefined) return (await this.referenceReads.list(folder, key, page)) as ListPage<T>;
    return (await this.lists.read(sessionId, key, page)) as ListPage<T>;
  }

  async deleteList(sessionId: string, key: string, options: WriteOptions = {}) {
    this.ids(sessionId, key);
    const marker = await this.lists.remove(sessionId, key, { fence: this.fence(sessionId, options.token) });
    // Only a list that was there can have been the session's last key.
    if (marker) await this.markIfEmpty(sessionId, marker);
  }

  async listArchives(sessionId: string, key: string) {
    this.ids(sessionId, key);
    const read = await this.sessions.read(sessionId);
    return read.live ? this.archives.list(sessionId, key, read.live.inc) : [];
  }

  async getArchive<T>(sessionId: string, key: string, archiveId: string, page: PageOptions = {}) {
    this.ids(sessionId, key);
    checkPage(page);
    const read = await this.sessions.read(sessionId);
    if (!read.live) return undefined;
    return (await this.archives.get(sessionId, key, read.live.inc, archiveId, page)) as
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
    return this.workspaces.createUpload(sessionId, name, request, this.fence(sessionId, options.token));
  }

  async completeWorkspaceUpload(
    sessionId: string,
    name: string,
    uploadId: string,
    options: WriteOptions = {},
  ) {
    this.ids(sessionId);
    checkId('workspace', name);
    return this.workspaces.completeUpload(sessionId, name, uploadId, this.fence(sessionId, options.token));
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
    return this.workspaces.delete(sessionId, name, this.fence(sessionId, options.token));
  }

  // ---- workspace snapshots (workspace-snapshots.ts; `WorkspaceSnapshotStore`) ------------------

  async startWorkspaceSnapshot(
    sessionId: string,
    name: string,
    request: WorkspaceSnapshotStartRequest,
    options: WriteOptions = {},
  ) {
    this.ids(sessionId);
    checkId('workspace', name);
    return this.snapshots.start(sessionId, name, request, this.fence(sessionId, options.token));
  }

  async commitWorkspaceSnapshot(
    sessionId: string,
    name: string,
    snapshotId: string,
    request: WorkspaceSnapshotCommitRequest,
    options: WriteOptions = {},
  ) {
    this.ids(sessionId);
    checkId('workspace', name);
    return this.snapshots.commit(sessionId, name, snapshotId, request, this.fence(sessionId, options.token));
  }

  async listWorkspaceSnapshots(sessionId: string, name: string) {
    this.ids(sessionId);
    checkId('workspace', name);
    return this.snapshots.list(sessionId, name);
  }

  async getWorkspaceSnapshot(sessionId: string, name: string, snapshotId: string) {
    this.ids(sessionId);
    checkId('workspace', name);
    return this.snapshots.get(sessionId, name, snapshotId);
  }

  async deleteWorkspaceSnapshot(
    sessionId: string,
    name: string,
    snapshotId: string,
    options: WriteOptions = {},
  ) {
    this.ids(sessionId);
    checkId('workspace', name);
    return this.snapshots.delete(sessionId, name, snapshotId, this.fence(sessionId, options.token));
  }

  /**
   * The sweep of workspace snapshot packs (docs/DESIGN.md, "Workspace snapshots"): of one session,
   * or of every session of this user (its folders), live, expired or deleted alike;
   * per session one flat LIST per 1,000 snapshot objects. Run it on a schedule, one at a time, at an interval well under
   * `PACK_GRACE_DAYS`: a pack is tagged `gc=1` on the second sweep that finds it unreferenced.
   */
  async sweepWorkspacePacks(
    options: WorkspaceSweepOptions & { readonly sessionId?: string } = {},
  ): Promise<WorkspaceSweepResult> {
    const { sessionId, ...rest } = options;
    if (sessionId !== undefined) {
      this.ids(sessionId);
      return this.snapshots.sweep(sessionId, rest);
    }
    // The session folders, whatever their markers say (an expired session's may be gone).
    const ids: string[] = [];
    for (const segment of await folderNames(this.ctx.driver, this.layout.root)) {
      if (segment.startsWith('~')) continue;
      try {
        ids.push(decodeId('sessionId', segment));
      } catch {
        // not a session folder of this store
      }
    }
    const results: WorkspaceSweepResult[] = [];
    for (const id of ids) results.push(await this.snapshots.sweep(id, rest));
    return sumSweeps(results);
  }

  async createValueUpload(sessionId: string, key: string, request: { size: number; md5: string }) {
    this.ids(sessionId, key);
    return this.workspaces.createValueUpload(sessionId, key, request);
  }

  async commitValueUpload(sessionId: string, key: string, uploadId: string, options: SaveOptions = {}) {
    this.ids(sessionId, key);
    checkToken(options.token, 'optional');
    return this.workspaces.commitValueUpload(sessionId, key, uploadId, (value) =>
      this.save(sessionId, key, value, options),
    );
  }

  async locateValue(sessionId: string, key: string) {
    this.ids(sessionId, key);
    return this.workspaces.locateValue(sessionId, key);
  }

  async locateListItem(sessionId: string, key: string, n: number) {
    this.ids(sessionId, key);
    if (!this.ctx.driver.capabilities.presign) return undefined;
    const name = await this.lists.itemObject?.(sessionId, key, n);
    return name === undefined ? undefined : this.workspaces.locateObject(name);
  }

  // ---- sessions ------------------------------------------------------------------------------

  /**
   * Keeps a live session's marker (and state) fresh as a write would, at most once per keep-alive
   * interval, writing nothing else and creating nothing: an engine's blob side, touched by the
   * engine's writes (lib/contract/blobs.ts).
   */
  async touchSession(sessionId: string): Promise<void> {
    this.ids(sessionId);
    const read = await this.sessions.read(sessionId);
    if (read.live) await this.sessions.forWrite(sessionId, read, this.fence(sessionId, undefined), false);
  }

  async exists(sessionId: string): Promise<boolean> {
    this.ids(sessionId);
    const head = await headOrUndefined(this.ctx.driver, this.layout.marker(sessionId));
    // Without a marker, a session of the reference is adopted (reference.ts: one LIST more).
    if (!head && this.ctx.adoptReference) {
      if ((await this.sessions.read(sessionId)).live !== undefined) return true;
      const folder = await this.referenceReads.folder(sessionId);
      return folder !== undefined && (await this.referenceReads.exists(folder));
    }
    // An emptied session's marker is shorter than any live one's (sessions.ts, LIVE_MARKER_BYTES).
    return (
      head !== undefined &&
      head.size >= LIVE_MARKER_BYTES &&
      !this.sessions.isOverAge(sessionId, head.lastModified)
    );
  }

  async delete(sessionId: string, options: WriteOptions = {}) {
    this.ids(sessionId);
    const fence = this.fence(sessionId, options.token);
    const { driver } = this.ctx;
    const { token } = options;
    if (token !== undefined) {
      const [read, tombstone] = await Promise.all([
        this.sessions.read(sessionId),
        getOrUndefined(driver, this.layout.tombstone(sessionId)),
      ]);
      const previous = tombstone ? parseJsonObject(tombstone.body)?.token : undefined;
      await fence.check(read.live?.token, typeof previous === 'number' ? previous : undefined);
      // The tombstone keeps the token, so a stale holder cannot bring the session back.
      if (typeof previous !== 'number' || previous < token) {
        await driver.put(this.layout.tombstone(sessionId), JSON.stringify({ v: 1, token }), {
          contentType: 'application/json',
          tags: { kind: 'marker' },
        });
      }
    }
    const failed = await this.purge(sessionId);
    // The session is gone already (its marker first); what is left is invisible and goes with a
    // retry (HTTP: 409 contended).
    if (failed.length > 0) throw new PartialDeleteError(failed);
  }

  /** Deletes the marker (from then on the session is gone for every reader), then what it owns; answers the failures. */
  private async purge(sessionId: string) {
    const { driver } = this.ctx;
    await driver.delete(this.layout.marker(sessionId));
    const names = await this.sessions.listOwned(sessionId);
    const { failed } = await driver.deleteMany(names);
    if (failed.length > 0) this.ctx.metrics.count('persistenceFailures', failed.length);
    return failed;
  }

  async deleteAllSessions() {
    const failures: Array<{ key: string; code: string; message: string }> = [];
    let cursor: string | null = null;
    do {
      const page: SessionPage = await this.listSessionIds({
        limit: MAX_SESSION_PAGE,
        ...(cursor ? { cursor } : {}),
      });
      for (const { sessionId } of page.sessions) failures.push(...(await this.purge(sessionId)));
      cursor = page.nextCursor;
    } while (cursor);
    if (failures.length > 0) throw new PartialDeleteError(failures);
  }

  /**
   * Adopts the reference's sessions of this user that have no marker yet, so that they are listed
   * (reference.ts): one LIST of the user's folders (its first 1,000), one of the markers, and per
   * session folder without a marker what `Sessions.read` costs (a GET, a LIST, a HEAD or GET).
   */
  private async adoptFolders(): Promise<void> {
    const { driver } = this.ctx;
    const [folders, markers] = await Promise.all([
      driver.list({ prefix: this.layout.root, delimiter: '/' }),
      listAll(driver, this.layout.markers),
    ]);
    const marked = new Set(markers.map((m) => m.key.slice(this.layout.markers.length)));
    const unmarked: string[] = [];
    for (const folder of folders.prefixes) {
      const segment = folder.slice(this.layout.root.length, -1);
      if (segment.startsWith('~') || marked.has(segment)) continue;
      try {
        unmarked.push(decodeId('sessionId', segment));
      } catch {
        // Not an id of this store: `npm run adopt` rewrites it.
      }
    }
    await mapLimited(unmarked, 16, (s) => this.sessions.read(s));
  }

  async listSessionIds(options: { limit?: number; cursor?: string } = {}): Promise<SessionPage> {
    const { limit, after } = sessionPageOptions(options);
    const startAfter = after === undefined ? undefined : this.layout.markers + after;
    if (options.cursor === undefined && this.ctx.adoptReference) await this.adoptFolders();
    const page = await this.ctx.driver.list({ prefix: this.layout.markers, startAfter, limit });
    const sessions = [];
    let last: string | undefined;
    for (const object of page.objects) {
      const segment = object.key.slice(this.layout.markers.length);
      last = segment;
      if (object.size < LIVE_MARKER_BYTES) continue;
      let sessionId: string;
      try {
        sessionId = decodeId('sessionId', segment);
      } catch {
        continue; // not a marker this store wrote
      }
      if (this.sessions.isOverAge(sessionId, object.lastModified)) continue;
      sessions.push({ sessionId, lastActivity: object.lastModified });
    }
    const more = page.nextCursor !== undefined && last !== undefined;
    return { sessions, nextCursor: more ? sessionCursorOf(last as string) : null };
  }
}
