/**
 * What a workspace upload reads from, in any runtime: bytes, a `Blob` (a browser's `File` too) or
 * a `ReadableStream` of bytes, turned into a `Source` whose size is known and which is read a part
 * at a time (every part's size and MD5 are declared before the first byte is sent). gzip is
 * `CompressionStream`'s and `DecompressionStream`'s, which every runtime has; brotli is the Node
 * entry's (lib/client/node/).
 */

import { ValidationError } from '../contract/errors.js';
import { concatBytes } from '../util/bytes.js';
import { CONTENT_ENCODINGS } from '../util/web-encoding.js';
import { race } from './transport.js';

/** What `uploadWorkspace` takes: bytes, a `Blob` (or `File`), or a stream of bytes. */
export type WorkspaceSource = Uint8Array | Blob | ReadableStream<Uint8Array>;

/** Bytes to upload, read a part at a time. */
export interface Source {
  readonly size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
}

/** A source over bytes in memory. */
export const bytesSource = (body: Uint8Array): Source => ({
  size: body.byteLength,
  read: async (offset, length) => body.subarray(offset, offset + length),
});

/** A source over a `Blob`, read a slice at a time (a browser may keep a large one on disk). */
export const blobSource = (blob: Blob): Source => ({
  size: blob.size,
  read: async (offset, length) => new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer()),
});

/** A source over the chunks a stream gave, without joining them first. */
function chunksSource(chunks: readonly Uint8Array[]): Source {
  const starts: number[] = [];
  let size = 0;
  for (const chunk of chunks) {
    starts.push(size);
    size += chunk.byteLength;
  }
  return {
    size,
    async read(offset, length) {
      const end = Math.min(size, offset + length);
      const parts: Uint8Array[] = [];
      for (let i = 0; i < chunks.length; i++) {
        const chunk = chunks[i] as Uint8Array;
        const from = starts[i] as number;
        if (from + chunk.byteLength <= offset || from >= end) continue;
        parts.push(chunk.subarray(Math.max(0, offset - from), Math.min(chunk.byteLength, end - from)));
      }
      return concatBytes(parts);
    },
  };
}

/** Whether a value is a `Blob` (of this runtime or, by its shape, of another realm). */
export const isBlob = (value: unknown): value is Blob =>
  (typeof Blob !== 'undefined' && value instanceof Blob) ||
  (typeof value === 'object' &&
    value !== null &&
    typeof (value as Blob).slice === 'function' &&
    typeof (value as Blob).arrayBuffer === 'function' &&
    typeof (value as Blob).size === 'number');

/** A stream of a source's bytes. */
export function streamOf(data: WorkspaceSource): ReadableStream<Uint8Array> {
  if (data instanceof Uint8Array)
    return new ReadableStream<Uint8Array>({
      start(controller) {
        if (data.byteLength > 0) controller.enqueue(data);
        controller.close();
      },
    });
  if (isBlob(data)) return data.stream() as ReadableStream<Uint8Array>;
  return data;
}

/** Every chunk of a stream; an abort cancels the stream and rejects with the signal's reason. */
export async function readAll(
  stream: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
): Promise<Uint8Array[]> {
  signal?.throwIfAborted();
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await (signal ? race(reader.read(), signal) : reader.read());
      if (done) {
        finished = true;
        return chunks;
      }
      chunks.push(value);
    }
  } finally {
    if (!finished) reader.cancel(signal?.reason).catch(() => {});
  }
}

/** The source of a stream, read whole first (its size is declared before the upload). */
export const streamSource = async (stream: ReadableStream<Uint8Array>, signal?: AbortSignal) =>
  chunksSource(await readAll(stream, signal));

/**
 * The body to upload: the data as it is (`identity`) or gzip-compressed with `CompressionStream`.
 * Brotli is refused here (`CompressionStream` has no brotli): the Node entry compresses it; any
 * other encoding is refused everywhere.
 */
export async function webBody(
  data: WorkspaceSource,
  encoding: string,
  signal: AbortSignal | undefined,
): Promise<Source> {
  if (encoding === 'identity') {
    if (data instanceof Uint8Array) return bytesSource(data);
    if (isBlob(data)) return blobSource(data);
    return streamSource(data, signal);
  }
  if (encoding === 'gzip')
    return streamSource(streamOf(data).pipeThrough(new CompressionStream('gzip')), signal);
  if (encoding === 'br')
    throw new ValidationError(
      'encoding',
      'br needs agent-state-store/client/node (CompressionStream has gzip, not brotli)',
    );
  throw new ValidationError('encoding', `must be one of ${CONTENT_ENCODINGS.join(', ')}`);
}

/** The gzip magic bytes (RFC 1952). */
const isGzip = (bytes: Uint8Array) => bytes[0] === 0x1f && bytes[1] === 0x8b;

/** Decompresses a gzip body with `DecompressionStream`. */
export const gunzip = async (bytes: Uint8Array, signal?: AbortSignal): Promise<Uint8Array> =>
  concatBytes(await readAll(streamOf(bytes).pipeThrough(new DecompressionStream('gzip')), signal));

/**
 * Decodes a body fetch downloaded without showing a `Content-Encoding`: a browser shows it only
 * when the store's CORS exposes it, and decodes regardless. So a gzip body is decoded here only
 * when it still starts as gzip does; a brotli one is taken as decoded (a store serves the
 * encoding it was given, and fetch decodes brotli in every runtime).
 */
export async function decodeFetched(bytes: Uint8Array, encoding: string, signal?: AbortSignal) {
  return encoding === 'gzip' && isGzip(bytes) ? gunzip(bytes, signal) : bytes;
}
