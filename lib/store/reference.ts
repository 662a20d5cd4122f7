/**
 * Adoption of data written by the AgentScope reference's OSS store (docs/backends.md, "Reading
 * data written by the AgentScope reference"): `<prefix><user|__anon__>/<session>/<key>.json`,
 * `<key>.list.json` (the whole array) and `<key>.list.hash` (its sampled hash), with no marker, no
 * metadata and no tags. A session adopted gets a marker of the fixed incarnation `ref`; an object
 * without an `inc` is that incarnation's (no incarnation this store makes is `ref`: theirs start
 * with the time in base 36 and end with 8 hex digits).
 */
import type { ObjectInfo } from '../drivers/types.js';

/** The incarnation of an adopted session, and of every object without an `inc` of its own. */
export const REFERENCE_INC = 'ref';

/** The reference's `.list.hash` of an empty list. */
const EMPTY_REFERENCE_HASH = 'empty:0';

/**
 * Whether a `.list.hash` body is the reference's (`empty:0`, or a Java `int` printed as 1 to 8 hex
 * digits) rather than this store's (a JSON head or an append-format pointer, never that short).
 */
export function isReferenceListHash(body: Uint8Array): boolean {
  if (body.byteLength > 8) return false;
  const text = Buffer.from(body).toString('utf8');
  return text === EMPTY_REFERENCE_HASH || /^[0-9a-f]{1,8}$/.test(text);
}

/** The incarnation an object belongs to: its `inc`, or the reference's when it has none. */
export function incOf(object: Pick<ObjectInfo, 'metadata'>): string {
  return object.metadata.inc ?? REFERENCE_INC;
}

/** Java's `String.hashCode` (UTF-16 code units, 32-bit wrap-around). */
function javaStringHash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(31, h) + text.charCodeAt(i)) | 0;
  return h;
}

/**
 * A `.list.hash` as the reference computes it (docs/backends.md): `empty:0` for an empty list,
 * else a 31-multiplier hash over the size and up to five sampled items (the first, the last and
 * three between), printed as unsigned hex. The reference hashes each item by its Java
 * `hashCode`, which for its state objects is an identity hash no other process can recompute;
 * here an item's is the `String.hashCode` of its JSON. Nothing in this store compares these
 * hashes: it recognises them by their form (`isReferenceListHash`), and tests and `npm run adopt`
 * use this to write objects of that form.
 */
export function referenceListHash(items: readonly unknown[]): string {
  if (items.length === 0) return EMPTY_REFERENCE_HASH;
  const n = items.length;
  const picks =
    n <= 5 ? [...items.keys()] : [0, Math.floor(n / 4), Math.floor(n / 2), Math.floor((3 * n) / 4), n - 1];
  let h = n;
  for (const i of picks) h = (Math.imul(31, h) + javaStringHash(JSON.stringify(items[i]))) | 0;
  return (h >>> 0).toString(16);
}
