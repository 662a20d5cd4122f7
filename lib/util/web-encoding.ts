/**
 * Stored bodies in every runtime: their content encodings (recorded as the object's
 * `Content-Encoding`) and the digests presigned uploads are bound to (MD5, and SHA-256 where the
 * backend checks it; digests.ts). The server's codecs (zlib) are lib/util/encoding.ts.
 */
import { toBase64 } from './bytes.js';
import { md5, sha256 } from './digests.js';

/** How a body is stored. */
export type ContentEncoding = 'identity' | 'gzip' | 'br';
export const CONTENT_ENCODINGS: readonly ContentEncoding[] = ['identity', 'gzip', 'br'];

/** Base64 MD5 of a body. */
export const md5Base64 = (body: Uint8Array): string => toBase64(md5(body));

/** Base64 SHA-256 of a body. */
export const sha256Base64 = (body: Uint8Array): string => toBase64(sha256(body));
