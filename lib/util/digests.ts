/**
 * The digests presigned uploads are bound to (MD5, and SHA-256 where the backend checks it), in
 * plain JS (@noble/hashes) for every runtime. The Node entry of the client uses node:crypto's
 * (lib/util/encoding.ts) instead, which is faster on large bodies; both give the same answer.
 */
import { md5 } from '@noble/hashes/legacy';
import { sha256 } from '@noble/hashes/sha2';
import { toBase64 } from './bytes.js';

/** Base64 MD5 of a body. */
export const md5Base64 = (body: Uint8Array): string => toBase64(md5(body));

/** Base64 SHA-256 of a body. */
export const sha256Base64 = (body: Uint8Array): string => toBase64(sha256(body));
