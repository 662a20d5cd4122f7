/**
 * Typed HTTP client: implements the store's `SessionStore` (plus the lock calls) over the API, so an
 * agent moves from the local store to the remote one by changing one line. It encodes ids, sends only
 * new items when it knows the list (count and hash, with `expectedCount`), retries idempotent calls
 * with jittered backoff (and any call answered `contended`), reads a list larger than an answer whole,
 * a page at a time, and raises the same typed errors as the library.
 *
 * It runs in any runtime with fetch, Web Crypto, TextEncoder and `CompressionStream` (Node 20,
 * browsers, web workers, edge runtimes): nothing here imports a `node:` module or touches a Node
 * global. The Node entry (`agent-state-store/client/node`, lib/client/node/) adds files, brotli,
 * and downloads of the bytes as stored. Digests are node:crypto's where the runtime hands it out
 * without an import (`process.getBuiltinModule`, Node ≥ 20.16), else plain JS (lib/util/digests.ts).
 *
 * Large state never goes through the API: workspaces are compressed here (gzip), then uploaded
 * straight to the object store with the presigned PUT or parts the API signs, and downloaded the
 * same way; a value larger than a request body is uploaded the same way and committed; a value
 * larger than an answer comes back as a 303 to a presigned URL, followed here.
 *
 * Options left out are read from the environment where there is one (`AGENT_STATE_URL`,
 * `AGENT_STATE_TOKEN`: settings.ts); every request carries `User-Agent: agent-state-store/<version>`
 * where the runtime lets a script set it; a `logger` gets a debug line for each retry. Every error
 * raised from an answer carries its `status`, `requestId`, and its problem's `code` and `problem`.
 *
 * The protocol (lib/protocol) is the router's: URLs are built from its paths, every answer is
 * validated with its schemas (an answer that is not what the protocol says is a `ProtocolError`),
 * and every problem becomes the typed error its table names, carrying the answer's `X-Request-Id`.
 *
 * Every call takes `CallOptions` last: an `AbortSignal` (the call rejects with its reason at once,
 * also between retries and during direct transfers) and a per-attempt `timeoutMs` (default the
 * client's, 30 s). Every append carries an `Idempotency-Key`, so a lost answer is retried safely.
 *
 * This file is the wiring and the public surface (the public types are in types.ts). The parts
 * share one `Requests` (where the API is; how a call is sent and retried, and how an answer becomes
 * a typed error: requests.ts) and one `KnownLists` (what the client knows of each list: lists.ts).
 * Values are in values.ts, lists in lists.ts, direct transfers in transfers.ts (what they read
 * from in sources.ts), sessions and the lock in sessions.ts, snapshots, commits and turns in
 * commits.ts (the `Turn` itself in turn.ts); assemble.ts wires them.
 */

import { assemble } from './assemble.js';
import type { HttpClientOptions, HttpSessionStore } from './types.js';

export type { CommitFailure, ProblemDetails } from '../contract/errors.js';
export {
  PayloadTooLargeError,
  ProtocolError,
  UnauthorizedError,
  UserMismatchError,
} from '../contract/errors.js';
export type {
  CommitList,
  CommitRequest,
  CommitResult,
  CommitValue,
  Snapshot,
  SnapshotList,
  SnapshotRequest,
  SnapshotValue,
  ValuePage,
} from '../contract/types.js';
export { ListChangedError } from './lists.js';
export { CLIENT_ENV, CLIENT_VERSION, USER_AGENT } from './settings.js';
export type { WorkspaceSource } from './sources.js';
export { RequestTimeoutError } from './transport.js';
export {
  Turn,
  type TurnCommitOptions,
  type TurnCommitResult,
} from './turn.js';
export type * from './types.js';

/**
 * Creates the client. Options left out are read from `AGENT_STATE_URL` and `AGENT_STATE_TOKEN`
 * where the runtime has environment variables; without a URL either way, a `ValidationError`.
 */
export function createHttpClient(options?: HttpClientOptions): HttpSessionStore {
  return assemble(options).store;
}
