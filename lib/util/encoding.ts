/**
 * Content encodings of stored bodies (archives, workspaces) on Node: gzip or brotli with zlib,
 * recorded as the object's `Content-Encoding`. The Node entry of the typed client uses the same
 * functions for workspaces. The list of encodings and the digests uploads are bound to are
 * lib/util/web-encoding.ts' (re-exported here), for every runtime.
 */
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib';
import type { ContentEncoding } from './web-encoding.js';

export { CONTENT_ENCODINGS, type ContentEncoding, md5Base64, sha256Base64 } from './web-encoding.js';

/** Encodes a body; `identity` returns it as it is. */
export function encodeBody(body: Uint8Array, encoding: ContentEncoding): Uint8Array {
  if (encoding === 'gzip') return gzipSync(body, { level: 6 });
  if (encoding === 'br') {
    return brotliCompressSync(body, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: body.byteLength },
    });
  }
  return body;
}

/** Decodes a body stored with `Content-Encoding: encoding` (absent or unknown: as it is). */
export function decodeBody(body: Uint8Array, encoding: string | undefined): Uint8Array {
  if (encoding === 'gzip') return gunzipSync(body);
  if (encoding === 'br') return brotliDecompressSync(body);
  return body;
}
