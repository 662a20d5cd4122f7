/**
 * `agent-state-store/strands`: the Strands Agents (TypeScript) `Storage` on the state store
 * (lib/adapters/strands.ts). Needs `@strands-agents/sdk` installed next to this package: without it,
 * importing this entry throws a `MissingPeerError` naming the package.
 */
import { requirePeer } from '../adapters/peer.js';

// The adapter needs only the SDK's types; loading its storage module checks that it is installed.
requirePeer('agent-state-store/strands', '@strands-agents/sdk/storage');

export { MissingPeerError } from '../adapters/peer.js';
export {
  createStrandsStorage,
  STRANDS_BYTES,
  STRANDS_SESSIONS,
  STRANDS_SHARED_SESSION,
  type StrandsStorage,
} from '../adapters/strands.js';
