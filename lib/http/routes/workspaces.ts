/**
 * Direct transfers: workspaces (list, upload in one PUT or parts, download, delete) and single
 * values too large for a request body (uploaded, then committed as a save). The bytes go straight
 * between the caller and the object store; these routes only sign and check.
 */

import type { WorkspaceInfo } from '../../contract/types.js';
import { PATHS } from '../../protocol/paths.js';
import { headers, schemas } from '../../protocol/schemas.js';
import { HttpProblem, restoring } from '../problems.js';
import { FENCING_NOTE, json, noContent, route, WRITE_PROBLEMS } from './route.js';
import { SAVED_ANSWER, saveConditions, saved } from './state.js';

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
    operationId: 'startValueUpload',
    tag: 'uploads',
    summary: 'Start a direct upload of a value too large for a request body',
    description:
      'Starts a direct upload of a value too large for a request body: answers a presigned request to send exactly `size` bytes of JSON, with that MD5, straight to the object store, and the `uploadId` to commit it with (commitValueUpload) before `expiresAt`. 501 `unsupported` when the backend cannot presign.',
    auth: true,
    body: schemas.ValueUploadRequest,
    answers: { 201: { body: schemas.ValueUpload, description: 'started' } },
    problems: ['unsupported', ...WRITE_PROBLEMS],
    handle: async (c) => {
      const started = await c.user.createValueUpload(c.params.sessionId, c.params.key, c.body);
      return json(201, { ...started, expiresAt: started.expiresAt.toISOString() });
    },
  }),
  route({
    method: 'POST',
    pattern: PATHS.valueUpload,
    operationId: 'commitValueUpload',
    tag: 'uploads',
    summary:
      'Commit an uploaded value as a save (If-Match, If-None-Match: *, If-Revision, Fencing-Token apply)',
    description:
      'Saves the uploaded bytes as the value of the key, on the same conditions as putValue (`If-Match`, `If-None-Match: *`, `If-Revision`, `Fencing-Token`), and answers its new version and revision. 404 when the upload is unknown or expired.',
    auth: true,
    headers: headers.save,
    answers: SAVED_ANSWER,
    problems: ['not-found', 'precondition-failed', 'precondition-unsupported', 'fenced', ...WRITE_PROBLEMS],
    handle: async (c) => {
      const { sessionId, key, uploadId } = c.params;
      return saved(await c.user.commitValueUpload(sessionId, key, uploadId, saveConditions(c.headers)));
    },
  }),
  route({
    method: 'GET',
    pattern: PATHS.workspaces,
    operationId: 'listWorkspaces',
    tag: 'workspaces',
    summary: "The session's workspaces",
    description: "The session's workspaces, each with its size, storage class and last modification.",
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
    operationId: 'startWorkspaceUpload',
    tag: 'uploads',
    summary: 'Start a direct upload of a workspace: one presigned PUT, or presigned parts',
    description: `Starts a direct upload of the workspace: one presigned PUT of \`size\` bytes, or, with \`parts\`, one presigned PUT per part (each but the last at least 5 MiB). Send the bytes straight to the object store with exactly the headers given, then complete it (completeWorkspaceUpload) before \`expiresAt\`. 501 \`unsupported\` when the backend cannot presign. ${FENCING_NOTE}`,
    auth: true,
    body: schemas.WorkspaceUploadRequest,
    headers: headers.write,
    answers: { 201: { body: schemas.WorkspaceUpload, description: 'started' } },
    problems: ['unsupported', 'fenced', ...WRITE_PROBLEMS],
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
    operationId: 'completeWorkspaceUpload',
    tag: 'uploads',
    summary: 'Complete an upload: sizes and digests are checked against what was declared',
    description: `Completes the upload and answers the workspace. What the object store received must have the sizes and digests declared when it started, else 422 \`upload-mismatch\`. 404 when the upload is unknown or expired. ${FENCING_NOTE}`,
    auth: true,
    headers: headers.write,
    answers: { 200: { body: schemas.Workspace, description: 'completed' } },
    problems: ['not-found', 'upload-mismatch', 'fenced', ...WRITE_PROBLEMS],
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
    operationId: 'getWorkspace',
    tag: 'workspaces',
    summary: 'A presigned URL to download the workspace; 202 while an archived one is restored',
    description:
      'The workspace, with a presigned request (`download`) to read its bytes straight from the object store before `expiresAt`. While a workspace in the archive class is restored, 202 with Retry-After. 501 `unsupported` when the backend cannot presign.',
    auth: true,
    answers: {
      200: { body: schemas.WorkspaceDownload, description: 'ready to download' },
      202: {
        body: schemas.WorkspaceRestoring,
        description: 'archived: a restore is in progress; ask again after Retry-After',
        headers: ['Retry-After'],
      },
    },
    problems: ['not-found', 'unsupported'],
    handle: async (c) => {
      const found = await c.user.getWorkspace(c.params.sessionId, c.params.name);
      if (!found) throw new HttpProblem('not-found', 'no such workspace');
      if (found.status === 'restoring')
        return restoring('archived; a restore is in progress', workspaceJson(found));
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
    operationId: 'deleteWorkspace',
    tag: 'workspaces',
    summary: 'Delete a workspace (and its unfinished upload)',
    description: `Deletes the workspace and its unfinished upload, if any; a workspace that does not exist answers 204 too. ${FENCING_NOTE}`,
    auth: true,
    headers: headers.write,
    answers: { 204: null },
    problems: ['fenced', ...WRITE_PROBLEMS],
    handle: async (c) => {
      await c.user.deleteWorkspace(c.params.sessionId, c.params.name, { token: c.headers.fencingToken });
      return noContent();
    },
  }),
];
