/**
 * `agent-state-store/client`: the typed HTTP client and everything it raises and returns, for any
 * runtime with fetch and Web Crypto (Node 20, browsers, web workers, edge runtimes). Loads only the
 * client's own modules, `canonicalize` and `@noble/hashes` (for the chain hash) and zod: no cloud
 * SDK, no server, no `node:` module. Files and brotli are `agent-state-store/client/node`'s.
 */

export * from '../client/index.js';
export * from '../contract/errors.js';
export { LockConflictError, LockLostError } from '../contract/errors.js';
export { chainHash, EMPTY_HASH } from '../contract/hash.js';
export type { Lease } from '../contract/lock.js';
export type * from '../contract/types.js';
