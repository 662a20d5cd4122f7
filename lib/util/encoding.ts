/**
 * Content encodings of stored bodies (archives, workspaces): gzip or brotli, recorded as the
 * object's `Content-Encoding`. The typed client uses the same functions for workspaces.
 */
import { createHash } from 'node:crypto';
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib';

/** How a body is stored. */
export type ContentEncoding = 'identity' | 'gzip' | 'br';
export const CONTENT_ENCODINGS: readonly ContentEncoding[] = ['identity', 'gzip', 'br'];

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
