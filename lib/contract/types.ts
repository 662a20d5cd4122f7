/**
 * The public types of the state store: `SessionStore` (the library's store and the typed HTTP
 * client both implement it) with every option and result, the turn's snapshot and commit included,
 * and `StateStore`, what an engine gives the server.
 */
import type { Lease, TokenAuthority } from './lock.js';

/** Options every write accepts. */
export interface WriteOptions {
  /** A fencing token from the lock (an integer below 2^53); a lower one than already seen is refused. */
  readonly token?: number;
}

/** Options of a single-value save. */
export interface SaveOptions extends WriteOptions {
  /** Write only if the current version is this one (compare-and-swap). */
  readonly ifVersion?: string;
  /** Write only if the value is absent (create-only). */
  readonly ifAbsent?: boolean;
  /**
   * Write only if the current revision is this one (HTTP `If-Revision`); refused as
   * `PreconditionUnsupportedError` where the backend has no conditional overwrite (OSS).
   */
  readonly ifRevision?: number;
}

/** A value with its version (the backend's etag; opaque, not ordered) and its revision. */
export interface Versioned<T> {
  readonly value: T;
  readonly version: string;
  /** 1 when created, +1 on every write since (docs/DESIGN.md, "Revisions"). */
  readonly revision: number;
}

/** What a value's write answers: its new version and revision. */
export interface ValueWritten {
  readonly version: string;
  readonly revision: number;
}

/** What a list write did (`truncated`: only by `truncateList`). */
export type ListAction = 'created' | 'appended' | 'rewritten' | 'truncated' | 'unchanged';

/** The outcome of a list write: the action, and the list's count and chain hash afterwards. */
export interface ListWriteResult {
  readonly action: ListAction;
  readonly count: number;
  readonly hash: string;
}

/** Options of `appendList`. */
export interface AppendOptions extends WriteOptions {
  /** The number of items the caller believes the list has. */
  readonly expectedCount: number;
  /** The chain hash the caller believes the list has (checked when given). */
  readonly expectedHash?: string;
  /**
   * Names this logical append (at most 64 characters of `[A-Za-z0-9._:-]`; HTTP: `Idempotency-Key`):
   * a replay of an applied id answers the original result and writes nothing. Made by the store
   * when absent.
   */
  readonly writeId?: string;
}

/** Options of `saveList`. */
export interface ListSaveOptions extends WriteOptions {
  /**
   * The chain hash the caller last saw (HTTP: `If-Match: "<hash>"`): when the list has another one,
   * `ListPreconditionFailedError` with the current hash and nothing is written.
   */
  readonly ifHash?: string;
}

/** Options of `truncateList`. */
export interface TruncateOptions extends WriteOptions {
  /** The number of items to keep: the first `count` (0 to the list's count). */
  readonly count: number;
  /**
   * The chain hash the caller believes the list has: when it has another one,
   * `ListPreconditionFailedError` with the current hash and nothing is written.
   */
  readonly expectedHash: string;
  /**
   * Names this truncate (as `appendList`'s `writeId`): a retry of a truncate that landed answers
   * its original result and writes nothing. Made by the store when absent.
   */
  readonly writeId?: string;
}

/** Options of `listKeys`. */
export interface ListKeysOptions {
  /** Only keys that start with this (UTF-8 prefix); default all. */
  readonly prefix?: string;
  /** Only keys after this one (UTF-8 byte order). */
  readonly startAfter?: string;
  /** Most keys in the page (a key that is both a value and a list counts once): 1 to 1,000; default 1,000. */
  readonly limit?: number;
  /** `nextCursor` of the previous page. */
  readonly cursor?: string;
}

/** A single value, as `listKeys` lists it. */
export interface KeyValueInfo {
  readonly key: string;
  /** Its version (as `getVersioned` answers it). */
  readonly etag: string;
  /** Its revision (as `getVersioned` answers it). */
  readonly revision: number;
  /** Bytes of its JSON. */
  readonly size: number;
  readonly lastModified: Date;
}

/** A list, as `listKeys` lists it. */
export interface KeyListInfo {
  readonly key: string;
  readonly count: number;
  readonly hash: string;
  /** When it was last written. */
  readonly lastModified: Date;
}

/**
 * One page of `listKeys`: the values and the lists whose keys are in the page's range, each in the
 * UTF-8 byte order of the key. A page may hold fewer keys than asked (keys that vanished or belong
 * to another incarnation are left out): read on with `nextCursor` while there is one.
 */
