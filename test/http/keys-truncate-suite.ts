/**
 * `GET /v1/sessions/{sessionId}/keys` and `POST /v1/sessions/{sessionId}/lists/{key}/truncate`,
 * given an adapter over a backend (test/http/harness.ts), with `offset` in the archives answer.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { encodeUrlId } from '../../lib/protocol/url-ids.js';
import type { ContractApi, ContractHarness } from './harness.js';

const utf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const msgs = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => ({ n: from + i }));

/** Keys and truncate through one adapter over one backend. */
export function keysTruncateSuite(h: ContractHarness): void {
  describe(`keys and truncate via ${h.name}`, () => {
    let api: ContractApi;
    const json = (value: unknown, headers: Record<string, string> = {}) => ({
      body: JSON.stringify(value),
      headers: { 'content-type': 'application/json', ...headers },
    });
    const sid = () => `s-${randomUUID()}`;
    const listPath = (s: string, key: string) => `/v1/sessions/${s}/lists/${encodeUrlId(key)}`;
    const truncate = (s: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
      api.call('alice', 'POST', `${listPath(s, key)}/truncate`, json(body, headers));

    beforeAll(async () => {
      api = await h.make();
    });
    afterAll(() => api.close());

    it('keys: values and lists in UTF-8 order, odd keys included, with etag, size, count, hash and ISO times; pages by cursor; prefix and startAfter', async () => {
      const s = sid();
      const valueKeys = ['plan', '../up', ' sp', 'ünï', '😀', 'a', 'a.b', 'x.json', '~', '%41', '日本'];
      const listKeys = ['a', 'memory', '日本', 'a.list'];
      const etags = new Map<string, string>();
      for (const k of valueKeys) {
        const put = await api.call('alice', 'PUT', `/v1/sessions/${s}/state/${encodeUrlId(k)}`, json({ k }));
        expect(put.status).toBe(200);
        etags.set(k, put.json().etag);
      }
      const hashes = new Map<string, string>();
      for (const k of listKeys) {
        const put = await api.call('alice', 'PUT', listPath(s, k), json(msgs(0, 3)));
        hashes.set(k, put.json().hash);
      }
      await api.call('alice', 'PUT', listPath(s, 'gone'), json([1]));
      expect((await api.call('alice', 'DELETE', listPath(s, 'gone'))).status).toBe(204);

      const whole = await api.call('alice', 'GET', `/v1/sessions/${s}/keys`);
      expect(whole.status).toBe(200);
      const page = whole.json();
      expect(Object.keys(page).sort()).toEqual(['lists', 'values']); // no nextCursor on the last page
      expect(page.values.map((v: { key: string }) => v.key)).toEqual([...valueKeys].sort(utf8));
      for (const v of page.values) {
        expect(Object.keys(v).sort()).toEqual(['etag', 'key', 'lastModified', 'revision', 'size']);
        expect(v.revision).toBe(1);
        expect(v.etag).toBe(etags.get(v.key));
        expect(v.size).toBe(Buffer.byteLength(JSON.stringify({ k: v.key })));
        expect(v.lastModified).toMatch(ISO);
      }
      expect(page.lists).toEqual(
        [...listKeys].sort(utf8).map((key) => ({
          key,
          count: 3,
          hash: hashes.get(key),
          lastModified: expect.stringMatching(ISO),
        })),
      );

      const all = [...new Set([...valueKeys, ...listKeys])].sort(utf8);
      const walk = async (query: string, limit: number) => {
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let n = 0; n < 50; n++) {
          const q = `limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
          const answer = await api.call('alice', 'GET', `/v1/sessions/${s}/keys?${q}`);
          expect(answer.status).toBe(200);
          const p = answer.json();
          const keys = [...new Set([...p.values, ...p.lists].map((e: { key: string }) => e.key))].sort(utf8);
          expect(keys.length).toBeLessThanOrEqual(limit);
          seen.push(...keys);
          cursor = p.nextCursor;
          if (cursor === undefined) break;
          expect(typeof cursor).toBe('string');
        }
        return seen;
      };
      expect(await walk('', 2)).toEqual(all);
      expect(await walk(`&prefix=${encodeURIComponent('a')}`, 1)).toEqual(
        all.filter((k) => k.startsWith('a')),
      );
      expect(await walk(`&prefix=${encodeURIComponent('日')}`, 10)).toEqual(['日本']);
      expect(await walk(`&startAfter=${encodeURIComponent('a.b')}`, 3)).toEqual(
        all.filter((k) => utf8(k, 'a.b') > 0),
      );
    });

    it("keys: another user's session is 404 exactly as an absent one; bad queries are 400 naming the parameter", async () => {
      const s = sid();
      await api.call('alice', 'PUT', `/v1/sessions/${s}/state/secret`, json('alice only'));
      expect((await api.call('alice', 'GET', `/v1/sessions/${s}/keys`)).status).toBe(200);
      const other = await api.call('bob', 'GET', `/v1/sessions/${s}/keys`);
      const absent = await api.call('bob', 'GET', `/v1/sessions/${sid()}/keys`);
      for (const answer of [other, absent]) {
        expect(answer.status).toBe(404);
        expect(answer.headers['content-type']).toBe('application/problem+json');
      }
      expect(other.json()).toMatchObject({ code: 'not-found', status: 404 });
      expect(other.json()).toEqual(absent.json());
      const bad: Array<[string, string]> = [
        ['limit=0', 'limit'],
        ['limit=1001', 'limit'],
        ['limit=two', 'limit'],
        [`prefix=${'p'.repeat(129)}`, 'prefix'],
        [`prefix=${encodeURIComponent('a\u0001')}`, 'prefix'],
        [`startAfter=${encodeURIComponent('ü'.repeat(65))}`, 'startAfter'],
        ['cursor=not-a-cursor-of-this-listing!', 'cursor'],
      ];
      for (const [query, field] of bad) {
        const answer = await api.call('alice', 'GET', `/v1/sessions/${s}/keys?${query}`);
        expect({ query, status: answer.status }).toEqual({ query, status: 400 });
        expect(answer.json()).toMatchObject({ code: 'invalid-request', field });
      }
    });

    it('truncate: keeps the first count items, archives only the removed ones with their offset (listArchives, getArchive); the list goes on', async () => {
      const s = sid();
      const items = msgs(0, 6);
      const saved = (await api.call('alice', 'PUT', listPath(s, 'chat/main'), json(items))).json();
      const cut = await truncate(s, 'chat/main', { count: 2, expectedHash: saved.hash });
      expect(cut.status).toBe(200);
      expect(cut.json()).toEqual({
        action: 'truncated',
        count: 2,
        hash: chainHash(EMPTY_HASH, items.slice(0, 2)),
      });
      expect((await api.call('alice', 'GET', listPath(s, 'chat/main'))).json()).toEqual({
        items: items.slice(0, 2),
        count: 2,
        hash: cut.json().hash,
        offset: 0,
        baseHash: EMPTY_HASH,
      });
      const { archives } = (await api.call('alice', 'GET', `${listPath(s, 'chat/main')}/archives`)).json();
      expect(archives).toEqual([
        {
          archiveId: expect.any(String),
          count: 4,
          hash: chainHash(EMPTY_HASH, items.slice(2)),
          archivedAt: expect.stringMatching(ISO),
          offset: 2,
        },
      ]);
      const archived = await api.call(
        'alice',
        'GET',
        `${listPath(s, 'chat/main')}/archives/${archives[0].archiveId}`,
      );
      expect(archived.json()).toMatchObject({ items: items.slice(2), count: 4, offset: 0 });
      // The freed positions are appended again; keeping every item is `unchanged`.
      const more = await api.call(
        'alice',
        'POST',
        `${listPath(s, 'chat/main')}/items`,
        json({ items: [{ again: 2 }], expectedCount: 2, expectedHash: cut.json().hash }),
      );
      expect(more.json()).toMatchObject({ action: 'appended', count: 3 });
      const same = await truncate(s, 'chat/main', { count: 3, expectedHash: more.json().hash });
      expect(same.json()).toEqual({ action: 'unchanged', count: 3, hash: more.json().hash });
      // A rewrite's archive is of the whole list: offset 0.
      await api.call('alice', 'PUT', listPath(s, 'chat/main'), {
        ...json(['summary']),
        headers: { 'if-match': `"${more.json().hash}"` },
      });
      const after = (await api.call('alice', 'GET', `${listPath(s, 'chat/main')}/archives`)).json().archives;
      expect(after.map((a: { offset: number; count: number }) => [a.offset, a.count])).toEqual([
        [2, 4],
        [0, 3],
      ]);
    });

    it('truncate: 412 with currentHash, 400 for too few items or a bad body, 409 fenced; none writes anything', async () => {
      const s = sid();
      const key = 'u';
      const { token } = await api.lock.acquire({ userId: 'alice', sessionId: s });
      const { hash } = (
        await api.call('alice', 'PUT', listPath(s, key), {
          ...json(msgs(0, 5), { 'fencing-token': String(token) }),
        })
      ).json();
      const stale = await truncate(s, key, { count: 1, expectedHash: chainHash(EMPTY_HASH, msgs(0, 4)) });
      expect(stale.status).toBe(412);
      expect(stale.json()).toMatchObject({ code: 'precondition-failed', currentHash: hash });
      const short = await truncate(s, key, { count: 6, expectedHash: hash });
      expect(short.status).toBe(400);
      expect(short.json()).toMatchObject({
        code: 'invalid-request',
        field: 'count',
        count: 6,
        currentCount: 5,
      });
      const bad: Array<[unknown, Record<string, string>, string]> = [
        [{ count: 1, expectedHash: hash, extra: true }, {}, 'body'],
        [{ count: -1, expectedHash: hash }, {}, 'count'],
        [{ count: 1.5, expectedHash: hash }, {}, 'count'],
        [{ count: 1, expectedHash: 'sha256:xyz' }, {}, 'expectedHash'],
        [{ expectedHash: hash }, {}, 'count'],
        [{ count: 1, expectedHash: hash }, { 'idempotency-key': 'not ok!' }, 'Idempotency-Key'],
        [{ count: 1, expectedHash: hash }, { 'fencing-token': 'abc' }, 'Fencing-Token'],
      ];
      for (const [body, headers, field] of bad) {
        const answer = await truncate(s, key, body, headers);
        expect({ body, status: answer.status }).toEqual({ body, status: 400 });
        expect(answer.json().code).toBe('invalid-request');
        if (field !== 'body') expect(answer.json().field).toBe(field);
      }
      const fenced = await truncate(
        s,
        key,
        { count: 1, expectedHash: hash },
        { 'fencing-token': String(token - 1) },
      );
      expect(fenced.status).toBe(409);
      expect(fenced.json()).toMatchObject({ code: 'fenced' });
      expect((await api.call('alice', 'GET', listPath(s, key))).json()).toMatchObject({
        items: msgs(0, 5),
        hash,
      });
      expect((await api.call('alice', 'GET', `${listPath(s, key)}/archives`)).json().archives).toEqual([]);
      const current = await truncate(
        s,
        key,
        { count: 1, expectedHash: hash },
        { 'fencing-token': String(token) },
      );
      expect(current.json()).toMatchObject({ action: 'truncated', count: 1 });
    });

    it('truncate: a replayed Idempotency-Key answers the first answer, even after another write, and writes nothing', async () => {
      const s = sid();
      const { hash } = (await api.call('alice', 'PUT', listPath(s, 'r'), json(msgs(0, 4)))).json();
      const headers = { 'idempotency-key': 'pop-1' };
      const first = await truncate(s, 'r', { count: 3, expectedHash: hash }, headers);
      expect(first.json()).toMatchObject({ action: 'truncated', count: 3 });
      const appended = await api.call(
        'alice',
        'POST',
        `${listPath(s, 'r')}/items`,
        json({ items: ['x', 'y'], expectedCount: 3, expectedHash: first.json().hash }),
      );
      expect(appended.json().count).toBe(5);
      const replay = await truncate(s, 'r', { count: 3, expectedHash: hash }, headers);
      expect(replay.status).toBe(200);
      expect(replay.json()).toEqual(first.json());
      expect((await api.call('alice', 'GET', listPath(s, 'r'))).json()).toMatchObject({
        items: [...msgs(0, 3), 'x', 'y'],
        hash: appended.json().hash,
      });
      expect((await api.call('alice', 'GET', `${listPath(s, 'r')}/archives`)).json().archives).toHaveLength(
        1,
      );
      // Without the key, the same body is a new truncate: its hash is stale now.
      expect((await truncate(s, 'r', { count: 3, expectedHash: hash })).status).toBe(412);
    });
  });
}
