/** Single values: save (optionally conditional), read (303 to a URL when too large), delete. */

import type { SaveOptions, ValueWritten } from '../../contract/types.js';
import { PATHS } from '../../protocol/paths.js';
import { headers, REVISION_HEADER, schemas } from '../../protocol/schemas.js';
import { HttpProblem } from '../problems.js';
import type { HttpResponse } from '../types.js';
import { FENCING_NOTE, json, noContent, noneMatch, notModified, route, WRITE_PROBLEMS } from './route.js';

/** The conditions of a save from its parsed headers: If-Match, If-None-Match: *, If-Revision and Fencing-Token. */
export function saveConditions(h: {
  ifMatch?: string | undefined;
  ifNoneMatch?: true | undefined;
  ifRevision?: number | undefined;
  fencingToken?: number | undefined;
}): SaveOptions {
  return {
    token: h.fencingToken,
    ...(h.ifMatch !== undefined ? { ifVersion: h.ifMatch } : {}),
    ...(h.ifNoneMatch ? { ifAbsent: true } : {}),
    ...(h.ifRevision !== undefined ? { ifRevision: h.ifRevision } : {}),
  };
}

/** A value's version and revision as answer headers. */
export const versionHeaders = (v: { version: string; revision: number }) => ({
  etag: `"${v.version}"`,
  [REVISION_HEADER.toLowerCase()]: String(v.revision),
});

/** The answer of a save: its new version and revision, in the body and the headers. */
export const saved = (v: ValueWritten): HttpResponse =>
  json(200, { etag: v.version, revision: v.revision }, versionHeaders(v));

/** The save answer of the OpenAPI document. */
export const SAVED_ANSWER = {
  200: { body: schemas.Saved, description: 'saved', headers: ['ETag', REVISION_HEADER] },
} as const;

export const STATE_ROUTES = [
  route({
    method: 'PUT',
    pattern: PATHS.value,
    operationId: 'putValue',
    tag: 'state',
    summary: 'Save a single value (optionally If-Match, If-None-Match: * or If-Revision)',
    description: `Saves any I-JSON value under the key, and answers its new version (\`etag\`, also the ETag header) and revision (\`revision\`, also Agent-State-Revision: 1 on create, +1 on every save). \`If-Match: "<etag>"\` saves only over that version, \`If-Revision: <n>\` only over that revision and \`If-None-Match: *\` only when there is none: otherwise 412 \`precondition-failed\` with \`currentEtag\` and \`currentRevision\`. When the backend cannot evaluate the condition (OSS: If-Match, If-Revision), 501 \`precondition-unsupported\`. ${FENCING_NOTE} A refused save writes nothing.`,
    auth: true,
    body: schemas.Value,
    headers: headers.save,
    answers: SAVED_ANSWER,
    problems: ['precondition-failed', 'precondition-unsupported', 'fenced', ...WRITE_PROBLEMS],
    handle: async (c) => {
      const { sessionId, key } = c.params;
      return saved(await c.user.save(sessionId, key, c.body, saveConditions(c.headers)));
    },
  }),
  route({
    method: 'GET',
    pattern: PATHS.value,
    operationId: 'getValue',
    tag: 'state',
    summary: 'Read a single value (303 to a presigned URL when it is larger than an answer may be)',
    description:
      'The value as it was saved, with its version in the ETag header and its revision in Agent-State-Revision. With `If-Match: "<etag>"`, 412 `precondition-failed` with `currentEtag` unless the value has that version (evaluated first, RFC 9110). With `If-None-Match: "<etag>"` (or `W/"<etag>"`, a list of them, or `*`), 304 without a body when the value still has that version. A value larger than an answer may be is answered 303: `Location`, and the body\'s `download`, is a presigned URL to read it straight from the object store. While an archived value is restored, 202 with Retry-After. HEAD answers the same without the body (headValue).',
    auth: true,
    head: {
      operationId: 'headValue',
      summary: "A single value's headers (ETag, Content-Type, Content-Length) without its body",
      description:
        'What GET answers, without the body: 200 with the version in ETag and the size of the JSON body in Content-Length (Function Compute sets Content-Length itself), 304 for a matching `If-None-Match`, 303 with Location for a value larger than an answer may be, and the problem headers (no body) of a 404 when there is no such value. Never compressed.',
    },
    headers: headers.read,
    answers: {
      200: { body: schemas.Value, description: 'the value', headers: ['ETag', REVISION_HEADER] },
      304: {
        body: null,
        description: 'not modified: If-None-Match names the current version (no body)',
        headers: ['ETag', REVISION_HEADER],
      },
      202: {
        body: schemas.Restoring,
        description: 'archived: a restore is in progress; ask again after Retry-After',
        headers: ['Retry-After'],
      },
      303: {
        body: schemas.ValueLocation,
        description: 'too large for an answer: read it from the presigned URL in Location',
        headers: ['Location', 'ETag', REVISION_HEADER],
      },
    },
    problems: ['not-found', 'precondition-failed'],
    handle: async (c) => {
      const { sessionId, key } = c.params;
      const found = await c.user.getVersioned(sessionId, key);
      const { ifMatch } = c.headers;
      // If-Match first (RFC 9110 13.2.2): a value without that version is 412, an absent one too.
      if (ifMatch !== undefined && (found === undefined || (ifMatch !== '*' && ifMatch !== found.version)))
        throw new HttpProblem('precondition-failed', 'the value has another version', {
          currentEtag: found?.version ?? null,
        });
      if (!found) throw new HttpProblem('not-found', 'no such value');
      if (noneMatch(c.headers.ifNoneMatch, found.version)) {
        const answer = notModified(found.version);
        return { ...answer, headers: { ...answer.headers, ...versionHeaders(found) } };
      }
      const body = JSON.stringify(found.value);
      if (Buffer.byteLength(body) > c.limit) {
        // Too large for an answer: a URL to read it straight from the object store.
        const located = await c.user.locateValue(sessionId, key);
        if (!located) throw new HttpProblem('not-found', 'no such value');
        return json(
          303,
          {
            etag: located.version,
            revision: located.revision,
            size: located.size,
            download: located.download,
            expiresAt: located.expiresAt.toISOString(),
          },
          { location: located.download.url, ...versionHeaders(located) },
        );
      }
      return {
        status: 200,
        headers: {
          'content-type': 'application/json',
          ...versionHeaders(found),
          'cache-control': 'no-store',
        },
        body,
      };
    },
  }),
  route({
    method: 'DELETE',
    pattern: PATHS.value,
    operationId: 'deleteValue',
    tag: 'state',
    summary: 'Delete a single value',
    description: `Deletes the value; a value that does not exist answers 204 too. ${FENCING_NOTE}`,
    auth: true,
    headers: headers.write,
    answers: { 204: null },
    problems: ['fenced', ...WRITE_PROBLEMS],
    handle: async (c) => {
      await c.user.deleteKey(c.params.sessionId, c.params.key, { token: c.headers.fencingToken });
      return noContent();
    },
  }),
];