export interface KeyPage {
  readonly values: KeyValueInfo[];
  readonly lists: KeyListInfo[];
  /** Pass back as `cursor` to get the next page; absent on the last page. */
  readonly nextCursor?: string;
}

/** Paging of list reads: `offset` and `limit`, or `last`. */
export interface PageOptions {
  /** First item; default 0. */
  readonly offset?: number;
  /** Most items; default all. */
  readonly limit?: number;
  /** The `last` most recent items (not with `offset` or `limit`). */
  readonly last?: number;
}

/**
 * A page of a list, with the whole list's count and hash. A page may hold fewer items than asked
 * (cut to fit an answer, or at the end of a stored segment): read on from `offset + items.length`.
 */
export interface ListPage<T = unknown> {
  readonly items: T[];
  readonly count: number;
  readonly hash: string;
  /** The number of the page's first item. */
  readonly offset: number;
  /** The chain hash before the page's first item (the list's hash at `offset`). */
  readonly baseHash: string;
}

/**
 * An archived list (kept for audit when a list is compacted, truncated or deleted). `count` and
 * `hash` are those of the archived items (as `getArchive` pages them, from item 0 of the archive);
 * `offset` is where the first of them was in the list: 0 for a whole list (a rewrite or a delete),
 * the kept count for a truncate, which archives only the items it removes.
 */
export interface ArchiveInfo {
  readonly archiveId: string;
  readonly count: number;
  readonly hash: string;
  readonly archivedAt: Date;
  /** The list position of the archive's first item. */
  readonly offset: number;
}

/** Storage tiers a workspace may be stored in (mapped to each backend's classes). */
export type StorageTier = 'standard' | 'infrequent' | 'archive';

/** What an uploader declares before sending a workspace's bytes (as stored, after compression). */
export interface WorkspaceUploadRequest {
  /** Bytes as stored. */
  readonly size: number;
  /** Base64 MD5 of the whole body (single upload; required unless `parts`). */
  readonly md5?: string;
  /** Base64 SHA-256 of the whole body (single upload), checked where the backend checks it. */
  readonly sha256?: string;
  /** A multipart upload: each part's size and base64 MD5, in order (every part but the last ≥ 5 MiB). */
  readonly parts?: ReadonlyArray<{ readonly size: number; readonly md5: string }>;
  /** Default `standard`. */
  readonly storageClass?: StorageTier;
  /** How the body is encoded; default `identity`. */
  readonly contentEncoding?: 'identity' | 'gzip' | 'br';
  readonly contentType?: string;
}

/** A request the uploader makes itself, straight to the object store. */
export interface DirectRequest {
  readonly method: 'GET' | 'PUT';
  readonly url: string;
  /** Send exactly these headers (they are part of the signature). */
  readonly headers: Readonly<Record<string, string>>;
}

/** A started upload: one PUT, or one PUT per part, then `completeWorkspaceUpload`. */
export interface WorkspaceUpload {
  readonly uploadId: string;
  readonly expiresAt: Date;
  readonly upload?: DirectRequest;
  readonly parts?: ReadonlyArray<DirectRequest & { readonly partNumber: number }>;
}

/** A stored workspace. */
export interface WorkspaceInfo {
  readonly name: string;
  readonly size: number;
  readonly storageClass: StorageTier;
  readonly lastModified: Date;
  readonly contentEncoding?: string;
}

/** A workspace to download: a URL, or (archived) a restore in progress. */
export type WorkspaceDownload =
  | (WorkspaceInfo & { readonly status: 'ready'; readonly download: DirectRequest; readonly expiresAt: Date })
  | (WorkspaceInfo & { readonly status: 'restoring' });

/** A session of the user. */
export interface SessionInfo {
  readonly sessionId: string;
  /** The last activity, accurate to the keep-alive interval. */
  readonly lastActivity: Date;
}

/** One page of `listSessionIds`. */
export interface SessionPage {
  readonly sessions: SessionInfo[];
  /** Pass back to get the next page; null when there is none. */
  readonly nextCursor: string | null;
}

