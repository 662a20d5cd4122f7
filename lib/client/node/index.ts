/**
 * The typed HTTP client on Node (`agent-state-store/client/node`): the universal client
 * (lib/client/index.ts) with what only Node has. Workspaces from and into files (compressed into a
 * temporary file first, streamed on the way back), brotli besides gzip (zlib), and direct
 * downloads over node:http(s), which hand over the bytes as stored, so that a download's progress
 * counts them (unless the client is given a `fetch`).
 */

import type { WorkspaceInfo } from '../../contract/types.js';
import { assemble } from '../assemble.js';
import type { Requests } from '../requests.js';
import type {
  DownloadWorkspaceOptions,
  HttpClientOptions,
  HttpSessionStore,
  UploadWorkspaceOptions,
} from '../types.js';
import { rawFetch } from './raw-fetch.js';
import { NodeTransfers } from './transfers.js';
import { WorkspaceSnapshotClient } from './workspace-snapshots.js';

export type {
  PullOptions,
  PushOptions,
  PushResult,
  WorkspaceSnapshotClient,
} from './workspace-snapshots.js';

/**
 * The Node entry's client (`agent-state-store/client/node`): the client, plus files (uploaded from
 * a path, compressed into a temporary file first; downloaded into a path, streamed), brotli, and
 * direct downloads of the bytes as stored (over node:http(s) unless the client is given a `fetch`).
 */
export interface NodeHttpSessionStore extends HttpSessionStore {
  /** The same as `uploadWorkspace`, from a file, read a part at a time (compressed into a temporary file first). */
  uploadWorkspaceFile(
    sessionId: string,
    name: string,
    file: string,
    options?: UploadWorkspaceOptions,
  ): Promise<WorkspaceInfo>;
  /** The same as `downloadWorkspace`, into a file, streamed; false when there is no such workspace. */
  downloadWorkspaceToFile(
    sessionId: string,
    name: string,
    file: string,
    options?: DownloadWorkspaceOptions,
  ): Promise<boolean>;
  /**
   * Workspace snapshots: a directory pushed as content-defined chunks, only what changed uploaded;
   * pulled, listed, diffed and read a file at a time (workspace-snapshots.ts).
   */
  readonly workspaces: WorkspaceSnapshotClient;
}

/**
 * Creates the Node client: `createHttpClient` of the universal entry, plus `uploadWorkspaceFile`,
 * `downloadWorkspaceToFile` and brotli. Options left out are read from `AGENT_STATE_URL` and
 * `AGENT_STATE_TOKEN`; without a URL either way, a `ValidationError`.
 */
export function createHttpClient(options?: HttpClientOptions): NodeHttpSessionStore {
  let shared: Requests | undefined;
  const { store, transfers } = assemble(options, {
    rawFetch,
    transfers: (requests) => {
      shared = requests;
      return new NodeTransfers(requests);
    },
  });
  return {
    ...store,
    workspaces: new WorkspaceSnapshotClient(shared as Requests),
    uploadWorkspaceFile: transfers.uploadWorkspaceFile.bind(transfers),
    downloadWorkspaceToFile: transfers.downloadWorkspaceToFile.bind(transfers),
  };
}
