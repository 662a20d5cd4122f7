/**
 * Typed HTTP client: implements the store's `SessionStore` (plus the lock calls) over the API, so an
 * agent moves from the local store to the remote one by changing one line. It encodes ids, sends only
 * new items when it knows the list (count and hash, with `expectedCount`), retries idempotent calls
 * with jittered backoff (and any call answered `contended`), reads a list larger than an answer whole,
 * a page at a time, and raises the same typed errors as the library.
 *
 * Large state never goes through the API: workspaces are compressed here (gzip or brotli), then
 * uploaded straight to the object store with the presigned PUT or parts the API signs, and
 * downloaded the same way; a value larger than a request body is uploaded the same way and
 * committed; a value larger than an answer comes back as a 303 to a presigned URL, followed here.
 *
 * The protocol (lib/protocol) is the router's: URLs are built from its paths, every answer is
 * validated with its schemas (an answer that is not what the protocol says is a `ProtocolError`),
 * and every problem becomes the typed error its table names, carrying the answer's `X-Request-Id`.
 *
 * Every call takes `CallOptions` last: an `AbortSignal` (the call rejects with its reason at once,
 * also between retries and during direct transfers) and a per-attempt `timeoutMs` (default the
 * client's, 30 s). Every append carries an `Idempotency-Key`, so a lost answer is retried safely.
 */

import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { type FileHandle, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliCompress, createBrotliDecompress, createGunzip, createGzip } from 'node:zlib';
import type * as z from 'zod/mini';
import {
  AppendConflictError,
  BackendError,
  PayloadTooLargeError,
  ProtocolError,
  RestoreInProgressError,
  SessionNotFoundError,
  StoreError,
  UploadNotFoundError,
  ValidationError,
} from '../contract/errors.js';
import { canonicalJson, chainHash, EMPTY_HASH } from '../contract/hash.js';
import {
  DEFAULT_BODY_LIMIT_BYTES,
  MAX_APPEND_ITEMS,
  MAX_UPLOAD_PARTS,
  MIN_PART_BYTES,
} from '../contract/limits.js';
import type { Lease } from '../contract/lock.js';
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
  TruncateOptions,
  Versioned,
  WorkspaceDownload,
  WorkspaceInfo,
  WorkspaceUpload,
  WorkspaceUploadRequest,
  WriteOptions,
} from '../contract/types.js';
import { paths } from '../protocol/paths.js';
import { problemCodeOf, problemError, SESSION_NOT_FOUND } from '../protocol/problems.js';
import { HEADER_NAMES, REQUEST_ID_HEADER, schemas } from '../protocol/schemas.js';
import { type ContentEncoding, decodeBody, encodeBody, md5Base64, sha256Base64 } from '../util/encoding.js';
import {
  type Attempt,
  NULL_BODY,
  nodeFetch,
  pauseMs,
  RequestTimeoutError,
  race,
  sleep,
  startAttempt,
} from './transport.js';
import { Turn, type TurnCommitResult } from './turn.js';

export type { CommitFailure } from '../contract/errors.js';
export { PayloadTooLargeError, ProtocolError, UnauthorizedError } from '../contract/errors.js';
export type {
  CommitList,
  CommitRequest,
  CommitResult,
  CommitValue,
  Snapshot,
  SnapshotList,
  SnapshotRequest,
  SnapshotValue,
} from '../contract/types.js';
export { RequestTimeoutError } from './transport.js';
export {
  Turn,
  type TurnCommitOptions,
  type TurnCommitResult,
} from './turn.js';

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

/** Options of the client. */
export interface HttpClientOptions {
  /** For example `http://127.0.0.1:8787` or the API Gateway URL. */
  readonly baseUrl: string;
  /** The bearer token, or a function returning a fresh one; omit for an anonymous local server. */
  readonly token?: string | (() => string | Promise<string>);
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
   * The fetch to use; default the global one. Without it, direct workspace downloads go over
   * node:http(s), so that progress counts the bytes as stored (fetch decodes a body served with its
   * Content-Encoding); with it, they go through it too.
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
  /** Compression applied here before upload; default `gzip`. */
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

/** Options of `downloadWorkspace` and `downloadWorkspaceToFile`. */
export interface DownloadWorkspaceOptions extends CallOptions {
  /**
   * Called with (0, total), then as chunks of the stored (compressed) body arrive; the last call
   * has `done === total`. (Through a `fetch` that decodes the body, only the first and last.)
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
 * takes `CallOptions` (`signal`, `timeoutMs`) in its last, optional options parameter.
 */
export interface HttpSessionStore extends SessionStore {
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
  ): Promise<{ version: string }>;
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
  ): Promise<{ version: string }>;
  locateValue(
    sessionId: string,
    key: string,
    options?: CallOptions,
  ): Promise<{ download: DirectRequest; version: string; size: number; expiresAt: Date } | undefined>;
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

  acquireLock(sessionId: string, options?: AcquireLockOptions): Promise<Lease>;
  renewLock(sessionId: string, lease: LeaseRef, options?: { leaseMs?: number } & CallOptions): Promise<Lease>;
  releaseLock(sessionId: string, lease: LeaseRef, options?: CallOptions): Promise<void>;
  /** Compresses, uploads straight to the object store (one PUT or parts, each retried), completes. */
  uploadWorkspace(
    sessionId: string,
    name: string,
    data: Uint8Array,
    options?: UploadWorkspaceOptions,
  ): Promise<WorkspaceInfo>;
  /** The same from a file, read a part at a time (compressed into a temporary file first). */
  uploadWorkspaceFile(
    sessionId: string,
    name: string,
    file: string,
    options?: UploadWorkspaceOptions,
  ): Promise<WorkspaceInfo>;
  /** Downloads straight from the object store and decompresses; `RestoreInProgressError` while archived. */
  downloadWorkspace(
    sessionId: string,
    name: string,
    options?: DownloadWorkspaceOptions,
  ): Promise<Uint8Array | undefined>;
  /** The same into a file, streamed; false when there is no such workspace. */
  downloadWorkspaceToFile(
    sessionId: string,
    name: string,
    file: string,
    options?: DownloadWorkspaceOptions,
  ): Promise<boolean>;
}

