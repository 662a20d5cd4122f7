/**
 * The client's public types: its options, every call's `CallOptions`, the options of the
 * transfers, the lock and a turn, and `HttpSessionStore`, the interface the client implements
 * (the parts of the client share them; `index.ts` exports them all).
 */

import type { Lease, LockHolder } from '../contract/lock.js';
import type {
  AppendOptions,
  ArchiveInfo,
  CommitRequest,
  CommitResult,
  DirectRequest,
  KeyPage,
  ListKeysOptions,
  ListPage,
  ListSaveOptions,
  ListWriteResult,
  PageOptions,
  SaveOptions,
  SessionPage,
  SessionStore,
  Snapshot,
  SnapshotRequest,
  StorageTier,
  StoreCapabilities,
  TruncateOptions,
  ValueWritten,
  Versioned,
  WorkspaceDownload,
  WorkspaceInfo,
  WorkspaceUpload,
  WorkspaceUploadRequest,
  WriteOptions,
} from '../contract/types.js';
import type { ContentEncoding } from '../util/web-encoding.js';
import type { WorkspaceSource } from './sources.js';
import type { Turn } from './turn.js';

/**
 * Where the client's debug lines go (`console` will do, as will most loggers): one line per retry,
 * naming the request, the attempt, what went wrong (a status and problem code with the request id,
 * a timeout, a network error) and the wait. A line never holds a header (the token), a body, or
 * the query of a presigned URL.
 */
export interface ClientLogger {
  debug(message: string): void;
}

/**
 * Options of the client. Each one left out takes its default; `baseUrl` and `token` are read from
 * `AGENT_STATE_URL` and `AGENT_STATE_TOKEN` where the runtime has environment variables
 * (`globalThis.process?.env`). An option given wins over its variable.
 */
export interface HttpClientOptions {
  /**
   * For example `http://127.0.0.1:8787` or the API Gateway URL; default `AGENT_STATE_URL`. With
   * neither, `createHttpClient` throws a `ValidationError`.
   */
  readonly baseUrl?: string;
  /**
   * The bearer token, or a function returning a fresh one (called for each request); default
   * `AGENT_STATE_TOKEN`; none for an anonymous local server.
   */
  readonly token?: string | (() => string | Promise<string>);
  /** Where debug lines of retries go; none by default. */
  readonly logger?: ClientLogger;
  /**
   * The user this client means: sent as `Agent-State-User` (its URL id form) with every API call,
   * so a token of another user is refused (403 `user-mismatch`, `UserMismatchError`) instead of
   * acting in that user's sessions. None by default: the token alone decides.
   */
  readonly userId?: string;
  /**
   * Attempts of a call: of an idempotent one (GET, HEAD, PUT, DELETE, and an append, which carries
   * its `Idempotency-Key`) after a network error, a timeout or a 429/5xx, of any one answered 409
   * `contended` (nothing was written); default 4. The wait before each is the answer's
   * `Retry-After` (429, 503, `contended`; seconds or an HTTP date) or a jittered backoff, at most 2 s.
   */
  readonly attempts?: number;
  /**
   * Time an attempt may take, from sending to the last byte of its answer; default 30 s, 0 for none.
   * A direct upload gets 1 s more per MiB it sends; a direct download times out when no byte
   * arrives for this long. A timed-out attempt is retried like a network error where a retry is
   * safe, else (or when the attempts run out) the call rejects with `RequestTimeoutError`.
   */
  readonly timeoutMs?: number;
  /**
   * The fetch to use; default the global one. The Node entry (`agent-state-store/client/node`)
   * downloads workspaces over node:http(s) unless it is given one, so that progress counts the
   * bytes as stored (fetch decodes a body served with its Content-Encoding).
   */
  readonly fetch?: typeof fetch;
  /**
   * Largest request body the API takes (its `BODY_LIMIT_BYTES`); a larger value is uploaded
   * directly and committed. Default 4 MiB.
   */
  readonly bodyLimitBytes?: number;
}

/** What every method of the client accepts in its (last) options parameter. */
export interface CallOptions {
  /**
   * Aborts the call: it rejects with the signal's reason as soon as the signal aborts, whether it
   * is waiting for an answer, between retries, or in a direct transfer.
   */
  readonly signal?: AbortSignal;
  /** This call's per-attempt timeout, instead of the client's `timeoutMs`. */
  readonly timeoutMs?: number;
}

/** Progress of a workspace transfer: bytes of the stored (compressed) body done, of `total`. */
export type TransferProgress = (done: number, total: number) => void;

