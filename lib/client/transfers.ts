/**
 * Large state, which never goes through the API: workspaces are compressed here (gzip or brotli),
 * then uploaded straight to the object store with the presigned PUT or parts the API signs, and
 * downloaded the same way (streamed, counting progress in stored bytes); a value larger than a
 * request body is uploaded the same way and committed, and a value larger than an answer is located.
 */

import type * as z from 'zod/mini';
import {
  CorruptValueError,
  ProtocolError,
  RestoreInProgressError,
  UploadNotFoundError,
  ValidationError,
} from '../contract/errors.js';
import { MAX_UPLOAD_PARTS, MIN_PART_BYTES } from '../contract/limits.js';
import type {
  SaveOptions,
  WorkspaceDownload,
  WorkspaceInfo,
  WorkspaceUpload,
  WorkspaceUploadRequest,
  WriteOptions,
} from '../contract/types.js';
import { paths } from '../protocol/paths.js';
import { schemas } from '../protocol/schemas.js';
import { concatBytes } from '../util/bytes.js';
import { MIB } from '../util/units.js';
import { md5Base64, sha256Base64 } from '../util/web-encoding.js';
import {
  answered,
  bodyOf,
  chunksOf,
  conditions,
  fail,
  fence,
  hiddenRedirect,
  type Requests,
  tagged,
} from './requests.js';
import { decodeFetched, gunzip, type Source, type WorkspaceSource, webBody } from './sources.js';
import type { Attempt } from './transport.js';
import type { CallOptions, DownloadWorkspaceOptions, UploadWorkspaceOptions } from './types.js';

/**
 * What the transfers need of the runtime: the codecs of workspace bodies. These are the universal
 * ones (`CompressionStream`, gzip); the Node entry's (lib/client/node/) are zlib's, with brotli.
 */
export interface TransferCodecs {
  /** The body to upload: `data` in `encoding`, its size known, read a part at a time. */
  body(data: WorkspaceSource, encoding: string, signal: AbortSignal | undefined): Promise<Source>;
  /**
   * Decodes a downloaded body stored in `encoding`: `raw` when it is the bytes as stored, else
   * fetch downloaded it without showing a `Content-Encoding` (and may have decoded it).
   */
  decode(bytes: Uint8Array, encoding: string, raw: boolean, signal?: AbortSignal): Promise<Uint8Array>;
}

/** The codecs of every runtime. */
export const WEB_CODECS: TransferCodecs = {
  body: webBody,
  async decode(bytes, encoding, raw, signal) {
    if (!raw) return decodeFetched(bytes, encoding, signal);
    if (encoding === 'gzip') return gunzip(bytes, signal);
    if (encoding === 'br')
      throw new ValidationError('encoding', 'brotli bodies are decoded by agent-state-store/client/node');
    return bytes;
  },
};

/** Runs `work`; when the call was aborted meanwhile, rejects with the signal's reason instead. */
export async function abortable<T>(signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
  signal?.throwIfAborted();
  try {
    return await work();
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  }
}

const workspaceOf = (x: z.output<typeof schemas.Workspace>): WorkspaceInfo => ({
  ...x,
  lastModified: new Date(x.lastModified),
});

/** The direct transfers of the client: values too large for the API, and workspaces. */
export class Transfers {
  constructor(
    protected readonly requests: Requests,
    protected readonly codecs: TransferCodecs = WEB_CODECS,
  ) {}

  async createValueUpload(
    sessionId: string,
    key: string,
    request: { size: number; md5: string },
    o?: CallOptions,
  ) {
    const response = await this.requests.call('POST', paths.valueUploads(sessionId, key), {
      body: request,
      call: o,
    });
    if (response.status !== 201) return fail(response);
    const started = await bodyOf(response, schemas.ValueUpload, 'createValueUpload');
    return { ...started, expiresAt: new Date(started.expiresAt) };
  }

