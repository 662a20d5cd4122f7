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
 */

import { createReadStream, createWriteStream } from 'node:fs';
import { type FileHandle, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliCompress, createBrotliDecompress, createGunzip, createGzip } from 'node:zlib';
import type * as z from 'zod/mini';
import type { Lease } from '../lock/types.js';
import { PayloadTooLargeError, ProtocolError } from '../protocol/errors.js';
import { paths } from '../protocol/paths.js';
import { problemCodeOf, problemError } from '../protocol/problems.js';
import { HEADER_NAMES, REQUEST_ID_HEADER, schemas } from '../protocol/schemas.js';
import { type ContentEncoding, decodeBody, encodeBody, md5Base64, sha256Base64 } from '../store/encoding.js';
import {
  AppendConflictError,
  BackendError,
  RestoreInProgressError,
  StoreError,
  UploadNotFoundError,
  ValidationError,
} from '../store/errors.js';
import { chainHash, EMPTY_HASH } from '../store/hash.js';
import { MAX_APPEND_ITEMS, MAX_UPLOAD_PARTS, MIN_PART_BYTES } from '../store/limits.js';
import type {
  AppendOptions,
  ArchiveInfo,
  ListPage,
  ListWriteResult,
  PageOptions,
  SaveOptions,
  SessionPage,
  SessionStore,
  StorageTier,
  Versioned,
  WorkspaceDownload,
  WorkspaceInfo,
  WorkspaceUpload,
  WriteOptions,
} from '../store/types.js';

export { PayloadTooLargeError, ProtocolError, UnauthorizedError } from '../protocol/errors.js';

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
   * Attempts of a call: of an idempotent one (GET, HEAD, PUT, DELETE) after a network error or a
   * 429/5xx, of any one answered 409 `contended` (nothing was written); default 4.
   */
  readonly attempts?: number;
  /** The fetch to use; default the global one. */
  readonly fetch?: typeof fetch;
  /**
   * Largest request body the API takes (its `BODY_LIMIT_BYTES`); a larger value is uploaded
   * directly and committed. Default 4 MiB.
   */
  readonly bodyLimitBytes?: number;
}

/** Options of `uploadWorkspace`. */
export interface UploadWorkspaceOptions extends WriteOptions {
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
}

/** The client: the user's `SessionStore` plus the lock. */
export interface HttpSessionStore extends SessionStore {
  acquireLock(
    sessionId: string,
    options?: { leaseMs?: number; waitMs?: number; owner?: string },
  ): Promise<Lease>;
  renewLock(
    sessionId: string,
    lease: { owner: string; token: number },
    options?: { leaseMs?: number },
  ): Promise<Lease>;
  releaseLock(sessionId: string, lease: { owner: string; token: number }): Promise<void>;
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
  downloadWorkspace(sessionId: string, name: string): Promise<Uint8Array | undefined>;
  /** The same into a file, streamed; false when there is no such workspace. */
  downloadWorkspaceToFile(sessionId: string, name: string, file: string): Promise<boolean>;
}

const MIB = 1024 * 1024;

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);
const TRANSIENT = new Set([429, 500, 502, 503, 504]);
/** Longest wait before a retry (backoff or Retry-After). */
const MAX_PAUSE_MS = 2000;
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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Jittered exponential backoff before attempt `attempt + 1`. */
const pause = (attempt: number) => sleep(Math.random() * Math.min(MAX_PAUSE_MS, 100 * 2 ** attempt));

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

/** The wait its Retry-After (seconds) asks for, capped and jittered down to half; else the backoff. */
function retryAfterPause(response: Response, attempt: number) {
  const seconds = Number(response.headers.get('retry-after') ?? Number.NaN);
  if (!(seconds >= 0)) return pause(attempt);
  return sleep(Math.min(MAX_PAUSE_MS, seconds * 1000) * (0.5 + Math.random() / 2));
}

