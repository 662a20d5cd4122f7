/**
 * The client's parts wired behind one interface: they share one `Requests` and one `KnownLists`.
 * A runtime may give more (the Node entry: its raw download and its transfers, lib/client/node/),
 * and adds the methods of its transfers to the interface itself.
 */

import { Capabilities } from './capabilities.js';
import { Commits } from './commits.js';
import { KnownLists, Lists } from './lists.js';
import { Requests } from './requests.js';
import { Sessions } from './sessions.js';
import { Transfers } from './transfers.js';
import type { DirectFetch } from './transport.js';
import type { HttpClientOptions, HttpSessionStore } from './types.js';
import { Values } from './values.js';

/** What a runtime gives the client beyond fetch and Web Crypto. */
export interface ClientPlatform<T extends Transfers> {
  /** The transport of direct downloads when the client is given no `fetch` (bytes as stored). */
  readonly rawFetch?: DirectFetch;
  /** The runtime's transfers. */
  transfers(requests: Requests): T;
}

const WEB: ClientPlatform<Transfers> = { transfers: (requests) => new Transfers(requests) };

/** The client, and its transfers (for the methods a runtime adds). */
export function assemble<T extends Transfers = Transfers>(
  options: HttpClientOptions | undefined,
  platform: ClientPlatform<T> = WEB as ClientPlatform<T>,
): { store: HttpSessionStore; transfers: T } {
  const requests = new Requests(options, platform.rawFetch);
  const known = new KnownLists();
  const transfers = platform.transfers(requests);
  const values = new Values(requests, transfers);
  const lists = new Lists(requests, known);
  const sessions = new Sessions(requests, known);
  const commits = new Commits(requests, known, values);
  const capabilities = new Capabilities(requests);
  const store: HttpSessionStore = {
    capabilities: capabilities.capabilities.bind(capabilities),
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
    downloadWorkspace: transfers.downloadWorkspace.bind(transfers),
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
    getLock: sessions.getLock.bind(sessions),
    acquireLock: sessions.acquireLock.bind(sessions),
    renewLock: sessions.renewLock.bind(sessions),
    releaseLock: sessions.releaseLock.bind(sessions),
  };
  return { store, transfers };
}
