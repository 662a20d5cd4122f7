/** Sessions: list them, ask whether one exists, delete one or all. */
import { PATHS } from '../../protocol/paths.js';
import { headers, queries, schemas } from '../../protocol/schemas.js';
import { json, noContent, route } from './route.js';

export const SESSION_ROUTES = [
  route({
    method: 'GET',
    pattern: PATHS.sessions,
    summary: "List the caller's sessions",
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
    summary: 'Delete every session of the caller (requires all=true)',
    auth: true,
    query: queries.deleteAll,
    answers: { 204: null },
    handle: async (c) => {
      await c.user.deleteAllSessions();
      return noContent();
    },
  }),
  route({
    method: 'HEAD',
    pattern: PATHS.session,
    summary: 'Whether the session exists',
    auth: true,
    answers: { 200: null, 404: null },
    handle: async (c) => ({
      status: (await c.user.exists(c.params.sessionId)) ? 200 : 404,
      headers: { 'cache-control': 'no-store' },
    }),
  }),
  route({
    method: 'DELETE',
    pattern: PATHS.session,
    summary: 'Delete the session and everything it owns (also when absent)',
    auth: true,
    headers: headers.write,
    answers: { 204: null },
    problems: ['fenced'],
    handle: async (c) => {
      await c.user.delete(c.params.sessionId, { token: c.headers.fencingToken });
      return noContent();
    },
  }),
];