  async commitValueUpload(
    sessionId: string,
    key: string,
    uploadId: string,
    o: SaveOptions & CallOptions = {},
  ) {
    const response = await this.requests.call('POST', paths.valueUpload(sessionId, key, uploadId), {
      headers: conditions(o),
      call: o,
    });
    if (response.status === 404) throw await answered(new UploadNotFoundError(uploadId), response);
    if (response.status !== 200) return fail(response);
    const { etag, revision } = await bodyOf(response, schemas.Saved, 'commitValueUpload');
    return { version: etag, revision };
  }

  /** A value too large for a request body: uploaded straight to the store, then committed as a save. */
  async uploadValue(sessionId: string, key: string, bytes: Uint8Array, o: SaveOptions & CallOptions) {
    const started = await this.createValueUpload(
      sessionId,
      key,
      { size: bytes.length, md5: md5Base64(bytes) },
      o,
    );
    await this.requests.direct(started.upload, { body: bytes, call: o });
    return this.commitValueUpload(sessionId, key, started.uploadId, o);
  }

  /**
   * A value as a snapshot answers it (its value and version, or where a large one is stored), for
   * a runtime whose fetch hides the 303 a large value's read is answered with (a browser);
   * undefined when there is no such value.
   */
  async snapshotValue(sessionId: string, key: string, o?: CallOptions) {
    const response = await this.requests.call('POST', paths.snapshot(sessionId), {
      body: { values: [key], lists: [] },
      // A read: a lost answer is asked again.
      idempotent: true,
      call: o,
    });
    if (response.status !== 200) return fail(response);
    const entry = (await bodyOf(response, schemas.Snapshot, 'get')).values.find((v) => v.key === key);
    if (!entry || 'absent' in entry) return undefined;
    if ('corrupt' in entry) throw tagged(new CorruptValueError(key), response);
    return entry;
  }

  /** Where a value too large for an answer is stored; undefined when there is no such value. */
  async locateValue(sessionId: string, key: string, o?: CallOptions) {
    const response = await this.requests.call('GET', paths.value(sessionId, key), { call: o });
    if (response.status === 404) return undefined;
    if (response.status === 202) throw await answered(new RestoreInProgressError(`value ${key}`), response);
    const small = () =>
      tagged(new ValidationError('key', 'the value is small enough to be read with get'), response);
    // Where fetch hid the 303 (a browser), a snapshot names the value's location instead.
    const located = hiddenRedirect(response)
      ? await this.snapshotValue(sessionId, key, o)
      : response.status === 303
        ? await bodyOf(response, schemas.ValueLocation, 'locateValue')
        : undefined;
    if (!located) {
      if (hiddenRedirect(response)) return undefined;
      if (response.status !== 200) return fail(response);
      await response.body?.cancel();
      throw small();
    }
    if (!('download' in located)) throw small();
    return {
      download: located.download,
      version: located.etag,
      revision: located.revision,
      size: located.size,
      expiresAt: new Date(located.expiresAt),
    };
  }

  async createWorkspaceUpload(
    sessionId: string,
    name: string,
    request: WorkspaceUploadRequest,
    o?: WriteOptions & CallOptions,
  ): Promise<WorkspaceUpload> {
    const response = await this.requests.call('POST', paths.workspaceUploads(sessionId, name), {
      body: request,
      headers: fence(o),
      call: o,
    });
    if (response.status !== 201) return fail(response);
    const upload = await bodyOf(response, schemas.WorkspaceUpload, 'createWorkspaceUpload');
    return { ...upload, expiresAt: new Date(upload.expiresAt) };
  }

  async completeWorkspaceUpload(
    sessionId: string,
    name: string,
    uploadId: string,
    o?: WriteOptions & CallOptions,
  ) {
    const response = await this.requests.call('POST', paths.workspaceUpload(sessionId, name, uploadId), {
      headers: fence(o),
      call: o,
    });
    if (response.status === 404) throw await answered(new UploadNotFoundError(uploadId), response);
    if (response.status !== 200) return fail(response);
    return workspaceOf(await bodyOf(response, schemas.Workspace, 'completeWorkspaceUpload'));
  }