/** Everything one user can do with their own sessions. */
export interface SessionStore {
  /** The single value, or undefined when absent. */
  get<T = unknown>(sessionId: string, key: string): Promise<T | undefined>;
  /** The single value and its version, or undefined when absent. */
  getVersioned<T = unknown>(sessionId: string, key: string): Promise<Versioned<T> | undefined>;
  /** Overwrites the single value (optionally conditional); returns the new version. */
  save(sessionId: string, key: string, value: unknown, options?: SaveOptions): Promise<ValueWritten>;
  /** Removes one single value (absent is fine). */
  deleteKey(sessionId: string, key: string, options?: WriteOptions): Promise<void>;
  /** Saves the whole list: unchanged, append or (archived) rewrite, whichever it is. */
  saveList(
    sessionId: string,
    key: string,
    items: readonly unknown[],
    options?: ListSaveOptions,
  ): Promise<ListWriteResult>;
  /** Appends 1 to 1,000 items if the list is where the caller believes it is. */
  appendList(
    sessionId: string,
    key: string,
    items: readonly unknown[],
    options: AppendOptions,
  ): Promise<ListWriteResult>;
  /**
   * Keeps the first `count` items of the list if it has `expectedHash`; archives only the items it
   * removes (`ArchiveInfo.offset` is `count`). `unchanged` when `count` is the list's count.
   * `ListPreconditionFailedError` for another hash, `ListTooShortError` for fewer than `count` items.
   */
  truncateList(sessionId: string, key: string, options: TruncateOptions): Promise<ListWriteResult>;
  /**
   * A page of the session's keys (values and lists) in the UTF-8 byte order of the key;
   * `SessionNotFoundError` when the session does not exist.
   */
  listKeys(sessionId: string, options?: ListKeysOptions): Promise<KeyPage>;
  /**
   * Reads values and lists of a session in parallel with one read of its marker (at most 100
   * keys): `exists: false` and no data when the session is absent (docs/DESIGN.md, "Snapshots
   * and commits").
   */
  snapshot(sessionId: string, request: SnapshotRequest): Promise<Snapshot>;
  /**
   * Applies a turn's changes: every precondition checked before the first write, values before
   * lists, each key atomic (not a cross-key transaction); safe to retry with the same `commitId`.
   */
  commit(sessionId: string, request: CommitRequest): Promise<CommitResult>;
  /** A page of the list (an absent list is empty). */
  getList<T = unknown>(sessionId: string, key: string, options?: PageOptions): Promise<ListPage<T>>;
  /** Archives the list, then removes it. */
  deleteList(sessionId: string, key: string, options?: WriteOptions): Promise<void>;
  /** The archives of a list, oldest first. */
  listArchives(sessionId: string, key: string): Promise<ArchiveInfo[]>;
  /** A page of an archived list, or undefined when there is no such archive. */
  getArchive<T = unknown>(
    sessionId: string,
    key: string,
    archiveId: string,
    options?: PageOptions,
  ): Promise<ListPage<T> | undefined>;
  /** True when the session exists (one HEAD). */
  exists(sessionId: string): Promise<boolean>;
  /** Deletes the session and everything it owns; idempotent. */
  delete(sessionId: string, options?: WriteOptions): Promise<void>;
  /** Deletes every session of this user. */
  deleteAllSessions(): Promise<void>;
  /** The user's sessions, a page at a time (1 to 1,000; default 1,000). */
  listSessionIds(options?: { limit?: number; cursor?: string }): Promise<SessionPage>;

  /** Starts a direct upload of a workspace (creates the session); the bytes never pass through here. */
  createWorkspaceUpload(
    sessionId: string,
    name: string,
    request: WorkspaceUploadRequest,
    options?: WriteOptions,
  ): Promise<WorkspaceUpload>;
  /** Checks what was uploaded against what was declared and makes it the workspace. */
  completeWorkspaceUpload(
    sessionId: string,
    name: string,
    uploadId: string,
    options?: WriteOptions,
  ): Promise<WorkspaceInfo>;
  /** The session's workspaces, by name. */
  listWorkspaces(sessionId: string): Promise<WorkspaceInfo[]>;
  /** A URL to download the workspace, or (archived) `restoring` after asking for a restore. */
  getWorkspace(sessionId: string, name: string): Promise<WorkspaceDownload | undefined>;
  /** Removes a workspace and its pending upload (absent is fine). */
  deleteWorkspace(sessionId: string, name: string, options?: WriteOptions): Promise<void>;
  /** Starts a direct upload of a single value too large for a request body. */
  createValueUpload(
    sessionId: string,
    key: string,
    request: { readonly size: number; readonly md5: string },
  ): Promise<{ uploadId: string; upload: DirectRequest; expiresAt: Date }>;
  /** Commits an uploaded value as `save` would (the same conditions and fencing), then drops the upload. */
  commitValueUpload(
    sessionId: string,
    key: string,
    uploadId: string,
    options?: SaveOptions,
  ): Promise<ValueWritten>;
  /**
   * A URL to download list item `n` when it is stored as an object of its own (over 1 MiB) and the
   * backend can presign; otherwise undefined (it is read with the list).
   */
  locateListItem(
    sessionId: string,
    key: string,
    n: number,
  ): Promise<{ download: DirectRequest; size: number; expiresAt: Date } | undefined>;
  /** A URL to download the single value (for values too large for an answer), or undefined. */
  locateValue(
    sessionId: string,
    key: string,
  ): Promise<
    { download: DirectRequest; version: string; revision: number; size: number; expiresAt: Date } | undefined
  >;
}

