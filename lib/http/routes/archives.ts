/** Archives of a list: list them, read a page of one (202 while an archived one is restored). */
import { PATHS } from '../../protocol/paths.js';
import { queries, schemas } from '../../protocol/schemas.js';
import { HttpProblem } from '../problems.js';
import { fitPage, json, pageOf, route } from './route.js';

export const ARCHIVE_ROUTES = [
  route({
    method: 'GET',
    pattern: PATHS.archives,
    summary: 'The archives of a list',
    auth: true,
    answers: { 200: schemas.Archives },
    handle: async (c) => {
      const archives = await c.user.listArchives(c.params.sessionId, c.params.key);
      return json(200, { archives: archives.map((a) => ({ ...a, archivedAt: a.archivedAt.toISOString() })) });
    },
  }),
  route({
    method: 'GET',
    pattern: PATHS.archive,
    summary: 'A page of an archived list',
    auth: true,
    query: queries.page,
    answers: { 200: schemas.ListPage, 202: schemas.Restoring },
    problems: ['not-found'],
    handle: async (c) => {
      const { sessionId, key, archiveId } = c.params;
      const page = await c.user.getArchive(sessionId, key, archiveId, pageOf(c.query));
      if (!page) throw new HttpProblem('not-found', 'no such archive');
      return json(200, { items: fitPage(page.items, c.limit), count: page.count, hash: page.hash });
    },
  }),
];
