/**
 * The list chain hash shared by the client and the server: h0 = SHA-256(""), hi = SHA-256(hi-1 ||
 * SHA-256(JCS(item i))), written `sha256:<64 hex>`. JCS is RFC 8785 canonical JSON, so key order
 * inside an item does not matter and any change of an item does.
 *
 * One definition for the server and for the client in every runtime, browsers and workers
 * included: SHA-256 is lib/util/digests.ts' (synchronous; node:crypto's where the runtime has it,
 * else @noble/hashes').
 */
import canonicalize from 'canonicalize';
import { concatBytes, fromHex, toHex, utf8Bytes } from '../util/bytes.js';
import { sha256 } from '../util/digests.js';
import { HASH_PATTERN, HASH_PREFIX as PREFIX } from './limits.js';
import type { CommitRequest } from './types.js';

/** The hash of the empty list. */
export const EMPTY_HASH = `${PREFIX}${toHex(sha256(new Uint8Array(0)))}`;

/** RFC 8785 canonical JSON of a value. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value is not JSON');
  return text;
}

/** The chain hash after appending `items` to a list whose hash is `from`. */
export function chainHash(from: string, items: readonly unknown[]): string {
  return chainLeaves(from, items.map(leafHash));
}

/** SHA-256 of an item's canonical JSON: what the chain hash folds in for it. */
export function leafHash(item: unknown): Uint8Array {
  return sha256(utf8Bytes(canonicalJson(item)));
}

/** `leafHash` in hex, as a stored item reference records it. */
export const leafHex = (item: unknown): string => toHex(leafHash(item));

/** The chain hash after folding in items by their leaf hashes (an item stored elsewhere keeps its leaf). */
export function chainLeaves(from: string, leaves: readonly Uint8Array[]): string {
  let state = fromHex(from.slice(PREFIX.length));
  for (const leaf of leaves) state = sha256(concatBytes([state, leaf]));
  return `${PREFIX}${toHex(state)}`;
}

/** True for a well-formed hash string. */
export function isHash(value: unknown): value is string {
  return typeof value === 'string' && HASH_PATTERN.test(value);
}

/** SHA-256 (hex) of the JCS of a request body: what a replay under the same key must match. */
export function requestDigest(body: unknown): string {
  return toHex(sha256(utf8Bytes(canonicalJson(body))));
}

/** The digest of the commit's `values` and `lists` (`requestDigest`): what a retry must match. */
export function commitDigest(request: CommitRequest): string {
  return requestDigest({ values: request.values ?? [], lists: request.lists ?? [] });
}

// ---- a request's identity ------------------------------------------------------------------------

const hex8 = (text: string) => toHex(sha256(utf8Bytes(text))).slice(0, 8);

/**
 * The record a list write leaves among the list's last writes: 8 hex digits naming the request
 * (its Idempotency-Key, or a commit's id and the list key) and 8 of its body's digest. Both list
 * formats keep it as it is (16 hex digits: the append format's trailer field).
 */
export function recordId(name: string, digest: string): string {
  return `${hex8(name)}${hex8(digest)}`;
}

/** A write record id: 16 lowercase hex digits. */
export const RECORD_ID = /^[0-9a-f]{16}$/;

/** How a recorded write id compares with a write's: the same request, the same name with another body, or neither. */
export function compareRecord(recorded: string, mine: string): 'same' | 'reused' | 'other' {
  if (recorded === mine) return 'same';
  return RECORD_ID.test(mine) && recorded.slice(0, 8) === mine.slice(0, 8) ? 'reused' : 'other';
}
