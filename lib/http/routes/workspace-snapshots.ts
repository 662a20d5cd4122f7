/**
 * Workspace snapshots (docs/DESIGN.md, "Workspace snapshots"): a push declares its new chunks,
 * packs and manifest and is answered with presigned PUTs; the client uploads straight to the object
 * store, then commits. These routes only sign and check; every write goes through the write path.
 */
import {
  hasWorkspaceSnapshots,
  type WorkspaceSnapshotInfo,
  type WorkspaceSnapshotStore,
} from '../../contract/workspace-snapshots.js';
import { PATHS } from '../../protocol/paths.js';
import { headers, schemas } from '../../protocol/schemas.js';
import { HttpProblem } from '../problems.js';
import { FENCING_NOTE, json, noContent, type RouteContext, route, WRITE_PROBLEMS } from './route.js';

/** The caller's store, if it has workspace snapshots; else 501 `unsupported`. */
function snapshotsOf(c: Pick<RouteContext, 'user'>): WorkspaceSnapshotStore {
  if (!hasWorkspaceSnapshots(c.user)) throw new HttpProblem('unsupported', 'no workspace snapshots here');
  return c.user;
}

/** A snapshot as JSON. */
function snapshotJson(s: WorkspaceSnapshotInfo) {
  return {
    snapshotId: s.snapshotId,
    createdAt: s.createdAt.toISOString(),
    ...(s.parent ? { parent: s.parent } : {}),
    entries: s.entries,
    bytes: s.bytes,
    manifestSize: s.manifestSize,
    packs: s.packs,
  };
}

export const WORKSPACE_SNAPSHOT_ROUTES = [
  route({
    method: 'POST',
    pattern: PATHS.workspaceSnapshots,
    operationId: 'startWorkspaceSnapshot',
    tag: 'workspaces',
    summary: 'Push a workspace snapshot: which chunks are missing, and presigned PUTs for new packs',
    description: `A batch of a push. \`chunks\` (at most 10,000 hashes per batch) are answered with those the \`parent\` snapshot lacks (\`missing\`); \`packs\` and \`manifest\` (the last batch) with a presigned PUT each, signing its \`Content-MD5\` (only for packs not stored yet). Send the bytes straight to the object store with exactly the headers given, then commit (commitWorkspaceSnapshot) with the answer's \`snapshotId\` before \`expiresAt\`. 501 \`unsupported\` when the backend cannot presign. ${FENCING_NOTE}`,
    auth: true,
    body: schemas.WorkspaceSnapshotStartRequest,
    headers: headers.write,
    answers: { 201: { body: schemas.WorkspaceSnapshotStart, description: 'started' } },
    problems: ['unsupported', 'fenced', ...WRITE_PROBLEMS],
    handle: async (c) => {
      const started = await snapshotsOf(c).startWorkspaceSnapshot(c.params.sessionId, c.params.name, c.body, {
        token: c.headers.fencingToken,
      });
      return json(201, { ...started, expiresAt: started.expiresAt.toISOString() });
    },
  }),
  route({
    method: 'GET',
    pattern: PATHS.workspaceSnapshots,
    operationId: 'listWorkspaceSnapshots',
    tag: 'workspaces',
    summary: "The workspace's snapshots, newest first",
    description: "The workspace's committed snapshots, newest first (one LIST per 1,000: no record is read).",
    auth: true,
    answers: { 200: schemas.WorkspaceSnapshots },
    handle: async (c) => {
      const list = await snapshotsOf(c).listWorkspaceSnapshots(c.params.sessionId, c.params.name);
      return json(200, {
        snapshots: list.map((s) => ({ snapshotId: s.snapshotId, createdAt: s.createdAt.toISOString() })),
      });
    },
  }),
  route({
    method: 'POST',
    pattern: PATHS.workspaceSnapshot,
    operationId: 'commitWorkspaceSnapshot',
    tag: 'workspaces',
    summary: 'Commit a pushed snapshot: packs and manifest checked, then recorded at once',
    description: `Commits the snapshot: every declared pack must be stored with its size (and MD5 where etags are MD5s), checked with one LIST per 1,000 packs, else 422 \`upload-mismatch\`; the manifest is read and validated (400 naming the field: a path with \`..\`, absolute or duplicate, a chunk outside its pack). Nothing is half committed: the snapshot exists once its record is written. The same snapshot id with the same body answers the snapshot again; with another body 409 \`commit-mismatch\`, nothing written. ${FENCING_NOTE}`,
    auth: true,
    body: schemas.WorkspaceSnapshotCommitRequest,
    headers: headers.write,
    answers: { 200: { body: schemas.WorkspaceSnapshot, description: 'committed (or committed before)' } },
    problems: ['unsupported', 'upload-mismatch', 'commit-mismatch', 'fenced', ...WRITE_PROBLEMS],
    handle: async (c) => {
      const { sessionId, name, snapshotId } = c.params;
      const info = await snapshotsOf(c).commitWorkspaceSnapshot(sessionId, name, snapshotId, c.body, {
        token: c.headers.fencingToken,
      });
      return json(200, snapshotJson(info));
    },
  }),
  route({
    method: 'GET',
    pattern: PATHS.workspaceSnapshot,
    operationId: 'getWorkspaceSnapshot',
    tag: 'workspaces',
    summary: 'A snapshot, with presigned GETs of its manifest and its packs (`latest`: the newest)',
    description:
      'The snapshot (`latest`: the newest), with a presigned GET of its gzip manifest and of each pack it references, before `expiresAt`; a pack GET honours `Range`, so one file is read as exactly its chunks. 501 `unsupported` when the backend cannot presign.',
    auth: true,
    answers: { 200: schemas.WorkspaceSnapshotDownload },
    problems: ['not-found', 'unsupported'],
    handle: async (c) => {
      const { sessionId, name, snapshotId } = c.params;
      const found = await snapshotsOf(c).getWorkspaceSnapshot(sessionId, name, snapshotId);
      if (!found) throw new HttpProblem('not-found', 'no such snapshot');
      return json(200, {
        ...snapshotJson(found),
        manifest: found.manifest,
        packUrls: found.packUrls,
        expiresAt: found.expiresAt.toISOString(),
      });
    },
  }),
  route({
    method: 'DELETE',
    pattern: PATHS.workspaceSnapshot,
    operationId: 'deleteWorkspaceSnapshot',
    tag: 'workspaces',
    summary: 'Delete a snapshot (its packs go with a sweep)',
    description: `Deletes the snapshot's record and manifest; a snapshot that does not exist answers 204 too. Its packs stay until a sweep finds them unreferenced. ${FENCING_NOTE}`,
    auth: true,
    headers: headers.write,
    answers: { 204: null },
    problems: ['unsupported', 'fenced', ...WRITE_PROBLEMS],
    handle: async (c) => {
      const { sessionId, name, snapshotId } = c.params;
      await snapshotsOf(c).deleteWorkspaceSnapshot(sessionId, name, snapshotId, {
        token: c.headers.fencingToken,
      });
      return noContent();
    },
  }),
];
