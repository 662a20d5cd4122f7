/**
 * Direct transfers: workspaces (list, upload in one PUT or parts, download, delete) and single
 * values too large for a request body (uploaded, then committed as a save). The bytes go straight
 * between the caller and the object store; these routes only sign and check.
 */
import { PATHS } from '../../protocol/paths.js';
import { headers, schemas } from '../../protocol/schemas.js';
import type { WorkspaceInfo } from '../../store/types.js';
import { HttpProblem } from '../problems.js';
import { json, noContent, route } from './route.js';
import { saveConditions } from './state.js';

/** A workspace as JSON. */
function workspaceJson(w: WorkspaceInfo) {
  return {
    name: w.name,
    size: w.size,
    storageClass: w.storageClass,
    lastModified: w.lastModified.toISOString(),
    ...(w.contentEncoding ? { contentEncoding: w.contentEncoding } : {}),
  };
}

export const WORKSPACE_ROUTES = [
  route({
    method: 'POST',
    pattern: PATHS.valueUploads,
    summary: 'Start a direct upload of a value too large for a request body',
    auth: true,
    body: schemas.ValueUploadRequest,
    answers: { 201: schemas.ValueUpload },
    problems: ['unsupported'],
    handle: async (c) => {
      const started = await c.user.createValueUpload(c.params.sessionId, c.params.key, c.body);
      return json(201, { ...started, expiresAt: started.expiresAt.toISOString() });
    },
  }),
  route({
    method: 'POST',
    pattern: PATHS.valueUpload,
    summary: 'Commit an uploaded value as a save (If-Match, If-None-Match: *, Fencing-Token apply)',
    auth: true,
    headers: headers.save,
    answers: { 200: schemas.Etag },
    problems: ['not-found', 'precondition-failed', 'precondition-unsupported', 'fenced'],
    handle: async (c) => {
      const { sessionId, key, uploadId } = c.params;
      const { version } = await c.user.commitValueUpload(sessionId, key, uploadId, saveConditions(c.headers));
      return json(200, { etag: version }, { etag: `"${version}"` });
    },
  }),
  route({
    method: 'GET',
    pattern: PATHS.workspaces,
    summary: "The session's workspaces",
    auth: true,
    answers: { 200: schemas.Workspaces },
    handle: async (c) => {
      const list = await c.user.listWorkspaces(c.params.sessionId);
      return json(200, { workspaces: list.map(workspaceJson) });
    },
  }),
  route({
    method: 'POST',
    pattern: PATHS.workspaceUploads,
    summary: 'Start a direct upload of a workspace: one presigned PUT, or presigned parts',
    auth: true,
    body: schemas.WorkspaceUploadRequest,
    headers: headers.write,
    answers: { 201: schemas.WorkspaceUpload },
    problems: ['unsupported', 'fenced'],
    handle: async (c) => {
      const upload = await c.user.createWorkspaceUpload(c.params.sessionId, c.params.name, c.body, {
        token: c.headers.fencingToken,
      });
      return json(201, { ...upload, expiresAt: upload.expiresAt.toISOString() });
    },
  }),
  route({
    method: 'POST',
    pattern: PATHS.workspaceUpload,
    summary: 'Complete an upload: sizes and digests are checked against what was declared',
    auth: true,
    headers: headers.write,
    answers: { 200: schemas.Workspace },
    problems: ['not-found', 'upload-mismatch', 'fenced'],
    handle: async (c) => {
      const { sessionId, name, uploadId } = c.params;
      const info = await c.user.completeWorkspaceUpload(sessionId, name, uploadId, {
        token: c.headers.fencingToken,
      });
      return json(200, workspaceJson(info));
    },
  }),
  route({
    method: 'GET',
    pattern: PATHS.workspace,
    summary: 'A presigned URL to download the workspace; 202 while an archived one is restored',
    auth: true,
    answers: { 200: schemas.WorkspaceDownload, 202: schemas.WorkspaceRestoring },
    problems: ['not-found', 'unsupported'],
    handle: async (c) => {
      const found = await c.user.getWorkspace(c.params.sessionId, c.params.name);
      if (!found) throw new HttpProblem('not-found', 'no such workspace');
      if (found.status === 'restoring') {
        return json(
          202,
          { ...workspaceJson(found), status: 'restoring', detail: 'archived; a restore is in progress' },
          { 'retry-after': '60' },
        );
      }
      return json(200, {
        ...workspaceJson(found),
        download: found.download,
        expiresAt: found.expiresAt.toISOString(),
        status: 'ready',
      });
    },
  }),
  route({
    method: 'DELETE',
    pattern: PATHS.workspace,
    summary: 'Delete a workspace (and its unfinished upload)',
    auth: true,
    headers: headers.write,
    answers: { 204: null },
    problems: ['fenced'],
    handle: async (c) => {
      await c.user.deleteWorkspace(c.params.sessionId, c.params.name, { token: c.headers.fencingToken });
      return noContent();
    },
  }),
];