/**
 * The library's user store. Every `SessionStore` operation is required now that the typed client
 * has `listKeys` and `truncateList` too, so this is `SessionStore` itself, kept as a name for the
 * code that still imports it.
 * @deprecated use `SessionStore`.
 */
export type LibrarySessionStore = SessionStore;

/** Where the store reports its counters (the HTTP layer sends them to CloudWatch EMF). */
export interface MetricsSink {
  count(name: StoreCounter, value?: number): void;
}

/** The counters the store reports. */
export type StoreCounter =
  | 'listRewrites'
  | 'archivedLists'
  | 'appendConflicts'
  | 'fencedWrites'
  | 'persistenceFailures'
  | 'manifestRepairs'
  | 'corruptObjects';

// ---- a turn's snapshot ----------------------------------------------------------------------------------

/**
 * What a snapshot reads: values by key, lists by key (the `last` most recent items, or the whole
 * list), and the values of a page of keys (`valuePage`: in key order, as `listKeys` pages them).
 */
export interface SnapshotRequest {
  readonly values?: readonly string[];
  readonly lists?: ReadonlyArray<{ readonly key: string; readonly last?: number }>;
  readonly valuePage?: ValuePage;
}

/**
 * A page of values read by a snapshot: the values whose keys start with `prefix`, from `cursor`
 * on, `limit` keys at most (they count towards the snapshot's 100 keys). A key that is only a
 * list, or whose value vanished, is left out; read on with the snapshot's `nextCursor`.
 */
export interface ValuePage {
  readonly prefix?: string;
  readonly limit: number;
  readonly cursor?: string;
}

/**
 * A value in a snapshot: present (with its etag), absent, or damaged; through HTTP, a value too
 * large for the answer comes as a presigned `download` instead (the library never answers one).
 */
export type SnapshotValue =
  | { readonly key: string; readonly value: unknown; readonly etag: string; readonly revision: number }
  | { readonly key: string; readonly absent: true }
  | { readonly key: string; readonly corrupt: true }
  | {
      readonly key: string;
      readonly etag: string;
      readonly revision: number;
      /** Bytes of the stored value. */
      readonly size: number;
      readonly download: DirectRequest;
      readonly expiresAt: Date;
    };

/** A list in a snapshot: a page (an absent list is the empty page), or damaged. */
export type SnapshotList =
  | ({ readonly key: string } & ListPage)
  | { readonly key: string; readonly corrupt: true };

/** The answer of `snapshot`: `exists: false` (and no data) for an absent session, another user's included. */
export interface Snapshot {
  readonly exists: boolean;
  /** The values named, in their order, then the page's (a key named and in the page comes once). */
  readonly values: SnapshotValue[];
  readonly lists: SnapshotList[];
  /** With a `valuePage`: pass as its `cursor` for the next page; absent on the last page. */
  readonly nextCursor?: string;
}

// ---- commit ------------------------------------------------------------------------------------

/** A value change of a commit: a save (optionally conditional) or a delete. */
export type CommitValue =
  | {
      readonly key: string;
      readonly value: unknown;
      /** Write only if the current version is this one. */
      readonly ifVersion?: string;
      /** Write only if the value is absent. */
      readonly ifAbsent?: boolean;
      /** Write only if the current revision is this one (read first; unsupported on OSS). */
      readonly ifRevision?: number;
      /**
       * Not a condition: the version the caller read (a snapshot's etag). The commit tries it as
       * `If-Match` instead of reading the value first; when it fails, it reads the value and
       * writes as without it. Not with `ifVersion` or `ifAbsent`.
       */
      readonly seenVersion?: string;
      /**
       * Not a condition: the revision of the version named by `ifVersion` or `seenVersion` (as the
       * snapshot answered it), so the commit writes the next revision without reading the value
       * first; without it, a commit reads the value to learn its revision.
       */
      readonly seenRevision?: number;
    }
  | { readonly key: string; readonly delete: true };