  async getWorkspace(
    sessionId: string,
    name: string,
    o?: CallOptions,
  ): Promise<WorkspaceDownload | undefined> {
    const response = await this.requests.call('GET', paths.workspace(sessionId, name), { call: o });
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

  async listWorkspaces(sessionId: string, o?: CallOptions): Promise<WorkspaceInfo[]> {
    const response = await this.requests.call('GET', paths.workspaces(sessionId), { call: o });
    if (response.status !== 200) return fail(response);
    return (await bodyOf(response, schemas.Workspaces, 'listWorkspaces')).workspaces.map(workspaceOf);
  }

  async deleteWorkspace(sessionId: string, name: string, o?: WriteOptions & CallOptions): Promise<void> {
    const response = await this.requests.call('DELETE', paths.workspace(sessionId, name), {
      headers: fence(o),
      call: o,
    });
    if (response.status !== 204) await fail(response);
  }

  /** Compresses the data here (`encoding`, default gzip), then uploads it (`uploadSource`). */
  async uploadWorkspace(
    sessionId: string,
    name: string,
    data: WorkspaceSource,
    o: UploadWorkspaceOptions = {},
  ) {
    const body = await abortable(o.signal, () => this.codecs.body(data, o.encoding ?? 'gzip', o.signal));
    return this.uploadSource(sessionId, name, body, o);
  }

  /**
   * Uploads a body from a source straight to the object store: one PUT, or parts (at most 1,000,
   * so parts grow with the body) sent `concurrency` at a time, each retried; then completes.
   */
  protected async uploadSource(
    sessionId: string,
    name: string,
    source: Source,
    o: UploadWorkspaceOptions & { readonly encoding?: string },
  ) {
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
      const started = await this.createWorkspaceUpload(
        sessionId,
        name,
        { ...stored, md5: md5Base64(body), sha256: sha256Base64(body) },
        o,
      );
      if (!started.upload) throw new ProtocolError('createWorkspaceUpload: no upload in the answer', 201);
      o.onProgress?.(0, total);
      await this.requests.direct(started.upload, { body, call: o });
      o.onProgress?.(total, total);
      return this.completeWorkspaceUpload(sessionId, name, started.uploadId, o);
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
    const started = await this.createWorkspaceUpload(
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
          await this.requests.direct(urls[i] as (typeof urls)[number], { body, call: partCall });
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
    return this.completeWorkspaceUpload(sessionId, name, started.uploadId, o);
  }

  async downloadWorkspace(sessionId: string, name: string, o: DownloadWorkspaceOptions = {}) {
    return this.download(sessionId, name, o, async (body, encoding, clock) => {
      const chunks: Uint8Array[] = [];
      for await (const chunk of body) chunks.push(chunk);
      const bytes = concatBytes(chunks);
      if (!encoding || encoding === 'identity') return bytes;
      return this.codecs.decode(bytes, encoding, !this.requests.downloadsThroughFetch, clock.signal);
    });
  }

  /**
   * Streams a workspace straight from the object store into `consume` (given the stored bytes and
   * the encoding to undo, none when fetch showed that it decoded them), counting progress in stored
   * bytes; undefined when there is no such workspace, `RestoreInProgressError` while archived.
   */
  protected async download<T>(
    sessionId: string,
    name: string,
    o: DownloadWorkspaceOptions,
    consume: (body: AsyncIterable<Uint8Array>, encoding: string | undefined, clock: Attempt) => Promise<T>,
  ): Promise<T | undefined> {
    const found = await this.getWorkspace(sessionId, name, o);
    if (!found) return undefined;
    if (found.status === 'restoring') throw new RestoreInProgressError(`workspace ${name}`);
    return this.requests.direct(found.download, { call: o, download: true }, async (response, clock) => {
      // Only fetch decodes (the Node entry's raw download hands over the bytes as stored).
      const decoded = this.requests.downloadsThroughFetch && response.headers.has('content-encoding');
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
}