const MIB = 1024 * 1024;

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);
const TRANSIENT = new Set([429, 500, 502, 503, 504]);
/** Times a whole list read starts again when the list was rewritten meanwhile. */
const LIST_READ_RESTARTS = 3;

/** Bytes to upload, read a part at a time. */
interface Source {
  readonly size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
}

const bytesSource = (body: Uint8Array): Source => ({
  size: body.byteLength,
  read: async (offset, length) => body.subarray(offset, offset + length),
});

async function fileSource(handle: FileHandle): Promise<Source> {
  const { size } = await handle.stat();
  return {
    size,
    async read(offset, length) {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, offset);
      return buffer.subarray(0, bytesRead);
    },
  };
}

/** The problem code of a 409 or 503 answer (read from a clone: the answer stays readable). */
async function codeOf(response: Response): Promise<string | undefined> {
  if (response.status !== 409 && response.status !== 503) return undefined;
  return problemCodeOf(
    await response
      .clone()
      .json()
      .catch(() => undefined),
  );
}

/** The request id of an API answer (`X-Request-Id`), or of an object store's. */
const requestIdOf = (response: Response) =>
  response.headers.get(REQUEST_ID_HEADER) ??
  response.headers.get('x-amz-request-id') ??
  response.headers.get('x-oss-request-id') ??
  undefined;

/** `error`, carrying the request id of the answer it comes from. */
function tagged<E extends StoreError>(error: E, response: Response | { requestId?: string | undefined }): E {
  const id = response instanceof Response ? requestIdOf(response) : response.requestId;
  if (id !== undefined) error.requestId = id;
  return error;
}

/**
 * The body of an answer, validated with the protocol's schema; a `ProtocolError` when it is not
 * JSON or not of that schema (never a cast).
 */
async function bodyOf<S extends z.ZodMiniType>(
  response: Response,
  schema: S,
  what: string,
): Promise<z.output<S>> {
  let value: unknown;
  try {
    value = await response.json();
  } catch (error) {
    throw tagged(
      new ProtocolError(`${what}: the ${response.status} answer is not JSON`, response.status, {
        cause: error,
      }),
      response,
    );
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue?.path.length ? ` at ${issue.path.join('.')}` : '';
    const expected = issue && 'expected' in issue ? ` (expected ${String(issue.expected)})` : '';
    throw tagged(
      new ProtocolError(
        `${what}: malformed ${response.status} answer${at}: ${issue?.code ?? 'invalid'}${expected}`,
        response.status,
      ),
      response,
    );
  }
  return parsed.data;
}

/** A page of a list read, with the request id of its answer. */
type PageRead<T> = ListPage<T> & { readonly requestId?: string | undefined };

/** A body, whole, as one answer carries it: a fresh `Response` that can be read at leisure. */
async function buffered(response: Response): Promise<Response> {
  if (!response.body) return response;
  const bytes = await response.arrayBuffer();
  return new Response(NULL_BODY.has(response.status) ? null : bytes, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/** Drops a body nobody will read. */
const discard = (response: Response | undefined) => response?.body?.cancel().catch(() => {});

/** The chunks of an answer's body; each restarts the attempt's clock; an abort or timeout ends it. */
async function* chunksOf(response: Response, clock: Attempt): AsyncGenerator<Uint8Array> {
  if (!response.body) return;
  const reader = response.body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await race(reader.read(), clock.signal);
      if (done) {
        finished = true;
        return;
      }
      clock.touch();
      yield value;
    }
  } finally {
    if (!finished) reader.cancel().catch(() => {});
    try {
      reader.releaseLock();
    } catch {
      // a read still pending on a cancelled stream
    }
  }
}

/** What a failed attempt amounts to: the call's abort reason, the attempt's timeout, or `error`. */
function failureOf(error: unknown, clock: Attempt, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return signal.reason;
  if (clock.timedOut) return clock.signal.reason;
  return error;
}

/** Runs `work`; when the call was aborted meanwhile, rejects with the signal's reason instead. */
async function abortable<T>(signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
  signal?.throwIfAborted();
  try {
    return await work();
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  }
}

/** Only the call options of an options object. */
const callOf = (o: CallOptions | undefined): CallOptions => ({ signal: o?.signal, timeoutMs: o?.timeoutMs });

