/**
 * Content encodings of stored bodies (archives, workspaces) on Node: gzip or brotli with zlib,
 * recorded as the object's `Content-Encoding`, and the digests uploads are bound to with
 * node:crypto. The Node entry of the typed client uses the same functions for workspaces; the
 * universal client's are lib/util/web-encoding.ts (which owns the list of encodings).
 */
import { createHash } from 'node:crypto';
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib';
import type { ContentEncoding } from './web-encoding.js';

export { CONTENT_ENCODINGS, type ContentEncoding } from './web-encoding.js';

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

/** Base64 MD5 of a body (the digest presigned uploads are bound to). */
export function md5Base64(body: Uint8Array): string {
  return createHash('md5').update(body).digest('base64');
}

/** Base64 SHA-256 of a body (bound too where the backend checks it: AWS S3). */
export function sha256Base64(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('base64');
}
