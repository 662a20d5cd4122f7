/**
 * Lists: save whole, append items at the expected count, truncate to the first items (the removed
 * ones archived), read a page, delete (archived first).
 */

import { chainHash } from '../../contract/hash.js';
import { PATHS } from '../../protocol/paths.js';
import { headers, queries, schemas } from '../../protocol/schemas.js';
import { HttpProblem } from '../problems.js';
import {
  FENCING_NOTE,
  fitPage,
  json,
  noContent,
  noneMatch,
  notModified,
  pageOf,
  route,
  WRITE_PROBLEMS,
} from './route.js';

export const LIST_ROUTES = [
  route({
    method: 'PUT',
    pattern: PATHS.list,
    operationId: 'saveList',
    tag: 'lists',
    summary: 'Save the whole list: unchanged, append, or (archived) rewrite',
    description: `Saves the whole list, and answers what that did with the new \`count\` and \`hash\`: \`created\` when there was none, \`unchanged\` for the same items, \`appended\` when the items extend the stored ones (only the new ones are written), else \`rewritten\`, after the old list is archived. With \`If-Match: "<hash>"\` (the hash the caller last saw; the typed client sends it), 412 \`precondition-failed\` with \`currentHash\` when the list has another one, and nothing is written. ${FENCING_NOTE}`,
    auth: true,
    body: schemas.WholeList,
    headers: headers.listSave,
    answers: { 200: { body: schemas.ListWrite, description: 'saved' } },
    problems: ['precondition-failed', 'fenced', ...WRITE_PROBLEMS],
    handle: async (c) => {
      const { ifMatch, fencingToken } = c.headers;
      return json(
        200,
        await c.user.saveList(c.params.sessionId, c.params.key, c.body, {
          token: fencingToken,
          ...(ifMatch !== undefined && ifMatch !== '*' ? { ifHash: ifMatch } : {}),
        }),
      );
    },
  }),
  route({
    method: 'POST',
    pattern: PATHS.listItems,
    operationId: 'appendListItems',
    tag: 'lists',
    summary: 'Append 1 to 1,000 items at the expected count',
    description:
      "Appends the items when the list has `expectedCount` items (and, with `expectedHash`, that chain hash); an absent list has 0 items. A retry of an append that has landed answers `unchanged` (the list then ends with these items, from `expectedCount` on). Otherwise 409 `append-conflict` with the list's `count` and `hash`, and nothing is written.\n\n`Idempotency-Key` (1 to 64 letters, digits or `._:-`) names one logical append: send the same key with every retry of it. A retry whose key the list records (its last 64 appends) answers the first answer again, even after other appends, and writes nothing; the key is bound to the request (its items, `expectedCount` and `expectedHash`): the same key with another request is 422 `idempotency-key-reused`, nothing written. A malformed key is 400 `invalid-request` with `field` `Idempotency-Key`.",
    auth: true,
    body: schemas.AppendRequest,
    headers: headers.append,
    answers: { 200: { body: schemas.ListWrite, description: 'appended' } },
    problems: ['append-conflict', 'fenced', 'idempotency-key-reused', ...WRITE_PROBLEMS],
    handle: async (c) => {
      const { items, expectedCount, expectedHash } = c.body;
      const result = await c.user.appendList(c.params.sessionId, c.params.key, items, {
        expectedCount,
        ...(expectedHash ? { expectedHash } : {}),
        ...(c.headers.idempotencyKey ? { writeId: c.headers.idempotencyKey } : {}),
        token: c.headers.fencingToken,
      });
      return json(200, result);
    },
  }),
  route({
    method: 'POST',
    pattern: PATHS.listTruncate,
    operationId: 'truncateList',
    tag: 'lists',
    summary: 'Keep the first count items of the list (the removed ones archived)',
    description: `Keeps the first \`count\` items of the list when it has the chain hash \`expectedHash\`, and archives only the items it removes (the archive's \`offset\` is \`count\`; see listArchives); answers \`truncated\` with the new \`count\` and \`hash\`, or \`unchanged\` when \`count\` is the list's count. Item positions after \`count\` are reused by later appends; archive ids are not. 412 \`precondition-failed\` with \`currentHash\` when the list has another hash; 400 \`invalid-request\` (\`field\` \`count\`, with \`count\` and \`currentCount\`) when it has fewer than \`count\` items; an absent list has 0 items and the empty hash. A refused truncate writes nothing. ${FENCING_NOTE}\n\n\`Idempotency-Key\` (1 to 64 letters, digits or \`._:-\`) names one logical truncate: send the same key with every retry of it. A retry whose key the list records answers the first answer again and writes nothing; the same key with another \`count\` or \`expectedHash\` is 422 \`idempotency-key-reused\`, nothing written.`,
    auth: true,
    body: schemas.TruncateRequest,
    headers: headers.truncate,
    answers: { 200: { body: schemas.ListWrite, description: 'truncated (or unchanged)' } },
    problems: ['precondition-failed', 'fenced', 'idempotency-key-reused', ...WRITE_PROBLEMS],
    handle: async (c) => {
      const { count, expectedHash } = c.body;
      const result = await c.user.truncateList(c.params.sessionId, c.params.key, {
        count,
        expectedHash,
        ...(c.headers.idempotencyKey ? { writeId: c.headers.idempotencyKey } : {}),
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
    summary: 'Read a page of the list (If-Match to read only that version, If-None-Match for 304)',
    description:
      'A page of the list from `offset` (at most `limit` items), or its `last` items (not with `offset` or `limit`), with the whole list\'s `count` and `hash` (the ETag header is the hash), the page\'s `offset` and `baseHash` (the chain hash before its first item). A page may hold fewer items than asked: cut to fit an answer (from its new end; for `last`, from its old end), or at the end of a stored segment; read on from `offset` + the items it holds. An absent list reads as empty. With `If-Match: "<hash>"`, 412 `precondition-failed` with `currentHash` unless the list has that hash. With `If-None-Match: "<hash>"` (the ETag of an earlier read, whatever page it asked for; `*` matches any list), 304 without a body when the list still has that hash.',
    auth: true,
    query: queries.page,
    headers: headers.listRead,
    answers: {
      200: { body: schemas.ListPage, description: 'a page of the list', headers: ['ETag'] },
      304: {
        body: null,
        description: 'not modified: If-None-Match names the hash the list still has (no body)',
        headers: ['ETag'],
      },
      303: {
        body: schemas.ListItemLocation,
        description:
          "the page's first item alone is larger than an answer may be: read it from the presigned URL in Location (the item at `offset`; read on from `offset` + 1)",
        headers: ['Location', 'ETag'],
      },
    },
    problems: ['precondition-failed'],
    handle: async (c) => {
      const page = await c.user.getList(c.params.sessionId, c.params.key, pageOf(c.query));
      const expected = c.headers.ifMatch;
      if (expected !== undefined && expected !== '*' && expected !== page.hash) {
        throw new HttpProblem('precondition-failed', 'the list has another hash', { currentHash: page.hash });
      }
      // After If-Match (RFC 9110 13.2.2); an absent list reads as empty, so `*` always matches.
      if (noneMatch(c.headers.ifNoneMatch, page.hash)) return notModified(page.hash);
      const keep = c.query.last === undefined ? 'old' : 'new';
      const fitted = fitPage(page, c.limit, keep);
      if (fitted.items.length === 0 && page.items.length > 0) {
        // One item alone over the cap: where it is stored as an object of its own, a URL to it.
        const at = keep === 'old' ? 0 : page.items.length - 1;
        const offset = page.offset + at;
        const located = await c.user.locateListItem(c.params.sessionId, c.params.key, offset);
        if (located) {
          const { count, hash } = page;
          const baseHash = chainHash(page.baseHash, page.items.slice(0, at));
          return json(
            303,
            {
              count,
              hash,
              offset,
              baseHash,
              size: located.size,
              download: located.download,
              expiresAt: located.expiresAt.toISOString(),
            },
            { location: located.download.url, etag: `"${hash}"` },
          );
        }
      }
      return json(200, fitted, { etag: `"${page.hash}"` });
    },
  }),
  route({
    method: 'DELETE',
    pattern: PATHS.list,
    operationId: 'deleteList',
    tag: 'lists',
    summary: 'Archive the list, then remove it',
    description: `Archives the list (see listArchives), then removes it; a list that does not exist answers 204 too. ${FENCING_NOTE}`,
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
