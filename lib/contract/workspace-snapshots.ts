/**
 * The vocabulary of workspace snapshots (docs/DESIGN.md, "Workspace snapshots"): what a push
 * declares, what the server answers, and a committed snapshot. The store implements
 * `WorkspaceSnapshotStore`; the typed client's Node module speaks it over HTTP.
 */
import type { WriteOptions } from './types.js';

/** A presigned request to the object store, as the API signs it. */
export interface SnapshotDirectRequest {
  readonly method: 'GET' | 'PUT';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** A pack as a push declares it: its name (hex SHA-256 of its bytes), size and base64 MD5. */
export interface WorkspacePackDeclaration {
  readonly id: string;
  readonly size: number;
  readonly md5: string;
}

/** The compressed manifest as a push declares it: its size and base64 MD5. */
export interface WorkspaceManifestDeclaration {
  readonly size: number;
  readonly md5: string;
}

/**
 * A batch of a push (`POST …/workspaces/{name}/snapshots`): chunk hashes to check against the
 * parent snapshot, and (in the last batch) the new packs and the manifest to sign uploads for.
 */
export interface WorkspaceSnapshotStartRequest {
  /** The snapshot a retry continues (from an earlier answer); default a new id. */
  readonly snapshotId?: string;
  /** The snapshot this one deduplicates against. */
  readonly parent?: string;
  /** Hashes of chunks (`sha256:<hex>`, at most 10,000 per batch) the client believes new. */
  readonly chunks?: readonly string[];
  /** The new packs (at most 1,000). */
  readonly packs?: readonly WorkspacePackDeclaration[];
  readonly manifest?: WorkspaceManifestDeclaration;
}

/** The answer to a batch: what is missing, and the presigned PUTs to send it with. */
export interface WorkspaceSnapshotStart {
  readonly snapshotId: string;
  /** Those of `chunks` the parent snapshot does not have. */
  readonly missing: readonly string[];
  /** A presigned PUT (Content-MD5 signed) for each declared pack not stored yet. */
  readonly uploads: ReadonlyArray<SnapshotDirectRequest & { readonly pack: string }>;
  /** A presigned PUT of the compressed manifest, when one was declared. */
  readonly manifestUpload?: SnapshotDirectRequest;
  readonly expiresAt: Date;
}

/** The commit of a push (`POST …/snapshots/{snapshotId}`): what was uploaded. */
export interface WorkspaceSnapshotCommitRequest {
  readonly parent?: string;
  readonly packs: readonly WorkspacePackDeclaration[];
  readonly manifest: WorkspaceManifestDeclaration;
}

/** A committed snapshot. */
export interface WorkspaceSnapshotInfo {
  readonly snapshotId: string;
  readonly createdAt: Date;
  readonly parent?: string;
  /** Entries of its manifest, and plain bytes of its files. */
  readonly entries: number;
  readonly bytes: number;
  /** Size of the compressed manifest. */
  readonly manifestSize: number;
  /** The packs its manifest references. */
  readonly packs: readonly string[];
}

/** A snapshot in a listing (one LIST: no snapshot record is read). */
export interface WorkspaceSnapshotSummary {
  readonly snapshotId: string;
  readonly createdAt: Date;
}

/** A snapshot to read: its manifest's and its packs' presigned GETs (packs honour Range). */
export interface WorkspaceSnapshotDownload extends WorkspaceSnapshotInfo {
  readonly manifest: SnapshotDirectRequest;
  readonly packUrls: ReadonlyArray<SnapshotDirectRequest & { readonly pack: string }>;
  readonly expiresAt: Date;
}

/** What a store with workspace snapshots offers (the object-storage engine with presigned transfers). */
export interface WorkspaceSnapshotStore {
  startWorkspaceSnapshot(
    sessionId: string,
    name: string,
    request: WorkspaceSnapshotStartRequest,
    options?: WriteOptions,
  ): Promise<WorkspaceSnapshotStart>;
  commitWorkspaceSnapshot(
    sessionId: string,
    name: string,
    snapshotId: string,
    request: WorkspaceSnapshotCommitRequest,
    options?: WriteOptions,
  ): Promise<WorkspaceSnapshotInfo>;
  /** Newest first. */
  listWorkspaceSnapshots(sessionId: string, name: string): Promise<WorkspaceSnapshotSummary[]>;
  /** `latest`: the newest snapshot; undefined when there is none. */
  getWorkspaceSnapshot(
    sessionId: string,
    name: string,
    snapshotId: string,
  ): Promise<WorkspaceSnapshotDownload | undefined>;
  /** Removes the snapshot's record and manifest (its packs go with a sweep); absent is fine. */
  deleteWorkspaceSnapshot(
    sessionId: string,
    name: string,
    snapshotId: string,
    options?: WriteOptions,
  ): Promise<void>;
}

/** What `sweepWorkspacePacks` did. */
export interface WorkspaceSweepResult {
  /** Workspaces (of every incarnation) looked at. */
  readonly workspaces: number;
  /** Packs stored, and those a live snapshot references. */
  readonly packs: number;
  readonly referenced: number;
  /** Packs unreferenced in this sweep (candidates of the next one unless tagged now). */
  readonly unreferenced: number;
  /** Packs tagged `gc=1` now, untagged again (referenced once more), deleted (`deleteTaggedAfterMs`). */
  readonly tagged: number;
  readonly rescued: number;
  readonly deleted: number;
  /** Records and manifests of incarnations that are no longer live, deleted. */
  readonly deadObjects: number;
}

/** The sum of sweep results (of no sweep at all: every count 0). */
export function sumSweeps(results: readonly Partial<WorkspaceSweepResult>[]): WorkspaceSweepResult {
  const sum = {
    workspaces: 0,
    packs: 0,
    referenced: 0,
    unreferenced: 0,
    tagged: 0,
    rescued: 0,
    deleted: 0,
    deadObjects: 0,
  };
  for (const r of results) for (const k of Object.keys(sum) as Array<keyof typeof sum>) sum[k] += r[k] ?? 0;
  return sum;
}

/** Options of a sweep. */
export interface WorkspaceSweepOptions {
  /**
   * Delete packs tagged this long ago (ms) in the sweep itself: for backends without lifecycle
   * rules (fs). Without it, tagged packs are left to the `workspace-packs-gc` rule.
   */
  readonly deleteTaggedAfterMs?: number;
}

/** A store whose workspace snapshot packs a sweep collects (docs/DESIGN.md, "Workspace snapshots"). */
export interface WorkspacePackSweeper {
  sweepWorkspacePacks(
    options?: WorkspaceSweepOptions & { readonly sessionId?: string },
  ): Promise<WorkspaceSweepResult>;
}

/** Whether a store runs the sweep of workspace snapshot packs. */
export function hasWorkspacePackSweep<T extends object>(store: T): store is T & WorkspacePackSweeper {
  return typeof (store as Partial<WorkspacePackSweeper>).sweepWorkspacePacks === 'function';
}

/** Whether a store offers workspace snapshots. */
export function hasWorkspaceSnapshots<T extends object>(store: T): store is T & WorkspaceSnapshotStore {
  return typeof (store as Partial<WorkspaceSnapshotStore>).startWorkspaceSnapshot === 'function';
}

/** A snapshot id: 10 base-36 digits of its creation time in ms, `-`, 16 hex digits. */
export const SNAPSHOT_ID = /^[0-9a-z]{10}-[0-9a-f]{16}$/;
/** The alias of the newest snapshot in `getWorkspaceSnapshot`. */
export const LATEST_SNAPSHOT = 'latest';
/** Chunk hashes per batch, packs per push, and the largest compressed manifest. */
export const MAX_SNAPSHOT_CHUNKS = 10_000;
export const MAX_SNAPSHOT_PACKS = 1_000;
export const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;
/** The largest manifest once decompressed. */
export const MAX_MANIFEST_PLAIN_BYTES = 512 * 1024 * 1024;
/** The largest pack a push declares: one presigned PUT (5 GiB). */
export const MAX_PACK_BYTES = 5 * 1024 * 1024 * 1024;
