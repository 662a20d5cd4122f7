/** Single values: save (optionally conditional), read (303 to a URL when too large), delete. */
import { PATHS } from '../../protocol/paths.js';
import { headers, schemas } from '../../protocol/schemas.js';
import type { SaveOptions } from '../../store/types.js';
import { HttpProblem } from '../problems.js';
import { json, noContent, route } from './route.js';

/** The conditions of a save from its parsed headers: If-Match, If-None-Match: * and Fencing-Token. */
export function saveConditions(h: {
  ifMatch?: string | undefined;
  ifNoneMatch?: true | undefined;
  fencingToken?: number | undefined;
}): SaveOptions {
  return {
    token: h.fencingToken,
    ...(h.ifMatch !== undefined ? { ifVersion: h.ifMatch } : {}),
    ...(h.ifNoneMatch ? { ifAbsent: true } : {}),
  };
}

export const STATE_ROUTES = [
  route({
    method: 'PUT',
    pattern: PATHS.value,
    summary: 'Save a single value (optionally If-Match or If-None-Match: *)',
    auth: true,
    body: schemas.Value,
    headers: headers.save,
    answers: { 200: schemas.Etag },
    problems: ['precondition-failed', 'precondition-unsupported', 'fenced'],
    handle: async (c) => {
      const { sessionId, key } = c.params;
      const { version } = await c.user.save(sessionId, key, c.body, saveConditions(c.headers));
      return json(200, { etag: version }, { etag: `"${version}"` });
    },
  }),
  route({
    method: 'GET',
    pattern: PATHS.value,
    summary: 'Read a single value (303 to a presigned URL when it is larger than an answer may be)',
    auth: true,
    answers: { 200: schemas.Value, 202: schemas.Restoring, 303: schemas.ValueLocation },
    problems: ['not-found'],
    handle: async (c) => {
      const { sessionId, key } = c.params;
      const found = await c.user.getVersioned(sessionId, key);
      if (!found) throw new HttpProblem('not-found', 'no such value');
      const body = JSON.stringify(found.value);
      if (Buffer.byteLength(body) > c.limit) {
        // Too large for an answer: a URL to read it straight from the object store.
        const located = await c.user.locateValue(sessionId, key);
        if (!located) throw new HttpProblem('not-found', 'no such value');
        return json(
          303,
          {
            etag: located.version,
            size: located.size,
            download: located.download,
            expiresAt: located.expiresAt.toISOString(),
          },
          { location: located.download.url, etag: `"${located.version}"` },
        );
      }
      return {
        status: 200,
        headers: {
          'content-type': 'application/json',
          etag: `"${found.version}"`,
          'cache-control': 'no-store',
        },
        body,
      };
    },
  }),
  route({
    method: 'DELETE',
    pattern: PATHS.value,
    summary: 'Delete a single value',
    auth: true,
    headers: headers.write,
    answers: { 204: null },
    problems: ['fenced'],
    handle: async (c) => {
      await c.user.deleteKey(c.params.sessionId, c.params.key, { token: c.headers.fencingToken });
      return noContent();
    },
  }),
];
