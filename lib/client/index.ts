/**
 * Typed HTTP client: implements the store's `SessionStore` (plus the lock calls) over the API, so an
 * agent moves from the local store to the remote one by changing one line. It encodes ids, sends only
 * new items when it knows the list (count and hash, with `expectedCount`), retries idempotent calls
 * with jittered backoff (and any call answered `contended`), reads a list larger than an answer whole,
 * a page at a time, and raises the same typed errors as the library.
 *
 * Large state never goes through the API: workspaces are compressed here (gzip or brotli), then
 * uploaded straight to the object store with the presigned PUT or parts the API signs, and
 * downloaded the same way; a value larger than a request body is uploaded the same way and
 * committed; a value larger than an answer comes back as a 303 to a presigned URL, followed here.
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
 * Values are in values.ts, lists in lists.ts, direct transfers in transfers.ts, sessions and the
 * lock in sessions.ts, snapshots, commits and turns in commits.ts (the `Turn` itself in turn.ts).
 */

import { Commits } from './commits.js';
import { KnownLists, Lists } from './lists.js';
import { Requests } from './requests.js';
import { Sessions } from './sessions.js';
import { Transfers } from './transfers.js';
import type { HttpClientOptions, HttpSessionStore } from './types.js';
import { Values } from './values.js';

export type { CommitFailure } from '../contract/errors.js';
export { PayloadTooLargeError, ProtocolError, UnauthorizedError } from '../contract/errors.js';
export type {
  CommitList,
  CommitRequest,
  CommitResult,
  CommitValue,
  Snapshot,
  SnapshotList,
  SnapshotRequest,
  SnapshotValue,
} from '../contract/types.js';
export { ListChangedError } from './lists.js';
export { RequestTimeoutError } from './transport.js';
export {
  Turn,
  type TurnCommitOptions,
  type TurnCommitResult,
} from './turn.js';
export type * from './types.js';

/** Creates the client: its parts, sharing one `Requests` and one `KnownLists`, behind one interface. */
export function createHttpClient(options: HttpClientOptions): HttpSessionStore {
  const requests = new Requests(options);
  const known = new KnownLists();
  const transfers = new Transfers(requests);
  const values = new Values(requests, transfers);
  const lists = new Lists(requests, known);
  const sessions = new Sessions(requests, known);
  const commits = new Commits(requests, known, values);
  return {
    createValueUpload: transfers.createValueUpload.bind(transfers),
    commitValueUpload: transfers.commitValueUpload.bind(transfers),
    createWorkspaceUpload: transfers.createWorkspaceUpload.bind(transfers),
    completeWorkspaceUpload: transfers.completeWorkspaceUpload.bind(transfers),
    getWorkspace: transfers.getWorkspace.bind(transfers),
    locateListItem: lists.locateListItem.bind(lists),
    locateValue: transfers.locateValue.bind(transfers),
    listWorkspaces: transfers.listWorkspaces.bind(transfers),
    deleteWorkspace: transfers.deleteWorkspace.bind(transfers),
    uploadWorkspace: transfers.uploadWorkspace.bind(transfers),
    uploadWorkspaceFile: transfers.uploadWorkspaceFile.bind(transfers),
    downloadWorkspace: transfers.downloadWorkspace.bind(transfers),
    downloadWorkspaceToFile: transfers.downloadWorkspaceToFile.bind(transfers),
    get: values.get.bind(values),
    getVersioned: values.getVersioned.bind(values),
    save: values.save.bind(values),
    deleteKey: values.deleteKey.bind(values),
    saveList: lists.saveList.bind(lists),
    appendList: lists.appendList.bind(lists),
    truncateList: lists.truncateList.bind(lists),
    listKeys: sessions.listKeys.bind(sessions),
    getList: lists.getList.bind(lists),
    deleteList: lists.deleteList.bind(lists),
    listArchives: lists.listArchives.bind(lists),
    getArchive: lists.getArchive.bind(lists),
    exists: sessions.exists.bind(sessions),
    delete: sessions.delete.bind(sessions),
    deleteAllSessions: sessions.deleteAllSessions.bind(sessions),
    listSessionIds: sessions.listSessionIds.bind(sessions),
    snapshot: commits.snapshot.bind(commits),
    commit: commits.commit.bind(commits),
    beginTurn: commits.beginTurn.bind(commits),
    acquireLock: sessions.acquireLock.bind(sessions),
    renewLock: sessions.renewLock.bind(sessions),
    releaseLock: sessions.releaseLock.bind(sessions),
  };
}
