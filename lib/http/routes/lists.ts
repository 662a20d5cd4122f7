/** Lists: save whole, append items at the expected count, read a page, delete (archived first). */
import { PATHS } from '../../protocol/paths.js';
import { headers, queries, schemas } from '../../protocol/schemas.js';
import { HttpProblem } from '../problems.js';
import { fitPage, json, noContent, pageOf, route, WRITE_PROBLEMS } from './route.js';

export const LIST_ROUTES = [
  route({
    method: 'PUT',
    pattern: PATHS.list,
    operationId: 'saveList',
    tag: 'lists',
    summary: 'Save the whole list: unchanged, append, or (archived) rewrite',
    description:
      'Saves the whole list, and answers what that did with the new `count` and `hash`: `created` when there was none, `unchanged` for the same items, `appended` when the items extend the stored ones (only the new ones are written), else `rewritten`, after the old list is archived. With `Fencing-Token`, refused (409 `fenced`) when a newer token has been seen.',
    auth: true,
    body: schemas.WholeList,
    headers: headers.write,
    answers: { 200: { body: schemas.ListWrite, description: 'saved' } },
    problems: ['fenced', ...WRITE_PROBLEMS],
    handle: async (c) =>
      json(
        200,
        await c.user.saveList(c.params.sessionId, c.params.key, c.body, { token: c.headers.fencingToken }),
      ),
  }),
  route({
    method: 'POST',
    pattern: PATHS.listItems,
    operationId: 'appendListItems',
    tag: 'lists',
    summary: 'Append 1 to 1,000 items at the expected count',
    description:
      "Appends the items when the list has `expectedCount` items (and, with `expectedHash`, that chain hash); an absent list has 0 items. A retry of an append that has landed answers `unchanged` (the list then ends with these items, from `expectedCount` on). Otherwise 409 `append-conflict` with the list's `count` and `hash`, and nothing is written.\n\n`Idempotency-Key` (1 to 64 letters, digits or `._:-`) names one logical append: send the same key with every retry of it. It is validated (a malformed one is 400 `invalid-request` with `field` `Idempotency-Key`) but not used yet: the server keeps no keys yet, and knows a retried append by its items alone.",
    auth: true,
    body: schemas.AppendRequest,
    headers: headers.append,
    answers: { 200: { body: schemas.ListWrite, description: 'appended' } },
    problems: ['append-conflict', 'fenced', ...WRITE_PROBLEMS],
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
    operationId: 'getList',
    tag: 'lists',
    summary: 'Read a page of the list (If-Match: "<hash>" to read only that version)',
    description:
      'A page of the list from `offset` (at most `limit` items, and cut to fit an answer), with the whole list\'s `count` and `hash` (the ETag header is the hash). An absent list reads as empty. With `If-Match: "<hash>"`, 412 `precondition-failed` with `currentHash` unless the list has that hash.',
    auth: true,
    query: queries.page,
    headers: headers.listRead,
    answers: { 200: { body: schemas.ListPage, description: 'a page of the list', headers: ['ETag'] } },
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
    operationId: 'deleteList',
    tag: 'lists',
    summary: 'Archive the list, then remove it',
    description:
      'Archives the list (see listArchives), then removes it; a list that does not exist answers 204 too. With `Fencing-Token`, refused (409 `fenced`) when a newer token has been seen.',
    auth: true,
    headers: headers.write,
    answers: { 204: null },
    problems: ['fenced', ...WRITE_PROBLEMS],
    handle: async (c) => {
      await c.user.deleteList(c.params.sessionId, c.params.key, { token: c.headers.fencingToken });
      return noContent();
    },
  }),
];
