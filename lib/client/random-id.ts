/**
 * Random ids the client makes (an `Idempotency-Key`, a `commitId`): a version 4 UUID from the
 * runtime's Web Crypto. `crypto.randomUUID` exists only in secure contexts (https, localhost); a
 * page served over plain http builds the same UUID from `crypto.getRandomValues`, which any
 * context has.
 */

import { toHex } from '../util/bytes.js';

/** A new random UUID (version 4). */
export function randomId(): string {
  const crypto = globalThis.crypto;
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = toHex(bytes);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