/** Creates the client. */
export function createHttpClient(options: HttpClientOptions): HttpSessionStore {
  const base = options.baseUrl.replace(/\/+$/, '');
  const attempts = options.attempts ?? 4;
  const doFetch = options.fetch ?? fetch;
  const bodyLimit = options.bodyLimitBytes ?? 4 * MIB;
  /** What the client knows of each list: count and hash after its last write or read. */
  const known = new Map<string, { count: number; hash: string }>();

  async function call(
    method: string,
    path: string,
    init: {
      body?: unknown;
      headers?: Record<string, string>;
      query?: Record<string, string | number | undefined>;
    } = {},
  ): Promise<Response> {
    const query = Object.entries(init.query ?? {}).filter(([, v]) => v !== undefined);
    const url = `${base}${path}${query.length > 0 ? `?${new URLSearchParams(query.map(([k, v]): [string, string] => [k, String(v)]))}` : ''}`;
    const token = typeof options.token === 'function' ? await options.token() : options.token;
    const headers: Record<string, string> = { ...init.headers };
    if (token) headers.authorization = `Bearer ${token}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined;
      let failure: unknown;
      try {
        // A 303 (a value too large for an answer) is followed by hand, without the Authorization.
        response = await doFetch(url, { method, headers, body, redirect: 'manual' });
      } catch (error) {
        failure = error;
      }
      if (attempt < attempts) {
        const code = response && (await codeOf(response));
        // A backend that does not honour write conditions stays so: no retry helps.
        const retryable = (!response || TRANSIENT.has(response.status)) && code !== 'backend-unsafe';
        if (IDEMPOTENT.has(method) && retryable) {
          await response?.body?.cancel();
          await pause(attempt);
          continue;
        }
        // Nothing was written: any method may be sent again.
        if (response && code === 'contended') {
          await response.body?.cancel();
          await retryAfterPause(response, attempt);
          continue;
        }
      }
      if (!response) throw new BackendError(`request failed: ${String(failure)}`, true, { cause: failure });
      return response;
    }
  }

  /** A presigned request to the object store, retried on network errors and 5xx. */
  async function direct(
    request: { method: string; url: string; headers: Readonly<Record<string, string>> },
    body?: Uint8Array,
  ): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined;
      let failure: unknown;
      try {
        response = await doFetch(request.url, { method: request.method, headers: request.headers, body });
      } catch (error) {
        failure = error;
      }
      if (response && (response.ok || response.status < 500 || attempt >= attempts)) {
        if (!response.ok) {
          const text = await response.text();
          const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? `HTTP ${response.status}`;
          throw tagged(
            new BackendError(`object store refused the ${request.method}: ${code}`, response.status >= 500),
            response,
          );
        }
        return response;
      }
      await response?.body?.cancel();
      if (!response && attempt >= attempts)
        throw new BackendError(`object store request failed: ${String(failure)}`, true, { cause: failure });
      await pause(attempt);
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
  const leaseHeaders = (lease: { owner: string; token: number }) => ({
    [HEADER_NAMES.lockOwner]: lease.owner,
    [HEADER_NAMES.fencingToken]: String(lease.token),
  });
  const leaseOf = (lease: z.output<typeof schemas.Lease>): Lease => ({
    ...lease,
    expiresAt: new Date(lease.expiresAt),
  });
  const remember = (sessionId: string, key: string, r: { count: number; hash: string }) =>
    known.set(`${sessionId}\u0000${key}`, { count: r.count, hash: r.hash });

  async function getVersioned<T>(sessionId: string, key: string): Promise<Versioned<T> | undefined> {
    const response = await call('GET', paths.value(sessionId, key));
    if (response.status === 404) return undefined;
    if (response.status === 202) throw tagged(new RestoreInProgressError(`value ${key}`), response);
    if (response.status === 303) {
      const located = await bodyOf(response, schemas.ValueLocation, 'get');
      const value = (await (await direct(located.download)).json()) as T;
      return { value, version: located.etag };
    }
    if (response.status !== 200) return fail(response);
    const version = (response.headers.get('etag') ?? '').replace(/^"(.*)"$/, '$1');
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
      if (items.length === count && chainHash(EMPTY_HASH, items) === hash)
        return { items: offset === 0 ? items : items.slice(offset), count, hash };
      if (attempt > LIST_READ_RESTARTS) throw tagged(changed(attempt), last);
    }
  }

  /** A page without its request id. */
  const pageOnly = <T>({ items, count, hash }: PageRead<T>): ListPage<T> => ({ items, count, hash });

  async function appendList(sessionId: string, key: string, items: readonly unknown[], o: AppendOptions) {
    const response = await call('POST', paths.listItems(sessionId, key), {
      body: {
        items,
        expectedCount: o.expectedCount,
        ...(o.expectedHash ? { expectedHash: o.expectedHash } : {}),
      },
      headers: fence(o),
    });
    if (response.status !== 200) {
      if (response.status === 409) known.delete(`${sessionId}\u0000${key}`);
      return fail(response);
    }
    const result: ListWriteResult = await bodyOf(response, schemas.ListWrite, 'appendList');
    remember(sessionId, key, result);
    return result;
  }

  const workspaceOf = (x: z.output<typeof schemas.Workspace>): WorkspaceInfo => ({
    ...x,
    lastModified: new Date(x.lastModified),
  });

  async function createValueUpload(sessionId: string, key: string, request: { size: number; md5: string }) {
    const response = await call('POST', paths.valueUploads(sessionId, key), { body: request });
    if (response.status !== 201) return fail(response);
    const started = await bodyOf(response, schemas.ValueUpload, 'createValueUpload');
    return { ...started, expiresAt: new Date(started.expiresAt) };
  }

  async function commitValueUpload(sessionId: string, key: string, uploadId: string, o: SaveOptions = {}) {
    const response = await call('POST', paths.valueUpload(sessionId, key, uploadId), {
      headers: conditions(o),
    });
    if (response.status === 404) throw tagged(new UploadNotFoundError(uploadId), response);
    if (response.status !== 200) return fail(response);
    return { version: (await bodyOf(response, schemas.Etag, 'commitValueUpload')).etag };
  }

  async function createWorkspaceUpload(
    sessionId: string,
    name: string,
    request: Parameters<SessionStore['createWorkspaceUpload']>[2],
    o?: WriteOptions,
  ): Promise<WorkspaceUpload> {
    const response = await call('POST', paths.workspaceUploads(sessionId, name), {
      body: request,
      headers: fence(o),
    });
    if (response.status !== 201) return fail(response);
    const upload = await bodyOf(response, schemas.WorkspaceUpload, 'createWorkspaceUpload');
    return { ...upload, expiresAt: new Date(upload.expiresAt) };
  }

  async function completeWorkspaceUpload(
    sessionId: string,
    name: string,
    uploadId: string,
    o?: WriteOptions,
  ) {
    const response = await call('POST', paths.workspaceUpload(sessionId, name, uploadId), {
      headers: fence(o),
    });
    if (response.status === 404) throw tagged(new UploadNotFoundError(uploadId), response);
    if (response.status !== 200) return fail(response);
    return workspaceOf(await bodyOf(response, schemas.Workspace, 'completeWorkspaceUpload'));
  }

  async function getWorkspace(sessionId: string, name: string): Promise<WorkspaceDownload | undefined> {
    const response = await call('GET', paths.workspace(sessionId, name));
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
    const stored = {
      size: source.size,
      contentEncoding: o.encoding ?? 'gzip',
      ...(o.storageClass ? { storageClass: o.storageClass } : {}),
      ...(o.contentType ? { contentType: o.contentType } : {}),
    };
    if (source.size <= (o.multipartAboveBytes ?? 16 * MIB)) {
      const body = await source.read(0, source.size);
      const started = await createWorkspaceUpload(
        sessionId,
        name,
        { ...stored, md5: md5Base64(body), sha256: sha256Base64(body) },
        o,
      );
      if (!started.upload) throw new ProtocolError('createWorkspaceUpload: no upload in the answer', 201);
      await direct(started.upload, body);
      return completeWorkspaceUpload(sessionId, name, started.uploadId, o);
    }
    const partBytes = Math.max(
      MIN_PART_BYTES,
      o.partBytes ?? 8 * MIB,
      Math.ceil(source.size / MAX_UPLOAD_PARTS),
    );
    const parts: Array<{ offset: number; size: number; md5: string }> = [];
    for (let offset = 0; offset < source.size; offset += partBytes) {
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
    let next = 0;
    const worker = async () => {
      while (next < urls.length) {
        const i = next++;
        const part = parts[i] as (typeof parts)[number];
        await direct(urls[i] as (typeof urls)[number], await source.read(part.offset, part.size));
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, o.concurrency ?? 4) }, worker));
    return completeWorkspaceUpload(sessionId, name, started.uploadId, o);
  }

  /** The download of a workspace; undefined when absent; `RestoreInProgressError` while archived. */
  async function downloadResponse(sessionId: string, name: string) {
    const found = await getWorkspace(sessionId, name);
    if (!found) return undefined;
    if (found.status === 'restoring') throw new RestoreInProgressError(`workspace ${name}`);
    const response = await direct(found.download);
    return {
      response,
      decoded: response.headers.has('content-encoding'),
      contentEncoding: found.contentEncoding,
    };
  }

  /** A page of a list or an archive, as the server answers it; undefined for a 404 when `absent` allows. */
  async function readPage<T>(
    path: string,
    offset: number | undefined,
    limit: number | undefined,
    archived?: string,
  ): Promise<PageRead<T> | undefined> {
    const response = await call('GET', path, { query: { offset, limit } });
    if (archived !== undefined) {
      if (response.status === 404) return undefined;
      if (response.status === 202) throw tagged(new RestoreInProgressError(`archive ${archived}`), response);
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
    async locateValue(sessionId, key) {
      const response = await call('GET', paths.value(sessionId, key));
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
    async listWorkspaces(sessionId) {
      const response = await call('GET', paths.workspaces(sessionId));
      if (response.status !== 200) return fail(response);
      return (await bodyOf(response, schemas.Workspaces, 'listWorkspaces')).workspaces.map(workspaceOf);
    },
    async deleteWorkspace(sessionId, name, o) {
      const response = await call('DELETE', paths.workspace(sessionId, name), { headers: fence(o) });
      if (response.status !== 204) await fail(response);
    },
    async uploadWorkspace(sessionId, name, data, o = {}) {
      const body = encodeBody(data, o.encoding ?? 'gzip');
      return uploadSource(sessionId, name, bytesSource(body), o);
    },
    async uploadWorkspaceFile(sessionId, name, file, o = {}) {
      const encoding = o.encoding ?? 'gzip';
      // Compressed into a temporary file first: every part's size and MD5 are declared up front.
      const dir = encoding === 'identity' ? undefined : await mkdtemp(path.join(tmpdir(), 'workspace-'));
      const stored = dir ? path.join(dir, 'body') : file;
      try {
        if (dir) {
          const compress = encoding === 'gzip' ? createGzip() : createBrotliCompress();
          await pipeline(createReadStream(file), compress, createWriteStream(stored));
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
    },
    async downloadWorkspace(sessionId, name) {
      const response = await downloadResponse(sessionId, name);
      if (!response) return undefined;
      const bytes = new Uint8Array(await response.response.arrayBuffer());
      // fetch has already decoded a body served with its Content-Encoding.
      return response.decoded ? bytes : decodeBody(bytes, response.contentEncoding);
    },
    async downloadWorkspaceToFile(sessionId, name, file) {
      const found = await downloadResponse(sessionId, name);
      if (!found?.response.body) return false;
      const stream = Readable.fromWeb(found.response.body as import('node:stream/web').ReadableStream);
      const out = createWriteStream(file);
      if (found.decoded || !found.contentEncoding) await pipeline(stream, out);
      else
        await pipeline(
          stream,
          found.contentEncoding === 'br' ? createBrotliDecompress() : createGunzip(),
          out,
        );
      return true;
    },
    async get<T>(sessionId: string, key: string) {
      return (await getVersioned<T>(sessionId, key))?.value;
    },
    getVersioned,
    async save(sessionId, key, value, o: SaveOptions = {}) {
      const text = JSON.stringify(value);
      if (text !== undefined && Buffer.byteLength(text) > bodyLimit - 1024) {
        // Too large for a request body: upload it straight to the store, then commit it as a save.
        const bytes = new Uint8Array(Buffer.from(text, 'utf8'));
        const started = await createValueUpload(sessionId, key, {
          size: bytes.length,
          md5: md5Base64(bytes),
        });
        await direct(started.upload, bytes);
        return commitValueUpload(sessionId, key, started.uploadId, o);
      }
      const response = await call('PUT', paths.value(sessionId, key), {
        body: value,
        headers: conditions(o),
      });
      if (response.status !== 200) return fail(response);
      return { version: (await bodyOf(response, schemas.Etag, 'save')).etag };
    },
    async deleteKey(sessionId, key, o) {
      const response = await call('DELETE', paths.value(sessionId, key), { headers: fence(o) });
      if (response.status !== 204) await fail(response);
    },
    async saveList(sessionId, key, items, o) {
      // When the client knows the list and the new one extends it, only the new items travel.
      const last = known.get(`${sessionId}\u0000${key}`);
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
              ...o,
            });
          }
        } catch (error) {
          if (!(error instanceof AppendConflictError)) throw error;
        }
      }
      const response = await call('PUT', paths.list(sessionId, key), { body: items, headers: fence(o) });
      if (response.status !== 200) return fail(response);
      const result: ListWriteResult = await bodyOf(response, schemas.ListWrite, 'saveList');
      remember(sessionId, key, result);
      return result;
    },
    appendList,
    /**
     * Without `limit`, every item from `offset` (default 0) of one snapshot of the list, read a page
     * at a time when it is larger than an answer: a busy appender's later items are left out, a
     * rewrite meanwhile starts the read again, at most 3 times, then `ListChangedError`. With
     * `limit`, the page the server answers (cut to fit an answer). The count and hash are always
     * the whole list's.
     */
    async getList<T>(sessionId: string, key: string, page: PageOptions = {}) {
      const path = paths.list(sessionId, key);
      // Never undefined: a list read answers an absent list as empty.
      const read = async (offset: number | undefined, limit?: number) =>
        (await readPage<T>(path, offset, limit)) as PageRead<T>;
      if (page.limit !== undefined) {
        const result = pageOnly(await read(page.offset, page.limit));
        remember(sessionId, key, result);
        return result;
      }
      try {
        const result = (await readWhole(
          read,
          page.offset ?? 0,
          (attempts) => new ListChangedError(sessionId, key, attempts),
        )) as ListPage<T>;
        remember(sessionId, key, result);
        return result;
      } catch (error) {
        if (error instanceof ListChangedError) known.delete(`${sessionId}\u0000${key}`);
        throw error;
      }
    },
    async deleteList(sessionId, key, o) {
      const response = await call('DELETE', paths.list(sessionId, key), { headers: fence(o) });
      known.delete(`${sessionId}\u0000${key}`);
      if (response.status !== 204) await fail(response);
    },
    async listArchives(sessionId, key) {
      const response = await call('GET', paths.archives(sessionId, key));
      if (response.status !== 200) return fail(response);
      const { archives } = await bodyOf(response, schemas.Archives, 'listArchives');
      return archives.map((a): ArchiveInfo => ({ ...a, archivedAt: new Date(a.archivedAt) }));
    },
    /**
     * Without `limit`, every item from `offset` (default 0) of the archive, read and checked as
     * `getList` reads a list. With `limit`, the page the server answers (cut to fit an answer).
     */
    async getArchive<T>(sessionId: string, key: string, archiveId: string, page: PageOptions = {}) {
      const path = paths.archive(sessionId, key, archiveId);
      const read = (offset: number | undefined, limit?: number) =>
        readPage<T>(path, offset, limit, archiveId);
      if (page.limit !== undefined) {
        const result = await read(page.offset, page.limit);
        return result && pageOnly(result);
      }
      return readWhole(
        read,
        page.offset ?? 0,
        (attempts) => new ListChangedError(sessionId, key, attempts, archiveId),
      );
    },
    async exists(sessionId) {
      const response = await call('HEAD', paths.session(sessionId));
      if (response.status === 404) return false;
      if (response.status !== 200) return fail(response);
      return true;
    },
    async delete(sessionId, o) {
      const response = await call('DELETE', paths.session(sessionId), { headers: fence(o) });
      for (const name of known.keys()) if (name.startsWith(`${sessionId}\u0000`)) known.delete(name);
      if (response.status !== 204) await fail(response);
    },
    async deleteAllSessions() {
      const response = await call('DELETE', paths.sessions(), { query: { all: 'true' } });
      known.clear();
      if (response.status !== 204) await fail(response);
    },
    async listSessionIds(o = {}) {
      const response = await call('GET', paths.sessions(), { query: { limit: o.limit, cursor: o.cursor } });
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
    async acquireLock(sessionId, o = {}) {
      const response = await call('POST', paths.lock(sessionId), { body: o });
      if (response.status !== 200) return fail(response);
      return leaseOf(await bodyOf(response, schemas.Lease, 'acquireLock'));
    },
    async renewLock(sessionId, lease, o = {}) {
      const response = await call('PUT', paths.lock(sessionId), { body: o, headers: leaseHeaders(lease) });
      if (response.status !== 200) return fail(response);
      return leaseOf(await bodyOf(response, schemas.Lease, 'renewLock'));
    },
    async releaseLock(sessionId, lease) {
      const response = await call('DELETE', paths.lock(sessionId), { headers: leaseHeaders(lease) });
      if (response.status !== 204) await fail(response);
    },
  };
}