/** A list change of a commit: an append at a known end, a whole replacement, or a truncate. */
export type CommitList =
  | {
      readonly key: string;
      readonly append: readonly unknown[];
      readonly expectedCount: number;
      readonly expectedHash: string;
    }
  | { readonly key: string; readonly replace: readonly unknown[]; readonly expectedHash?: string }
  | { readonly key: string; readonly truncate: number; readonly expectedHash: string };

/** Every change of one turn. */
export interface CommitRequest {
  /** Names the commit (1 to 64 of `[A-Za-z0-9._:-]`): a retry with the same id and body is safe. */
  readonly commitId: string;
  /** The lease's fencing token: a stale one writes nothing at all. */
  readonly token?: number;
  readonly values?: readonly CommitValue[];
  readonly lists?: readonly CommitList[];
}

/** What a commit did: each value's new etag and revision (none for a delete), each list's action, count and hash. */
export interface CommitResult {
  readonly commitId: string;
  readonly values: Array<{ readonly key: string; readonly etag?: string; readonly revision?: number }>;
  readonly lists: Array<{
    readonly key: string;
    readonly action: ListAction;
    readonly count: number;
    readonly hash: string;
  }>;
}

// ---- an engine ---------------------------------------------------------------------------------

/**
 * What a user store of an engine whose lock is its own may offer (docs/DESIGN.md, "Snapshots and
 * commits"): a turn's lease with its snapshot, and its commit with the lease's release, each one
 * round trip. Offered only when the store's authority is that lock; the turn route uses them then.
 */
export interface TurnsOnOneEngine {
  /** Takes the lease as `SessionLock.acquire` does, then reads the snapshot, at once. */
  beginTurn(
    sessionId: string,
    lease: { readonly leaseMs?: number; readonly waitMs?: number; readonly owner?: string },
    request: SnapshotRequest,
  ): Promise<{ lease: Lease; snapshot: Snapshot }> | undefined;
  /**
   * Commits as `commit` does, then releases the lease of `owner` and the request's token (recording
   * the commit's identity in it) when it still holds it, at once.
   */
  commitAndRelease(
    sessionId: string,
    request: CommitRequest,
    owner: string,
  ): Promise<CommitResult> | undefined;
}

/**
 * What the server's backend can do, as `GET /v1/capabilities` answers it: derived once from the
 * driver's capabilities (lib/store/capabilities.ts), so clients read it instead of assuming.
 */
export interface StoreCapabilities {
  /** Every value carries a version (its `ETag`), and reads can be conditioned on it (every backend). */
  readonly versioning: boolean;
  /**
   * Values carry a revision (1 on create, +1 per write). Where `conditionalOverwrite` is false
   * (OSS) two racing writes may record the same revision, and `If-Revision` is refused.
   */
  readonly revisions: boolean;
  /**
   * A save conditioned on a version (`If-Match`, `ifVersion`, a commit's `ifVersion`) is evaluated
   * atomically by the backend; where not (OSS), it is refused as `precondition-unsupported`.
   */
  readonly conditionalOverwrite: boolean;
  /** The backend reads byte ranges of stored objects (partial reads; presigned downloads honour `Range`). */
  readonly ranges: boolean;
  /** Workspaces and large values move straight to and from the object store through presigned URLs. */
  readonly presignedTransfer: boolean;
  /** A commit is atomic across its keys (false on object storage: per-key atomic). */
  readonly atomicCommits: boolean;
}

/** The store: user-scoped stores, and the test-only truncate. */
export interface StateStore {
  /** What its backend can do (`GET /v1/capabilities`). */
  readonly capabilities: StoreCapabilities;
  /**
   * The store of one user; null or blank is the anonymous user. `authority` replaces the store's
   * own (the HTTP router passes its lock).
   */
  forUser(userId: string | null | undefined, options?: { readonly authority?: TokenAuthority }): SessionStore;
  /** Deletes every session of every user under the prefix; only with `allowTruncate`. */
  truncateAllSessions?(): Promise<void>;
  /**
   * Whether the backend can be reached with these credentials (one GET of a fixed name): resolves,
   * or `MisconfiguredBackendError` (a missing bucket, refused credentials) or a retryable `BackendError`.
   */
  checkReady(): Promise<void>;
}
