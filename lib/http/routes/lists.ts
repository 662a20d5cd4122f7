/** Lists: save whole, append items at the expected count, read a page, delete (archived first). */
import { PATHS } from '../../protocol/paths.js';
import { headers, queries, schemas } from '../../protocol/schemas.js';
import { HttpProblem } from '../problems.js';
import { fitPage, json, noContent, pageOf, route } from './route.js';

export const LIST_ROUTES = [
  route({
    method: 'PUT',
    pattern: PATHS.list,
    summary: 'Save the whole list: unchanged, append, or (archived) rewrite',
    auth: true,
    body: schemas.WholeList,
    headers: headers.write,
    answers: { 200: schemas.ListWrite },
    problems: ['fenced'],
    handle: async (c) =>
      json(
        200,
        await c.user.saveList(c.params.sessionId, c.params.key, c.body, { token: c.headers.fencingToken }),
      ),
  }),
  route({
    method: 'POST',
    pattern: PATHS.listItems,
    summary: 'Append 1 to 1,000 items at the expected count',
    auth: true,
    body: schemas.AppendRequest,
    headers: headers.write,
    answers: { 200: schemas.ListWrite },
    problems: ['append-conflict', 'fenced'],
    handle: async (c) => {
      const { items, expectedCount, expectedHash } = c.body;
      const result = await c.user.appendList(c.params.sessionId, c.params.key, items, {
        expectedCount,
        ...(expectedHash ? { expectedHash } : {}),
        token: c.headers.fencingToken,
      });
      return json(200, result);
    },
  }),
  route({
    method: 'GET',
    pattern: PATHS.list,
    summary: 'Read a page of the list (If-Match: "<hash>" to read only that version)',
    auth: true,
    query: queries.page,
    headers: headers.listRead,
    answers: { 200: schemas.ListPage },
    problems: ['precondition-failed'],
    handle: async (c) => {
      const page = await c.user.getList(c.params.sessionId, c.params.key, pageOf(c.query));
      const expected = c.headers.ifMatch;
      if (expected !== undefined && expected !== '*' && expected !== page.hash) {
        throw new HttpProblem('precondition-failed', 'the list has another hash', { currentHash: page.hash });
      }
      return json(
        200,
        { items: fitPage(page.items, c.limit), count: page.count, hash: page.hash },
        { etag: `"${page.hash}"` },
      );
    },
  }),
  route({
    method: 'DELETE',
    pattern: PATHS.list,
    summary: 'Archive the list, then remove it',
    auth: true,
    headers: headers.write,
    answers: { 204: null },
    problems: ['fenced'],
    handle: async (c) => {
      await c.user.deleteList(c.params.sessionId, c.params.key, { token: c.headers.fencingToken });
      return noContent();
    },
  }),
];
