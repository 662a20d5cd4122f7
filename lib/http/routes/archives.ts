/** Archives of a list: list them, read a page of one (202 while an archived one is restored). */
import { PATHS } from '../../protocol/paths.js';
import { queries, schemas } from '../../protocol/schemas.js';
import { HttpProblem } from '../problems.js';
import { fitPage, json, pageOf, route } from './route.js';

export const ARCHIVE_ROUTES = [
  route({
    method: 'GET',
    pattern: PATHS.archives,
    operationId: 'listArchives',
    tag: 'archives',
    summary: 'The archives of a list',
    description:
      'The archives of the list: what it held before each rewrite and before it was deleted, and the items each truncate removed, each with its id, `count`, `hash` (of the archived items, as getArchive pages them from item 0), the time it was archived, and `offset`: the list position of its first item (0 for a whole list, the kept count for a truncate).',
    auth: true,
    answers: { 200: schemas.Archives },
    handle: async (c) => {
      const archives = await c.user.listArchives(c.params.sessionId, c.params.key);
      return json(200, {
        archives: archives.map((a) => ({
          archiveId: a.archiveId,
          count: a.count,
          hash: a.hash,
          archivedAt: a.archivedAt.toISOString(),
          offset: a.offset,
        })),
      });
    },
  }),
  route({
    method: 'GET',
    pattern: PATHS.archive,
    operationId: 'getArchive',
    tag: 'archives',
    summary: 'A page of an archived list',
    description:
      'A page of an archive from `offset` (at most `limit` items, and cut to fit an answer), with its `count` and `hash`. While an archive in a cold storage class is restored, 202 with Retry-After.',
    auth: true,
    query: queries.page,
    answers: {
      200: { body: schemas.ListPage, description: 'a page of the archive' },
      202: {
        body: schemas.Restoring,
        description: 'archived in a cold class: a restore is in progress; ask again after Retry-After',
        headers: ['Retry-After'],
      },
    },
    problems: ['not-found'],
    handle: async (c) => {
      const { sessionId, key, archiveId } = c.params;
      const page = await c.user.getArchive(sessionId, key, archiveId, pageOf(c.query));
      if (!page) throw new HttpProblem('not-found', 'no such archive');
      return json(200, fitPage(page, c.limit, c.query.last === undefined ? 'old' : 'new'));
    },
  }),
];
