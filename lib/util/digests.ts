/**
 * SHA-256 and MD5, synchronous, in every runtime: node:crypto's where the runtime hands it out
 * without an import (`process.getBuiltinModule`: Node ≥ 20.16, and runtimes that offer it), else
 * @noble/hashes' (plain JS, several times slower on large bodies: browsers, workers, edge
 * runtimes). Both give the same digests; no module here imports `node:`, so the universal client
 * bundles anywhere. The chain hash (lib/contract/hash.ts) and the upload digests use these.
 */
import { md5 as nobleMd5 } from '@noble/hashes/legacy';
import { sha256 as nobleSha256 } from '@noble/hashes/sha2';

/** What this module uses of node:crypto. */
interface NativeCrypto {
  createHash(algorithm: 'sha256' | 'md5'): {
    update(data: Uint8Array): { digest(): Uint8Array };
  };
}

/** node:crypto, when the runtime gives it out synchronously; else undefined. */
function nativeCrypto(): NativeCrypto | undefined {
  const runtime = globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } };
  try {
    const crypto = runtime.process?.getBuiltinModule?.('node:crypto') as NativeCrypto | undefined;
    return typeof crypto?.createHash === 'function' ? crypto : undefined;
  } catch {
    return undefined;
  }
}

const native = nativeCrypto();

/** The plain-JS digests, which answer where the runtime has no node:crypto. */
export const JS_DIGESTS = { sha256: nobleSha256, md5: nobleMd5 } as const;

/** Which implementation answers here: `node:crypto` or `@noble/hashes`. */
export const DIGESTS_BY: 'node:crypto' | '@noble/hashes' = native ? 'node:crypto' : '@noble/hashes';

/** A digest as a plain `Uint8Array` (node:crypto's `Buffer` would carry Buffer's methods). */
const plain = (digest: Uint8Array) => new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);

/** SHA-256 of some bytes. */
export const sha256: (data: Uint8Array) => Uint8Array = native
  ? (data) => plain(native.createHash('sha256').update(data).digest())
  : (data) => nobleSha256(data);

/** MD5 of some bytes. */
export const md5: (data: Uint8Array) => Uint8Array = native
  ? (data) => plain(native.createHash('md5').update(data).digest())
  : (data) => nobleMd5(data);
