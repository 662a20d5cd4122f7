/**
 * `agent-state-store/client`: the typed HTTP client and everything it raises and returns. Loads
 * only the client's own modules (and `canonicalize` for the chain hash): no cloud SDK, no server.
 */

export * from '../client/index.js';
export { type Lease, LockConflictError, LockLostError } from '../lock/types.js';
export * from '../store/errors.js';
export { chainHash, EMPTY_HASH } from '../store/hash.js';
export type * from '../store/types.js';
