/** Sessions: list them, ask whether one exists, list its keys, delete one or all. */
import { PATHS } from '../../protocol/paths.js';
import { headers, queries, schemas } from '../../protocol/schemas.js';
import { FENCING_NOTE, json, noContent, route, WRITE_PROBLEMS } from './route.js';

export const SESSION_ROUTES = [
  route({
    method: 'GET',
    pattern: PATHS.sessions,
    operationId: 'listSessions',
    tag: 'sessions',
    summary: "List the caller's sessions",
    description:
      "A page of the caller's sessions, each with the time of its last write. Pass `nextCursor` as `cursor` to read the next page; it is null on the last one.",
    auth: true,
    query: queries.sessionPage,
    answers: { 200: schemas.SessionPage },
    handle: async (c) => {
      const { limit, cursor } = c.query;
      const page = await c.user.listSessionIds({
        ...(limit ? { limit } : {}),
        ...(cursor !== undefined ? { cursor } : {}),
      });
      return json(200, {
        sessions: page.sessions.map((s) => ({
          sessionId: s.sessionId,
          lastActivity: s.lastActivity.toISOString(),
        })),
        nextCursor: page.nextCursor,
      });
    },
  }),
  route({
    method: 'DELETE',
    pattern: PATHS.sessions,
    operationId: 'deleteAllSessions',
    tag: 'sessions',
    summary: 'Delete every session of the caller (requires all=true)',
    description:
      'Deletes every session of the caller and everything each one owns. The query must say `all=true`, so that no DELETE of the collection does it by accident.',
    auth: true,
    query: queries.deleteAll,
    answers: { 204: null },
    problems: [...WRITE_PROBLEMS],
    handle: async (c) => {
      await c.user.deleteAllSessions();
      return noContent();
    },
  }),
  route({
    method: 'HEAD',
    pattern: PATHS.session,
    operationId: 'sessionExists',
    tag: 'sessions',
    summary: 'Whether the session exists',
    description: 'Answers 200 when the session exists and 404 when it does not, without a body.',
    auth: true,
    answers: {
      200: { body: null, description: 'the session exists' },
      404: { body: null, description: 'no such session' },
    },
    handle: async (c) => ({
      status: (await c.user.exists(c.params.sessionId)) ? 200 : 404,
      headers: { 'cache-control': 'no-store' },
    }),
  }),
  route({
    method: 'GET',
    pattern: PATHS.keys,
    operationId: 'listKeys',
    tag: 'sessions',
    summary: "A page of the session's keys: its values and its lists, in UTF-8 order",
    description:
      "A page of the session's keys: `values` (each with its `etag`, the `size` of its JSON and `lastModified`) and `lists` (each with its `count`, `hash` and `lastModified`), each in the UTF-8 byte order of the key, filtered by `prefix` (a UTF-8 prefix of the key) and after `startAfter`; deleted lists and leftovers of an earlier incarnation of the session never appear. At most `limit` keys (1 to 1,000, default 1,000; a key that is both a value and a list counts once); a page may hold fewer: read on with `nextCursor` as `cursor` while there is one (absent on the last page). 404 `not-found` when the session does not exist, as for another user's session.\n\nCost: one LIST per 1,000 objects of the session, plus one GET per list and one HEAD per value answered. Keys that are not plain (`[A-Za-z0-9._-]`) are stored base64url-encoded, which keeps neither their order nor their prefixes: for those, `prefix` and `startAfter` (and so `cursor`) cost a LIST of the whole session, sorted and filtered in the function.",
    auth: true,
    query: queries.keys,
    answers: { 200: { body: schemas.KeyPage, description: "a page of the session's keys" } },
    handle: async (c) => {
      const { prefix, startAfter, limit, cursor } = c.query;
      const page = await c.user.listKeys(c.params.sessionId, {
        ...(prefix !== undefined ? { prefix } : {}),
        ...(startAfter !== undefined ? { startAfter } : {}),
        ...(limit !== undefined ? { limit } : {}),
        ...(cursor !== undefined ? { cursor } : {}),
      });
      return json(200, {
        values: page.values.map((v) => ({
          key: v.key,
          etag: v.etag,
          revision: v.revision,
          size: v.size,
          lastModified: v.lastModified.toISOString(),
        })),
        lists: page.lists.map((l) => ({
          key: l.key,
          count: l.count,
          hash: l.hash,
          lastModified: l.lastModified.toISOString(),
        })),
        ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
      });
    },
  }),
  route({
    method: 'DELETE',
    pattern: PATHS.session,
    operationId: 'deleteSession',
    tag: 'sessions',
    summary: 'Delete the session and everything it owns (also when absent)',
    description: `Deletes the session and everything it owns: values, lists and their archives, workspaces. A session that does not exist answers 204 too. ${FENCING_NOTE}`,
    auth: true,
    headers: headers.write,
    answers: { 204: null },
    problems: ['fenced', ...WRITE_PROBLEMS],
    handle: async (c) => {
      await c.user.delete(c.params.sessionId, { token: c.headers.fencingToken });
      return noContent();
    },
  }),
];
