/**
 * `agent-state-store/client`: the typed HTTP client and everything it raises and returns. Loads
 * only the client's own modules (and `canonicalize` for the chain hash): no cloud SDK, no server.
 */

export * from '../client/index.js';
export * from '../contract/errors.js';
export { LockConflictError, LockLostError } from '../contract/errors.js';
export { chainHash, EMPTY_HASH } from '../contract/hash.js';
export type { Lease } from '../contract/lock.js';
export type * from '../contract/types.js';