/** Options of `uploadWorkspace`. */
export interface UploadWorkspaceOptions extends WriteOptions, CallOptions {
  /**
   * Compression applied here before upload; default `gzip` (`CompressionStream`). `br` is the
   * Node entry's (`agent-state-store/client/node`); elsewhere it is a `ValidationError`.
   */
  readonly encoding?: ContentEncoding;
  readonly storageClass?: StorageTier;
  readonly contentType?: string;
  /** Bodies above this go up in parts; default 16 MiB. */
  readonly multipartAboveBytes?: number;
  /** Part size; default 8 MiB (at least 5 MiB). */
  readonly partBytes?: number;
  /** Parts sent at once; default 4. */
  readonly concurrency?: number;
  /**
   * Called with (0, total) once the body is ready, then as the upload or each part completes; the
   * last call has `done === total` (bytes as stored, after compression).
   */
  readonly onProgress?: TransferProgress;
}

/** Options of `downloadWorkspace` (and the Node entry's `downloadWorkspaceToFile`). */
export interface DownloadWorkspaceOptions extends CallOptions {
  /**
   * Called with (0, total), then as chunks of the stored (compressed) body arrive; the last call
   * has `done === total`. (Through a `fetch` that decodes the body, only the first and last: the
   * Node entry downloads the stored bytes unless it is given a `fetch`.)
   */
  readonly onProgress?: TransferProgress;
}

/** Options of `acquireLock`. */
export interface AcquireLockOptions extends CallOptions {
  readonly leaseMs?: number;
  /** How long the server waits for the lock; the call's timeout is extended by it. */
  readonly waitMs?: number;
  readonly owner?: string;
}

/** Options of `beginTurn`: the lease (as `acquireLock` takes it) and the keys the turn reads. */
export interface BeginTurnOptions extends SnapshotRequest, CallOptions {
  readonly leaseMs: number;
  /** How long the server waits for the lock; the call's timeout is extended by it. */
  readonly waitMs?: number;
  readonly owner?: string;
}

/** A lease as the lock calls take it. */
export interface LeaseRef {
  readonly owner: string;
  readonly token: number;
}

/**
 * The client: the user's `SessionStore` plus the lock and the workspace transfers; every method
 * takes `CallOptions` (`signal`, `timeoutMs`) in its last, optional options parameter. It runs in
 * any runtime with fetch and Web Crypto (Node 20, browsers, workers); the Node entry's client
 * (`NodeHttpSessionStore`) adds files and brotli.
 */
