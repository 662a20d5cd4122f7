/** Sessions: list them, ask whether one exists, delete one or all. */
import { PATHS } from '../../protocol/paths.js';
import { headers, queries, schemas } from '../../protocol/schemas.js';
import { json, noContent, route, WRITE_PROBLEMS } from './route.js';

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
    method: 'DELETE',
    pattern: PATHS.session,
    operationId: 'deleteSession',
    tag: 'sessions',
    summary: 'Delete the session and everything it owns (also when absent)',
    description:
      'Deletes the session and everything it owns: values, lists and their archives, workspaces. A session that does not exist answers 204 too. With `Fencing-Token`, refused (409 `fenced`) when a newer token has been seen.',
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