/** Creates the client. */
export function createHttpClient(options: HttpClientOptions): HttpSessionStore {
  const base = options.baseUrl.replace(/\/+$/, '');
  const attempts = options.attempts ?? 4;
  const doFetch = options.fetch ?? fetch;
  // Direct downloads without a given fetch: node:http(s), which hands over the bytes as stored.
  const downloadFetch: typeof nodeFetch = options.fetch ?? nodeFetch;
  const bodyLimit = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const timeoutMs = options.timeoutMs ?? 30_000;
  /** What the client knows of each list: count and hash after its last write or read. */
  const known = new Map<string, { count: number; hash: string }>();

  async function call(
    method: string,
    path: string,
    init: {
      body?: unknown;
      headers?: Record<string, string>;
      query?: Record<string, string | number | undefined>;
      call?: CallOptions | undefined;
      /** Whether a lost answer may be retried; default by method (an append says so itself). */
      idempotent?: boolean;
      /** Time the server may take on purpose (a lock's `waitMs`), added to the timeout. */
      extraMs?: number;
      /** Set when an attempt whose answer was lost (network error, timeout, 5xx) was sent again. */
      retried?: { lost: boolean };
    } = {},
  ): Promise<Response> {
    const signal = init.call?.signal;
    signal?.throwIfAborted();
    const query = Object.entries(init.query ?? {}).filter(([, v]) => v !== undefined);
    const url = `${base}${path}${query.length > 0 ? `?${new URLSearchParams(query.map(([k, v]): [string, string] => [k, String(v)]))}` : ''}`;
    const token =
      typeof options.token !== 'function'
        ? options.token
        : signal
          ? await race(Promise.resolve(options.token()), signal)
          : await options.token();
    const headers: Record<string, string> = { ...init.headers };
    if (token) headers.authorization = `Bearer ${token}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    const idempotent = init.idempotent ?? IDEMPOTENT.has(method);
    const limit = init.call?.timeoutMs ?? timeoutMs;
    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined;
      let failure: unknown;
      const clock = startAttempt(signal, limit > 0 ? limit + (init.extraMs ?? 0) : 0, `${method} ${path}`);
      try {
        // A 303 (a value too large for an answer) is followed by hand, without the Authorization.
        const answer = doFetch(url, { method, headers, body, redirect: 'manual', signal: clock.signal });
        // Read whole within the attempt: an answer that stops half way times out too.
        response = await race(buffered(await race(answer, clock.signal, discard)), clock.signal);
      } catch (error) {
        failure = failureOf(error, clock, signal);
        if (signal?.aborted) throw failure;
      } finally {
        clock.end();
      }
      if (attempt < attempts) {
        const code = response && (await codeOf(response));
        // A backend that does not honour write conditions stays so: no retry helps.
        const retryable = (!response || TRANSIENT.has(response.status)) && code !== 'backend-unsafe';
        // Nothing was written after `contended`: any method may be sent again.
        const wait = pauseMs(attempt, response, code === 'contended');
        if (wait !== undefined && ((idempotent && retryable) || (response && code === 'contended'))) {
          if (init.retried && (!response || response.status >= 500)) init.retried.lost = true;
          await sleep(wait, signal);
          continue;
        }
      }
      if (!response) {
        if (failure instanceof RequestTimeoutError) throw failure;
        throw new BackendError(`request failed: ${String(failure)}`, true, { cause: failure });
      }
      return response;
    }
  }

  /**
   * A presigned request to the object store, retried on network errors, timeouts and 5xx (waiting
   * per a 503's Retry-After); the answer is handed to `read` under the same clock, which each chunk
   * restarts. An upload's clock allows 1 s more per MiB sent.
   */
  async function direct<T = void>(
    request: { method: string; url: string; headers: Readonly<Record<string, string>> },
    o: { body?: Uint8Array; call?: CallOptions | undefined; download?: boolean },
    read: (response: Response, clock: Attempt) => Promise<T> = async (response) => {
      await response.arrayBuffer();
      return undefined as T;
    },
  ): Promise<T> {
    const signal = o.call?.signal;
    signal?.throwIfAborted();
    const send = o.download ? downloadFetch : doFetch;
    const ms = o.call?.timeoutMs ?? timeoutMs;
    const limit = ms > 0 ? ms + Math.ceil((o.body?.byteLength ?? 0) / MIB) * 1000 : 0;
    const what = `object store ${request.method}`;
    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined;
      let failure: unknown;
      const clock = startAttempt(signal, limit, what);
      let wait: number | undefined;
      try {
        try {
          const answer = send(request.url, {
            method: request.method,
            headers: { ...request.headers },
            body: o.body,
            signal: clock.signal,
          });
          response = await race(answer, clock.signal, discard);
        } catch (error) {
          failure = failureOf(error, clock, signal);
          if (signal?.aborted) throw failure;
        }
        wait = pauseMs(attempt, response);
        if (response && (response.ok || response.status < 500 || attempt >= attempts || wait === undefined)) {
          if (!response.ok) {
            const text = await race(response.text(), clock.signal);
            const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? `HTTP ${response.status}`;
            throw tagged(
              new BackendError(`object store refused the ${request.method}: ${code}`, response.status >= 500),
              response,
            );
          }
          return await read(response, clock);
        }
        await discard(response);
      } catch (error) {
        throw failureOf(error, clock, signal);
      } finally {
        clock.end();
      }
      if (!response && attempt >= attempts) {
        if (failure instanceof RequestTimeoutError) throw failure;
        throw new BackendError(`object store request failed: ${String(failure)}`, true, { cause: failure });
      }
      await sleep(wait ?? 0, signal);
    }
  }

  /**
   * Raises the typed error of an answer that is not a success: the protocol's table for its problem
   * code, else one for its status (API Gateway's own answers carry only {"message": ...}).
   */
  async function fail(response: Response): Promise<never> {
    if (response.status < 400)
      throw tagged(new ProtocolError(`unexpected ${response.status} answer`, response.status), response);
    throw problemError(response.status, await response.json().catch(() => undefined), requestIdOf(response));
  }

  // `paths` checks ids as the library checks them (an id with a lone surrogate cannot even be encoded).
  const fence = (o: WriteOptions | undefined): Record<string, string> =>
    o?.token === undefined ? {} : { [HEADER_NAMES.fencingToken]: String(o.token) };
  const conditions = (o: SaveOptions): Record<string, string> => ({
    ...fence(o),
    ...(o.ifVersion !== undefined ? { [HEADER_NAMES.ifMatch]: `"${o.ifVersion}"` } : {}),
    ...(o.ifAbsent ? { [HEADER_NAMES.ifNoneMatch]: '*' } : {}),
  });
  const leaseHeaders = (lease: LeaseRef) => ({
    [HEADER_NAMES.lockOwner]: lease.owner,
    [HEADER_NAMES.fencingToken]: String(lease.token),
  });
  const leaseOf = (lease: z.output<typeof schemas.Lease>): Lease => ({
    ...lease,
    expiresAt: new Date(lease.expiresAt),
  });
  const listName = (sessionId: string, key: string) => `${sessionId}\u0000${key}`;
  const remember = (sessionId: string, key: string, r: { count: number; hash: string }) =>
    known.set(listName(sessionId, key), { count: r.count, hash: r.hash });

  async function getVersioned<T>(
    sessionId: string,
    key: string,
    o?: CallOptions,
  ): Promise<Versioned<T> | undefined> {
    const response = await call('GET', paths.value(sessionId, key), { call: o });
    if (response.status === 404) return undefined;
    if (response.status === 202) throw tagged(new RestoreInProgressError(`value ${key}`), response);
    if (response.status === 303) {
      const located = await bodyOf(response, schemas.ValueLocation, 'get');
      const bytes = await direct(located.download, { call: o }, async (answer, clock) => {
        const chunks: Uint8Array[] = [];
        for await (const chunk of chunksOf(answer, clock)) chunks.push(chunk);
        return Buffer.concat(chunks);
      });
      return { value: JSON.parse(bytes.toString('utf8')) as T, version: located.etag };
    }
    if (response.status !== 200) return fail(response);
    const etag = /^"([^"]*)"$/.exec(response.headers.get('etag') ?? '')?.[1];
    if (etag === undefined)
      throw tagged(new ProtocolError('get: the 200 answer has no strong ETag', response.status), response);
    const version = etag;
    // Any JSON value is a value: the schema only checks that the answer is JSON.
    return { value: (await bodyOf(response, schemas.Value, 'get')) as T, version };
  }

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

  /** A page without its request id. */
  const pageOnly = <T>({ requestId: _, ...page }: PageRead<T>): ListPage<T> => page;

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

  /**
   * One logical append: one `Idempotency-Key` on every attempt, retried after a lost answer. A 409
   * `append-conflict` reporting exactly the count and hash this append makes from its base (the
   * `expectedHash`, or the hash known for `expectedCount`) is this append having landed; so is the
   * `unchanged` the store answers a replay with, after a lost answer. Either is reported as the
   * first answer would have been: `created` (from 0 items) or `appended`.
   */
  async function appendList(
    sessionId: string,
    key: string,
    items: readonly unknown[],
    o: AppendOptions & CallOptions,
  ): Promise<ListWriteResult> {
    const last = known.get(listName(sessionId, key));
    const baseHash =
      o.expectedHash ??
      (o.expectedCount === 0 ? EMPTY_HASH : last?.count === o.expectedCount ? last.hash : undefined);
    const retried = { lost: false };
    const response = await call('POST', paths.listItems(sessionId, key), {
      body: {
        items,
        expectedCount: o.expectedCount,
        ...(o.expectedHash ? { expectedHash: o.expectedHash } : {}),
      },
      headers: { ...fence(o), [HEADER_NAMES.idempotencyKey]: o.writeId ?? randomUUID() },
      // A lost answer is retried only where the outcome can be checked: from a known base hash.
      idempotent: baseHash !== undefined,
      call: o,
      retried,
    });
    if (response.status !== 200) {
      if (response.status !== 409) return fail(response);
      known.delete(listName(sessionId, key));
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
        remember(sessionId, key, landed);
        return landed;
      }
      // After a lost answer, another writer may have appended behind this append: it landed if
      // its items are where it put them (a conflict would otherwise claim nothing was written).
      if (retried.lost && conflict.count > o.expectedCount) {
        const at = await readPage(
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
    remember(sessionId, key, result);
    return result;
  }

  const workspaceOf = (x: z.output<typeof schemas.Workspace>): WorkspaceInfo => ({
    ...x,
    lastModified: new Date(x.lastModified),
  });

  async function createValueUpload(
    sessionId: string,
    key: string,
    request: { size: number; md5: string },
    o?: CallOptions,
  ) {
    const response = await call('POST', paths.valueUploads(sessionId, key), { body: request, call: o });
    if (response.status !== 201) return fail(response);
    const started = await bodyOf(response, schemas.ValueUpload, 'createValueUpload');
    return { ...started, expiresAt: new Date(started.expiresAt) };
  }

  async function commitValueUpload(
    sessionId: string,
    key: string,
    uploadId: string,
    o: SaveOptions & CallOptions = {},
  ) {
    const response = await call('POST', paths.valueUpload(sessionId, key, uploadId), {
      headers: conditions(o),
      call: o,
    });
    if (response.status === 404) throw tagged(new UploadNotFoundError(uploadId), response);
    if (response.status !== 200) return fail(response);
    return { version: (await bodyOf(response, schemas.Etag, 'commitValueUpload')).etag };
  }

  async function createWorkspaceUpload(
    sessionId: string,
    name: string,
    request: WorkspaceUploadRequest,
    o?: WriteOptions & CallOptions,
  ): Promise<WorkspaceUpload> {
    const response = await call('POST', paths.workspaceUploads(sessionId, name), {
      body: request,
      headers: fence(o),
      call: o,
    });
    if (response.status !== 201) return fail(response);
    const upload = await bodyOf(response, schemas.WorkspaceUpload, 'createWorkspaceUpload');
    return { ...upload, expiresAt: new Date(upload.expiresAt) };
  }

  async function completeWorkspaceUpload(
    sessionId: string,
    name: string,
    uploadId: string,
    o?: WriteOptions & CallOptions,
  ) {
    const response = await call('POST', paths.workspaceUpload(sessionId, name, uploadId), {
      headers: fence(o),
      call: o,
    });
    if (response.status === 404) throw tagged(new UploadNotFoundError(uploadId), response);
    if (response.status !== 200) return fail(response);
    return workspaceOf(await bodyOf(response, schemas.Workspace, 'completeWorkspaceUpload'));
  }

  async function getWorkspace(
    sessionId: string,
    name: string,
    o?: CallOptions,
  ): Promise<WorkspaceDownload | undefined> {
    const response = await call('GET', paths.workspace(sessionId, name), { call: o });
    if (response.status === 404) return undefined;
    if (response.status === 202) {
      const {
        status: _,
        detail: __,
        ...info
      } = await bodyOf(response, schemas.WorkspaceRestoring, 'getWorkspace');
      return { ...workspaceOf(info), status: 'restoring' };
    }
    if (response.status !== 200) return fail(response);
    const {
      status: _,
      download,
      expiresAt,
      ...info
    } = await bodyOf(response, schemas.WorkspaceDownload, 'getWorkspace');
    return { ...workspaceOf(info), status: 'ready', download, expiresAt: new Date(expiresAt) };
  }

  /**
   * Uploads a body from a source straight to the object store: one PUT, or parts (at most 1,000,
   * so parts grow with the body) sent `concurrency` at a time, each retried; then completes.
   */
  async function uploadSource(sessionId: string, name: string, source: Source, o: UploadWorkspaceOptions) {
    const signal = o.signal;
    const stored = {
      size: source.size,
      contentEncoding: o.encoding ?? 'gzip',
      ...(o.storageClass ? { storageClass: o.storageClass } : {}),
      ...(o.contentType ? { contentType: o.contentType } : {}),
    };
    const total = source.size;
    let done = 0;
    if (source.size <= (o.multipartAboveBytes ?? 16 * MIB)) {
      const body = await source.read(0, source.size);
      const started = await createWorkspaceUpload(
        sessionId,
        name,
        { ...stored, md5: md5Base64(body), sha256: sha256Base64(body) },
        o,
      );
      if (!started.upload) throw new ProtocolError('createWorkspaceUpload: no upload in the answer', 201);
      o.onProgress?.(0, total);
      await direct(started.upload, { body, call: o });
      o.onProgress?.(total, total);
      return completeWorkspaceUpload(sessionId, name, started.uploadId, o);
    }
    const partBytes = Math.max(
      MIN_PART_BYTES,
      o.partBytes ?? 8 * MIB,
      Math.ceil(source.size / MAX_UPLOAD_PARTS),
    );
    const parts: Array<{ offset: number; size: number; md5: string }> = [];
    for (let offset = 0; offset < source.size; offset += partBytes) {
      signal?.throwIfAborted();
      const size = Math.min(partBytes, source.size - offset);
      parts.push({ offset, size, md5: md5Base64(await source.read(offset, size)) });
    }
    const started = await createWorkspaceUpload(
      sessionId,
      name,
      { ...stored, parts: parts.map((p) => ({ size: p.size, md5: p.md5 })) },
      o,
    );
    const urls = started.parts ?? [];
    if (urls.length !== parts.length)
      throw new ProtocolError(
        `createWorkspaceUpload: ${urls.length} part URLs for ${parts.length} parts`,
        201,
      );
    o.onProgress?.(0, total);
    let next = 0;
    // The first part to fail stops the others: none starts, and those in flight are aborted.
    const stop = new AbortController();
    const partCall = { ...o, signal: signal ? AbortSignal.any([signal, stop.signal]) : stop.signal };
    const worker = async () => {
      while (next < urls.length && !stop.signal.aborted) {
        const i = next++;
        const part = parts[i] as (typeof parts)[number];
        try {
          partCall.signal.throwIfAborted();
          const body = await source.read(part.offset, part.size);
          await direct(urls[i] as (typeof urls)[number], { body, call: partCall });
        } catch (error) {
          stop.abort(error);
          throw error;
        }
        done += part.size;
        o.onProgress?.(done, total);
      }
    };
    await abortable(signal, async () => {
      await Promise.all(Array.from({ length: Math.max(1, o.concurrency ?? 4) }, worker));
    });
    return completeWorkspaceUpload(sessionId, name, started.uploadId, o);
  }

  /**
   * Streams a workspace straight from the object store into `consume` (given the stored bytes and
   * the encoding to undo, none when fetch already decoded them), counting progress in stored bytes;
   * undefined when there is no such workspace, `RestoreInProgressError` while archived.
   */
  async function download<T>(
    sessionId: string,
    name: string,
    o: DownloadWorkspaceOptions,
    consume: (body: AsyncIterable<Uint8Array>, encoding: string | undefined, clock: Attempt) => Promise<T>,
  ): Promise<T | undefined> {
    const found = await getWorkspace(sessionId, name, o);
    if (!found) return undefined;
    if (found.status === 'restoring') throw new RestoreInProgressError(`workspace ${name}`);
    return direct(found.download, { call: o, download: true }, async (response, clock) => {
      // Only fetch decodes (node:http hands over the bytes as stored).
      const decoded = options.fetch !== undefined && response.headers.has('content-encoding');
      const total = found.size;
      let done = 0;
      o.onProgress?.(0, total);
      const progress = o.onProgress;
      async function* counted() {
        for await (const chunk of chunksOf(response, clock)) {
          done += chunk.byteLength;
          if (progress && !decoded && done < total) progress(done, total);
          yield chunk;
        }
      }
      const result = await consume(counted(), decoded ? undefined : found.contentEncoding, clock);
      if (total > 0) progress?.(total, total);
      return result;
    });
  }

  /** A page of a list or an archive, as the server answers it; undefined for a 404 when `absent` allows. */
  /** A snapshot answer as the client answers it (download times as Dates; what it read remembered). */
  function snapshotOf(sessionId: string, answer: z.output<typeof schemas.Snapshot>): Snapshot {
    for (const l of answer.lists) if (!('corrupt' in l)) remember(sessionId, l.key, l);
    return {
      exists: answer.exists,
      values: answer.values.map((v) => ('download' in v ? { ...v, expiresAt: new Date(v.expiresAt) } : v)),
      lists: answer.lists,
    };
  }

  async function readSnapshot(sessionId: string, request: SnapshotRequest, o?: CallOptions) {
    const response = await call('POST', paths.snapshot(sessionId), {
      body: { values: request.values, lists: request.lists },
      // A read: a lost answer is asked again.
      idempotent: true,
      call: o,
    });
    if (response.status !== 200) return fail(response);
    return snapshotOf(sessionId, await bodyOf(response, schemas.Snapshot, 'snapshot'));
  }

  /** Sends one commit body (a turn's, with its lease, or a lease-less one), retried by its id. */
  async function sendCommit(
    sessionId: string,
    body: Record<string, unknown>,
    o: CallOptions | undefined,
  ): Promise<TurnCommitResult> {
    const answer = await call('POST', paths.commits(sessionId), {
      body,
      // The commit id names this commit: a retry of one that landed answers it complete.
      idempotent: true,
      call: o,
    });
    if (answer.status !== 200) {
      const lists = (body.lists ?? []) as Array<{ key: string }>;
      if (answer.status === 409 || answer.status === 412)
        for (const l of lists) known.delete(listName(sessionId, l.key));
      return fail(answer);
    }
    const result = await bodyOf(answer, schemas.CommitResult, 'commit');
    for (const l of result.lists) remember(sessionId, l.key, l);
    return {
      commitId: result.commitId,
      values: result.values.map((v) =>
        v.etag === undefined ? { key: v.key } : { key: v.key, etag: v.etag },
      ),
      lists: result.lists,
      ...(result.lease ? { lease: 'released' in result.lease ? result.lease : leaseOf(result.lease) } : {}),
    } satisfies TurnCommitResult;
  }

  async function readPage<T>(
    path: string,
    query: PageOptions,
    o: CallOptions | undefined,
    archived?: string,
  ): Promise<PageRead<T> | undefined> {
    const { offset, limit, last } = query;
    const response = await call('GET', path, { query: { offset, limit, last }, call: o });
    if (archived !== undefined) {
      if (response.status === 404) return undefined;
      if (response.status === 202) throw tagged(new RestoreInProgressError(`archive ${archived}`), response);
    }
    if (response.status === 303 && archived === undefined) {
      // The page's first item alone is over the answer cap: it is read from where it is stored.
      const {
        download,
        size: _,
        expiresAt: __,
        ...page
      } = await bodyOf(response, schemas.ListItemLocation, 'getList');
      const bytes = await direct(download, { call: o }, async (answer, clock) => {
        const chunks: Uint8Array[] = [];
        for await (const chunk of chunksOf(answer, clock)) chunks.push(chunk);
        return Buffer.concat(chunks);
      });
      const item = JSON.parse(bytes.toString('utf8')) as T;
      return { ...page, items: [item], requestId: requestIdOf(response) };
    }
    if (response.status !== 200) return fail(response);
    const page = await bodyOf(response, schemas.ListPage, archived === undefined ? 'getList' : 'getArchive');
    return { ...(page as ListPage<T>), requestId: requestIdOf(response) };
  }

  return {
    createValueUpload,
    commitValueUpload,
    createWorkspaceUpload,
    completeWorkspaceUpload,
    getWorkspace,
    async locateListItem(sessionId, key, n, o) {
      const response = await call('GET', paths.list(sessionId, key), {
        query: { offset: n, limit: 1 },
        call: o,
      });
      if (response.status === 200) {
        await response.body?.cancel();
        return undefined;
      }
      if (response.status !== 303) return fail(response);
      const located = await bodyOf(response, schemas.ListItemLocation, 'locateListItem');
      return { download: located.download, size: located.size, expiresAt: new Date(located.expiresAt) };
    },
    async locateValue(sessionId, key, o) {
      const response = await call('GET', paths.value(sessionId, key), { call: o });
      if (response.status === 404) return undefined;
      if (response.status === 202) throw tagged(new RestoreInProgressError(`value ${key}`), response);
      if (response.status !== 303) {
        if (response.status !== 200) return fail(response);
        await response.body?.cancel();
        throw tagged(new ValidationError('key', 'the value is small enough to be read with get'), response);
      }
      const located = await bodyOf(response, schemas.ValueLocation, 'locateValue');
      return {
        download: located.download,
        version: located.etag,
        size: located.size,
        expiresAt: new Date(located.expiresAt),
      };
    },
    async listWorkspaces(sessionId, o) {
      const response = await call('GET', paths.workspaces(sessionId), { call: o });
      if (response.status !== 200) return fail(response);
      return (await bodyOf(response, schemas.Workspaces, 'listWorkspaces')).workspaces.map(workspaceOf);
    },
    async deleteWorkspace(sessionId, name, o) {
      const response = await call('DELETE', paths.workspace(sessionId, name), { headers: fence(o), call: o });
      if (response.status !== 204) await fail(response);
    },
    async uploadWorkspace(sessionId, name, data, o = {}) {
      o.signal?.throwIfAborted();
      const body = encodeBody(data, o.encoding ?? 'gzip');
      return uploadSource(sessionId, name, bytesSource(body), o);
    },
    async uploadWorkspaceFile(sessionId, name, file, o = {}) {
      const encoding = o.encoding ?? 'gzip';
      return abortable(o.signal, async () => {
        // Compressed into a temporary file first: every part's size and MD5 are declared up front.
        const dir = encoding === 'identity' ? undefined : await mkdtemp(path.join(tmpdir(), 'workspace-'));
        const stored = dir ? path.join(dir, 'body') : file;
        try {
          if (dir) {
            const compress = encoding === 'gzip' ? createGzip() : createBrotliCompress();
            await pipeline(createReadStream(file), compress, createWriteStream(stored), {
              ...(o.signal ? { signal: o.signal } : {}),
            });
          }
          const handle = await open(stored, 'r');
          try {
            return await uploadSource(sessionId, name, await fileSource(handle), o);
          } finally {
            await handle.close();
          }
        } finally {
          if (dir) await rm(dir, { recursive: true, force: true });
        }
      });
    },
    async downloadWorkspace(sessionId, name, o = {}) {
      return download(sessionId, name, o, async (body, encoding) => {
        const chunks: Uint8Array[] = [];
        for await (const chunk of body) chunks.push(chunk);
        const bytes = new Uint8Array(Buffer.concat(chunks));
        return encoding ? decodeBody(bytes, encoding as ContentEncoding) : bytes;
      });
    },
    async downloadWorkspaceToFile(sessionId, name, file, o = {}) {
      const written = await download(sessionId, name, o, async (body, encoding, clock) => {
        const stream = Readable.from(body);
        const out = createWriteStream(file);
        const streams = { signal: clock.signal };
        if (!encoding || encoding === 'identity') await pipeline(stream, out, streams);
        else
          await pipeline(stream, encoding === 'br' ? createBrotliDecompress() : createGunzip(), out, streams);
        return true;
      });
      return written ?? false;
    },
    async get<T>(sessionId: string, key: string, o?: CallOptions) {
      return (await getVersioned<T>(sessionId, key, o))?.value;
    },
    getVersioned,
    async save(sessionId, key, value, o: SaveOptions & CallOptions = {}) {
      const text = JSON.stringify(value);
      if (text !== undefined && Buffer.byteLength(text) > bodyLimit - 1024) {
        // Too large for a request body: upload it straight to the store, then commit it as a save.
        const bytes = new Uint8Array(Buffer.from(text, 'utf8'));
        const started = await createValueUpload(
          sessionId,
          key,
          { size: bytes.length, md5: md5Base64(bytes) },
          o,
        );
        await direct(started.upload, { body: bytes, call: o });
        return commitValueUpload(sessionId, key, started.uploadId, o);
      }
      const retried = { lost: false };
      const response = await call('PUT', paths.value(sessionId, key), {
        body: value,
        headers: conditions(o),
        call: o,
        retried,
      });
      if (response.status === 412 && retried.lost) {
        // A conditional save whose answer was lost may have landed: then the value is ours.
        const now = await getVersioned(sessionId, key, o);
        if (now && canonicalJson(now.value) === canonicalJson(JSON.parse(text ?? 'null'))) {
          return { version: now.version };
        }
      }
      if (response.status !== 200) return fail(response);
      return { version: (await bodyOf(response, schemas.Etag, 'save')).etag };
    },
    async deleteKey(sessionId, key, o) {
      const response = await call('DELETE', paths.value(sessionId, key), { headers: fence(o), call: o });
      if (response.status !== 204) await fail(response);
    },
    async saveList(sessionId, key, items, o) {
      // When the client knows the list and the new one extends it, only the new items travel.
      const last = known.get(listName(sessionId, key));
      if (
        last &&
        items.length > last.count &&
        chainHash(EMPTY_HASH, items.slice(0, last.count)) === last.hash
      ) {
        try {
          const extra = items.slice(last.count);
          if (extra.length <= MAX_APPEND_ITEMS) {
            return await appendList(sessionId, key, extra, {
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
      const response = await call('PUT', paths.list(sessionId, key), {
        body: items,
        headers: { ...fence(o), ...(base === undefined ? {} : { [HEADER_NAMES.ifMatch]: `"${base}"` }) },
        call: o,
      });
      if (response.status !== 200) {
        known.delete(listName(sessionId, key));
        return fail(response);
      }
      const result: ListWriteResult = await bodyOf(response, schemas.ListWrite, 'saveList');
      remember(sessionId, key, result);
      return result;
    },
    appendList,
    async truncateList(sessionId, key, o) {
      const response = await call('POST', paths.listTruncate(sessionId, key), {
        body: { count: o.count, expectedHash: o.expectedHash },
        headers: { ...fence(o), [HEADER_NAMES.idempotencyKey]: o.writeId ?? randomUUID() },
        // The key names this truncate: a replay of one that landed answers its first answer.
        idempotent: true,
        call: o,
      });
      if (response.status !== 200) {
        if (response.status === 409 || response.status === 412) known.delete(listName(sessionId, key));
        return fail(response);
      }
      const result: ListWriteResult = await bodyOf(response, schemas.ListWrite, 'truncateList');
      remember(sessionId, key, result);
      return result;
    },
    async listKeys(sessionId, o = {}) {
      const response = await call('GET', paths.keys(sessionId), {
        query: { prefix: o.prefix, startAfter: o.startAfter, limit: o.limit, cursor: o.cursor },
        call: o,
      });
      if (response.status === 404) {
        // The route's 404 is an absent session; a server without the route answers another one.
        const error: unknown = await fail(response).catch((e: unknown) => e);
        if (error instanceof ProtocolError && error.message === SESSION_NOT_FOUND)
          throw tagged(new SessionNotFoundError(sessionId), error);
        throw error;
      }
      if (response.status !== 200) return fail(response);
      const page = await bodyOf(response, schemas.KeyPage, 'listKeys');
      return {
        values: page.values.map((v) => ({ ...v, lastModified: new Date(v.lastModified) })),
        lists: page.lists.map((l) => ({ ...l, lastModified: new Date(l.lastModified) })),
        ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
      } satisfies KeyPage;
    },
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
        (await readPage<T>(path, { offset, limit }, page)) as PageRead<T>;
      // `last` with `offset` or `limit` is the server's to refuse.
      if (page.limit !== undefined || (page.last !== undefined && page.offset !== undefined)) {
        const one = { offset: page.offset, limit: page.limit, last: page.last };
        const result = pageOnly((await readPage<T>(path, one, page)) as PageRead<T>);
        remember(sessionId, key, result);
        return result;
      }
      try {
        const changed = (attempts: number) => new ListChangedError(sessionId, key, attempts);
        if (page.last !== undefined) {
          const result = await readLast(
            async (query) => (await readPage<T>(path, query, page)) as PageRead<T>,
            page.last,
            changed,
          );
          remember(sessionId, key, result);
          return result;
        }
        const result = (await readWhole(read, page.offset ?? 0, changed)) as ListPage<T>;
        remember(sessionId, key, result);
        return result;
      } catch (error) {
        if (error instanceof ListChangedError) known.delete(listName(sessionId, key));
        throw error;
      }
    },
    async deleteList(sessionId, key, o) {
      const response = await call('DELETE', paths.list(sessionId, key), { headers: fence(o), call: o });
      known.delete(listName(sessionId, key));
      if (response.status !== 204) await fail(response);
    },
    async listArchives(sessionId, key, o) {
      const response = await call('GET', paths.archives(sessionId, key), { call: o });
      if (response.status !== 200) return fail(response);
      const { archives } = await bodyOf(response, schemas.Archives, 'listArchives');
      return archives.map((a): ArchiveInfo => ({ ...a, archivedAt: new Date(a.archivedAt) }));
    },
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
        readPage<T>(path, { offset, limit }, page, archiveId);
      if (page.limit !== undefined || page.last !== undefined) {
        const one = { offset: page.offset, limit: page.limit, last: page.last };
        const result = await readPage<T>(path, one, page, archiveId);
        return result && pageOnly(result);
      }
      return readWhole(
        read,
        page.offset ?? 0,
        (attempts) => new ListChangedError(sessionId, key, attempts, archiveId),
      );
    },
    async exists(sessionId, o) {
      const response = await call('HEAD', paths.session(sessionId), { call: o });
      if (response.status === 404) return false;
      if (response.status !== 200) return fail(response);
      return true;
    },
    async delete(sessionId, o) {
      const response = await call('DELETE', paths.session(sessionId), { headers: fence(o), call: o });
      for (const name of known.keys()) if (name.startsWith(`${sessionId}\u0000`)) known.delete(name);
      if (response.status !== 204) await fail(response);
    },
    async deleteAllSessions(o) {
      const response = await call('DELETE', paths.sessions(), { query: { all: 'true' }, call: o });
      known.clear();
      if (response.status !== 204) await fail(response);
    },
    async listSessionIds(o = {}) {
      const response = await call('GET', paths.sessions(), {
        query: { limit: o.limit, cursor: o.cursor },
        call: o,
      });
      if (response.status !== 200) return fail(response);
      const page = await bodyOf(response, schemas.SessionPage, 'listSessionIds');
      return {
        sessions: page.sessions.map((x) => ({
          sessionId: x.sessionId,
          lastActivity: new Date(x.lastActivity),
        })),
        nextCursor: page.nextCursor,
      } satisfies SessionPage;
    },
    snapshot: (sessionId, request, o) => readSnapshot(sessionId, request, o),
    async commit(sessionId, request, o) {
      const { lease: _lease, ...result } = await sendCommit(
        sessionId,
        {
          commitId: request.commitId,
          token: request.token,
          values: request.values,
          lists: request.lists,
        },
        o,
      );
      return result satisfies CommitResult;
    },
    async beginTurn(sessionId, o) {
      const response = await call('POST', paths.turns(sessionId), {
        body: { leaseMs: o.leaseMs, waitMs: o.waitMs, owner: o.owner, values: o.values, lists: o.lists },
        call: o,
        extraMs: o.waitMs ?? 0,
      });
      if (response.status !== 201) return fail(response);
      const { lease, ...snapshot } = await bodyOf(response, schemas.Turn, 'beginTurn');
      const read = snapshotOf(sessionId, snapshot);
      // An absent session has no data: every key the turn asked for is absent, every list empty.
      const seen = read.exists
        ? read
        : {
            exists: false,
            values: (o.values ?? []).map((key) => ({ key, absent: true as const })),
            lists: (o.lists ?? []).map(({ key }) => ({
              key,
              items: [],
              count: 0,
              hash: EMPTY_HASH,
              offset: 0,
              baseHash: EMPTY_HASH,
            })),
          };
      return new Turn(sessionId, leaseOf(lease), seen, {
        commitId: () => randomUUID(),
        read: (key) => getVersioned(sessionId, key, callOf(o)).then((v) => v?.value),
        send: (body) => sendCommit(sessionId, body, callOf(o)),
      });
    },
    async acquireLock(sessionId, o = {}) {
      const response = await call('POST', paths.lock(sessionId), {
        body: { leaseMs: o.leaseMs, waitMs: o.waitMs, owner: o.owner },
        call: o,
        extraMs: o.waitMs ?? 0,
      });
      if (response.status !== 200) return fail(response);
      return leaseOf(await bodyOf(response, schemas.Lease, 'acquireLock'));
    },
    async renewLock(sessionId, lease, o = {}) {
      const response = await call('PUT', paths.lock(sessionId), {
        body: { leaseMs: o.leaseMs },
        headers: leaseHeaders(lease),
        call: o,
      });
      if (response.status !== 200) return fail(response);
      return leaseOf(await bodyOf(response, schemas.Lease, 'renewLock'));
    },
    async releaseLock(sessionId, lease, o) {
      const response = await call('DELETE', paths.lock(sessionId), { headers: leaseHeaders(lease), call: o });
      if (response.status !== 204) await fail(response);
    },
  };
}