export interface HttpSessionStore extends SessionStore {
  /**
   * What the server's backend can do (`GET /v1/capabilities`): asked once, then answered from that
   * answer for the client's life (a failed read is asked again).
   */
  capabilities(options?: CallOptions): Promise<StoreCapabilities>;
  get<T = unknown>(sessionId: string, key: string, options?: CallOptions): Promise<T | undefined>;
  getVersioned<T = unknown>(
    sessionId: string,
    key: string,
    options?: CallOptions,
  ): Promise<Versioned<T> | undefined>;
  save(
    sessionId: string,
    key: string,
    value: unknown,
    options?: SaveOptions & CallOptions,
  ): Promise<ValueWritten>;
  deleteKey(sessionId: string, key: string, options?: WriteOptions & CallOptions): Promise<void>;
  /**
   * Sends as its base (`If-Match`) the hash this client last saw of the list (or `ifHash`): a list
   * changed since is refused with `ListPreconditionFailedError`, nothing written. When it turns
   * into an append, that append carries one `Idempotency-Key`, as `appendList`'s.
   */
  saveList(
    sessionId: string,
    key: string,
    items: readonly unknown[],
    options?: ListSaveOptions & CallOptions,
  ): Promise<ListWriteResult>;
  /**
   * Sends one `Idempotency-Key` with every attempt, so it is retried after a lost answer too; a
   * 409 `append-conflict` whose count and hash are exactly what this append makes (its base hash
   * being `expectedHash` or the hash the client knows for `expectedCount`) is this append, landed.
   */
  appendList(
    sessionId: string,
    key: string,
    items: readonly unknown[],
    options: AppendOptions & CallOptions,
  ): Promise<ListWriteResult>;
  /**
   * Sends one `Idempotency-Key` (the `writeId`, or one made here) with every attempt, so it is
   * retried after a lost answer too: the server answers a replay with the first answer.
   */
  truncateList(
    sessionId: string,
    key: string,
    options: TruncateOptions & CallOptions,
  ): Promise<ListWriteResult>;
  /** One page of the session's keys; `SessionNotFoundError` for an absent (or another user's) session. */
  listKeys(sessionId: string, options?: ListKeysOptions & CallOptions): Promise<KeyPage>;
  getList<T = unknown>(
    sessionId: string,
    key: string,
    options?: PageOptions & CallOptions,
  ): Promise<ListPage<T>>;
  deleteList(sessionId: string, key: string, options?: WriteOptions & CallOptions): Promise<void>;
  listArchives(sessionId: string, key: string, options?: CallOptions): Promise<ArchiveInfo[]>;
  getArchive<T = unknown>(
    sessionId: string,
    key: string,
    archiveId: string,
    options?: PageOptions & CallOptions,
  ): Promise<ListPage<T> | undefined>;
  exists(sessionId: string, options?: CallOptions): Promise<boolean>;
  delete(sessionId: string, options?: WriteOptions & CallOptions): Promise<void>;
  deleteAllSessions(options?: CallOptions): Promise<void>;
  listSessionIds(options?: { limit?: number; cursor?: string } & CallOptions): Promise<SessionPage>;
  createWorkspaceUpload(
    sessionId: string,
    name: string,
    request: WorkspaceUploadRequest,
    options?: WriteOptions & CallOptions,
  ): Promise<WorkspaceUpload>;
  completeWorkspaceUpload(
    sessionId: string,
    name: string,
    uploadId: string,
    options?: WriteOptions & CallOptions,
  ): Promise<WorkspaceInfo>;
  listWorkspaces(sessionId: string, options?: CallOptions): Promise<WorkspaceInfo[]>;
  getWorkspace(
    sessionId: string,
    name: string,
    options?: CallOptions,
  ): Promise<WorkspaceDownload | undefined>;
  deleteWorkspace(sessionId: string, name: string, options?: WriteOptions & CallOptions): Promise<void>;
  createValueUpload(
    sessionId: string,
    key: string,
    request: { readonly size: number; readonly md5: string },
    options?: CallOptions,
  ): Promise<{ uploadId: string; upload: DirectRequest; expiresAt: Date }>;
  commitValueUpload(
    sessionId: string,
    key: string,
    uploadId: string,
    options?: SaveOptions & CallOptions,
  ): Promise<ValueWritten>;
  locateValue(
    sessionId: string,
    key: string,
    options?: CallOptions,
  ): Promise<
    { download: DirectRequest; version: string; revision: number; size: number; expiresAt: Date } | undefined
  >;
  locateListItem(
    sessionId: string,
    key: string,
    n: number,
    options?: CallOptions,
  ): Promise<{ download: DirectRequest; size: number; expiresAt: Date } | undefined>;

  /**
   * Reads values and lists of a session in one call (at most 100 keys): `exists: false` and no
   * data for an absent session; a list's most recent items that fit an answer, from `offset`; a
   * value too large for an answer as a `download`.
   */
  snapshot(sessionId: string, request: SnapshotRequest, options?: CallOptions): Promise<Snapshot>;
  /**
   * Applies changes to a session in one call, without a lease (`token` fences them when given):
   * every precondition checked before the first write, values before lists, each key atomic;
   * retried with the same `commitId` on lost answers, 429 and 5xx. A turn's `commit` sends the
   * same body with its lease.
   */
  commit(sessionId: string, request: CommitRequest, options?: CallOptions): Promise<CommitResult>;
  /**
   * Begins a turn: the lease (`LockConflictError` when another owner holds it), then the snapshot
   * of the keys named. Buffer the turn's changes on the `Turn`, then `commit` them in one call.
   */
  beginTurn(sessionId: string, options: BeginTurnOptions): Promise<Turn>;

  /** Who holds the session's lease now (one consistent read of the lock), or undefined when no one does. */
  getLock(sessionId: string, options?: CallOptions): Promise<LockHolder | undefined>;
  acquireLock(sessionId: string, options?: AcquireLockOptions): Promise<Lease>;
  renewLock(sessionId: string, lease: LeaseRef, options?: { leaseMs?: number } & CallOptions): Promise<Lease>;
  releaseLock(sessionId: string, lease: LeaseRef, options?: CallOptions): Promise<void>;
  /**
   * Compresses (gzip by default), uploads straight to the object store (one PUT or parts, each
   * retried), completes. A `Blob` is read a part at a time when it is sent as it is; a stream,
   * and a compressed body, are held in memory until uploaded (the Node entry's
   * `uploadWorkspaceFile` compresses into a temporary file instead).
   */
  uploadWorkspace(
    sessionId: string,
    name: string,
    data: WorkspaceSource,
    options?: UploadWorkspaceOptions,
  ): Promise<WorkspaceInfo>;
  /** Downloads straight from the object store and decompresses; `RestoreInProgressError` while archived. */
  downloadWorkspace(
    sessionId: string,
    name: string,
    options?: DownloadWorkspaceOptions,
  ): Promise<Uint8Array | undefined>;
}
