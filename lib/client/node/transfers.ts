/**
 * The Node entry's transfers: the universal ones (lib/client/transfers.ts) with zlib's codecs
 * (brotli too), and files: a workspace uploaded from a path (compressed
 * into a temporary file first, so that every part's size and MD5 are known up front, then read a
 * part at a time) or downloaded into a path (streamed, decoded on the way).
 */

import { createReadStream, createWriteStream } from 'node:fs';
import { type FileHandle, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { createBrotliCompress, createBrotliDecompress, createGunzip, createGzip } from 'node:zlib';
import { decodeBody, encodeBody } from '../../util/encoding.js';
import type { ContentEncoding } from '../../util/web-encoding.js';
import { bytesSource, decodeFetched, type Source, streamOf, webBody } from '../sources.js';
import { abortable, type TransferCodecs, Transfers } from '../transfers.js';
import type { DownloadWorkspaceOptions, UploadWorkspaceOptions } from '../types.js';

/** zlib's compressor of an encoding (gzip or brotli). */
const compressor = (encoding: string): Transform =>
  encoding === 'br' ? createBrotliCompress() : createGzip({ level: 6 });

/** zlib's codecs: brotli, and bytes compressed at once as the server compresses them. */
export const NODE_CODECS: TransferCodecs = {
  async body(data, encoding, signal) {
    if (encoding !== 'gzip' && encoding !== 'br') return webBody(data, encoding, signal);
    if (data instanceof Uint8Array) return bytesSource(encodeBody(data, encoding));
    const chunks: Buffer[] = [];
    const stream = Readable.fromWeb(streamOf(data) as NodeReadableStream<Uint8Array>);
    await pipeline(
      stream,
      compressor(encoding),
      async (compressed: AsyncIterable<Buffer>) => {
        for await (const chunk of compressed) chunks.push(chunk);
      },
      signal ? { signal } : {},
    );
    return bytesSource(new Uint8Array(Buffer.concat(chunks)));
  },
  async decode(bytes, encoding, raw, signal) {
    return raw ? decodeBody(bytes, encoding as ContentEncoding) : decodeFetched(bytes, encoding, signal);
  },
};

/** A source over an open file. */
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

/** The transfers of the Node entry: zlib, and files. */
export class NodeTransfers extends Transfers {
  constructor(requests: ConstructorParameters<typeof Transfers>[0]) {
    super(requests, NODE_CODECS);
  }

  async uploadWorkspaceFile(sessionId: string, name: string, file: string, o: UploadWorkspaceOptions = {}) {
    const encoding = o.encoding ?? 'gzip';
    return abortable(o.signal, async () => {
      // Compressed into a temporary file first: every part's size and MD5 are declared up front.
      const dir = encoding === 'identity' ? undefined : await mkdtemp(path.join(tmpdir(), 'workspace-'));
      const stored = dir ? path.join(dir, 'body') : file;
      try {
        if (dir) {
          await pipeline(createReadStream(file), compressor(encoding), createWriteStream(stored), {
            ...(o.signal ? { signal: o.signal } : {}),
          });
        }
        const handle = await open(stored, 'r');
        try {
          return await this.uploadSource(sessionId, name, await fileSource(handle), o);
        } finally {
          await handle.close();
        }
      } finally {
        if (dir) await rm(dir, { recursive: true, force: true });
      }
    });
  }

  async downloadWorkspaceToFile(
    sessionId: string,
    name: string,
    file: string,
    o: DownloadWorkspaceOptions = {},
  ) {
    const written = await this.download(sessionId, name, o, async (body, encoding, clock) => {
      const stream = Readable.from(body);
      const out = createWriteStream(file);
      const streams = { signal: clock.signal };
      if (!encoding || encoding === 'identity') await pipeline(stream, out, streams);
      else
        await pipeline(stream, encoding === 'br' ? createBrotliDecompress() : createGunzip(), out, streams);
      return true;
    });
    return written ?? false;
  }
}
