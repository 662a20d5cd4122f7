/**
 * The route contract (values, lists, sessions, the lock, isolation between users, bad input,
 * identity), given an adapter over a backend (test/http/harness.ts): the test files run it on
 * each backend through each adapter.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { encodeUrlId } from '../../lib/protocol/url-ids.js';
import { type ApiHarness, BODY_LIMIT, type ContractApi, type ContractHarness } from './harness.js';

/** The route contract through one adapter over one backend. */
export function routesSuite(h: ContractHarness): void {
  describe(`HTTP routes via ${h.name}`, () => {
    let api: ContractApi;
    const json = (value: unknown) => ({
      body: JSON.stringify(value),
      headers: { 'content-type': 'application/json' },
    });
    const sid = () => `~${Buffer.from(`sandbox/session/${randomUUID()}`).toString('base64url')}`;

    beforeAll(async () => {
      api = await h.make();
    });
    afterAll(() => api.close());

    it('health and the OpenAPI document need no identity', async () => {
      expect((await api.call(null, 'GET', '/v1/health')).json()).toEqual({ status: 'ok' });
      const doc = (await api.call(null, 'GET', '/v1/openapi.json')).json();
      expect(doc.openapi).toBe('3.1.0');
      expect(Object.keys(doc.paths)).toContain('/v1/sessions/{sessionId}/lists/{key}/items');
    });

    it('capabilities answer what the backend declares (the suites skip by them)', async () => {
      const answer = await api.call(null, 'GET', '/v1/capabilities');
      expect(answer.status).toBe(200);
      expect(answer.json()).toEqual(h.backend.capabilities);
    });

    it('single values: PUT, GET with ETag, conditional writes, DELETE', async () => {
      const s = sid();
      const put = await api.call('alice', 'PUT', `/v1/sessions/${s}/state/plan`, json({ steps: [1] }));
      expect(put.status).toBe(200);
      const { etag } = put.json();
      expect(put.headers.etag).toBe(`"${etag}"`);
      const get = await api.call('alice', 'GET', `/v1/sessions/${s}/state/plan`);
      expect(get.json()).toEqual({ steps: [1] });
      expect(get.headers.etag).toBe(`"${etag}"`);
      const stale = await api.call('alice', 'PUT', `/v1/sessions/${s}/state/plan`, {
        ...json(2),
        headers: { 'content-type': 'application/json', 'if-match': '"not-it"' },
      });
      expect(stale.status).toBe(412);
      expect(stale.headers['content-type']).toBe('application/problem+json');
      expect(stale.json()).toMatchObject({ code: 'precondition-failed', currentEtag: etag, status: 412 });
      const ok = await api.call('alice', 'PUT', `/v1/sessions/${s}/state/plan`, {
        ...json(3),
        headers: { 'if-match': `"${etag}"` },
      });
      expect(ok.status).toBe(200);
      const exists = await api.call('alice', 'PUT', `/v1/sessions/${s}/state/plan`, {
        ...json(4),
        headers: { 'if-none-match': '*' },
      });
      expect(exists.json()).toMatchObject({ code: 'precondition-failed' });
      expect((await api.call('alice', 'DELETE', `/v1/sessions/${s}/state/plan`)).status).toBe(204);
      const gone = await api.call('alice', 'GET', `/v1/sessions/${s}/state/plan`);
      expect(gone.status).toBe(404);
      expect(gone.json().code).toBe('not-found');
    });

    it('lists: whole-list PUT, item appends with conflicts and replays, pages, If-Match, archives, DELETE', async () => {
      const s = sid();
      const key = encodeUrlId('memory/main');
      const base = `/v1/sessions/${s}/lists/${key}`;
      const created = (await api.call('alice', 'PUT', base, json(['a', 'b']))).json();
      expect(created).toEqual({ action: 'created', count: 2, hash: chainHash(EMPTY_HASH, ['a', 'b']) });
      const appended = await api.call(
        'alice',
        'POST',
        `${base}/items`,
        json({ items: ['c'], expectedCount: 2, expectedHash: created.hash }),
      );
      expect(appended.json()).toMatchObject({ action: 'appended', count: 3 });
      const replay = await api.call(
        'alice',
        'POST',
        `${base}/items`,
        json({ items: ['c'], expectedCount: 2, expectedHash: created.hash }),
      );
      expect(replay.json().action).toBe('unchanged');
      const conflict = await api.call(
        'alice',
        'POST',
        `${base}/items`,
        json({ items: ['x'], expectedCount: 1 }),
      );
      expect(conflict.status).toBe(409);
      expect(conflict.json()).toMatchObject({
        code: 'append-conflict',
        count: 3,
        hash: appended.json().hash,
      });
      const page = await api.call('alice', 'GET', `${base}?offset=1&limit=1`);
      expect(page.json()).toEqual({
        items: ['b'],
        count: 3,
        hash: appended.json().hash,
        offset: 1,
        baseHash: chainHash(EMPTY_HASH, ['a']),
      });
      const last = await api.call('alice', 'GET', `${base}?last=2`);
      expect(last.json()).toMatchObject({ items: ['b', 'c'], offset: 1 });
      expect((await api.call('alice', 'GET', `${base}?last=2&limit=1`)).status).toBe(400);
      // A whole-list save with a stale base (If-Match: "<hash>") is 412 with the current hash, nothing written.
      const staleSave = await api.call('alice', 'PUT', base, {
        ...json(['z']),
        headers: { 'content-type': 'application/json', 'if-match': `"${created.hash}"` },
      });
      expect(staleSave.status).toBe(412);
      expect(staleSave.json()).toMatchObject({
        code: 'precondition-failed',
        currentHash: appended.json().hash,
      });
      const stale = await api.call('alice', 'GET', base, { headers: { 'if-match': `"${created.hash}"` } });
      expect(stale.status).toBe(412);
      expect(stale.json()).toMatchObject({ code: 'precondition-failed', currentHash: appended.json().hash });
      expect((await api.call('alice', 'PUT', base, json(['summary']))).json().action).toBe('rewritten');
      const { archives } = (await api.call('alice', 'GET', `${base}/archives`)).json();
      expect(archives).toHaveLength(1);
      expect(archives[0]).toMatchObject({ count: 3 });
      expect(archives[0].archivedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const archived = await api.call('alice', 'GET', `${base}/archives/${archives[0].archiveId}?limit=2`);
      expect(archived.json()).toMatchObject({ items: ['a', 'b'], count: 3 });
      expect((await api.call('alice', 'GET', `${base}/archives/999`)).status).toBe(404);
      expect((await api.call('alice', 'DELETE', base)).status).toBe(204);
      expect((await api.call('alice', 'GET', base)).json()).toMatchObject({ items: [], count: 0 });
      expect((await api.call('alice', 'GET', `/v1/sessions/${s}/lists/absent`)).json()).toEqual({
        items: [],
        count: 0,
        hash: EMPTY_HASH,
        offset: 0,
        baseHash: EMPTY_HASH,
      });
    });

    it('sessions: list with last activity and paging, HEAD, DELETE one, DELETE all (only with all=true)', async () => {
      const user = `lister-${randomUUID()}`;
      for (const id of ['one', 'two', 'three'])
        await api.call(user, 'PUT', `/v1/sessions/${id}/state/k`, json(1));
      const first = (await api.call(user, 'GET', '/v1/sessions?limit=2')).json();
      expect(first.sessions).toHaveLength(2);
      expect(first.sessions[0].lastActivity).toMatch(/Z$/);
      const second = (await api.call(user, 'GET', `/v1/sessions?limit=2&cursor=${first.nextCursor}`)).json();
      expect(
        [...first.sessions, ...second.sessions].map((x: { sessionId: string }) => x.sessionId).sort(),
      ).toEqual(['one', 'three', 'two']);
      expect(second.nextCursor).toBeNull();
      expect((await api.call(user, 'HEAD', '/v1/sessions/one')).status).toBe(200);
      expect((await api.call(user, 'HEAD', '/v1/sessions/nope')).status).toBe(404);
      expect((await api.call(user, 'DELETE', '/v1/sessions/one')).status).toBe(204);
      expect((await api.call(user, 'DELETE', '/v1/sessions/one')).status).toBe(204);
      const refused = await api.call(user, 'DELETE', '/v1/sessions');
      expect(refused.json()).toMatchObject({ status: 400, code: 'invalid-request', field: 'all' });
      expect((await api.call(user, 'DELETE', '/v1/sessions?all=true')).status).toBe(204);
      expect((await api.call(user, 'GET', '/v1/sessions')).json().sessions).toEqual([]);
    });

    it('lock: acquire, held (409 with Retry-After), renew, release, lost; fencing through the header', async () => {
      const s = sid();
      const lease = (
        await api.call('alice', 'POST', `/v1/sessions/${s}/lock`, json({ owner: 'agent-1', leaseMs: 5000 }))
      ).json();
      expect(lease).toMatchObject({ owner: 'agent-1', leaseMs: 5000 });
      expect(lease.expiresAt).toMatch(/Z$/);
      expect((await api.call('alice', 'HEAD', `/v1/sessions/${s}`)).status).toBe(404); // locking creates nothing
      const held = await api.call('alice', 'POST', `/v1/sessions/${s}/lock`, json({ owner: 'agent-2' }));
      expect(held.status).toBe(409);
      expect(held.json()).toMatchObject({ code: 'lock-held', holder: 'agent-1', expiresAt: lease.expiresAt });
      expect(Number(held.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      const lockHeaders = { 'lock-owner': 'agent-1', 'fencing-token': String(lease.token) };
      expect(
        (
          await api.call('alice', 'PUT', `/v1/sessions/${s}/lock`, {
            ...json({ leaseMs: 9000 }),
            headers: lockHeaders,
          })
        ).json(),
      ).toMatchObject({ leaseMs: 9000 });
      const lost = await api.call('alice', 'PUT', `/v1/sessions/${s}/lock`, {
        headers: { 'lock-owner': 'agent-2', 'fencing-token': String(lease.token) },
      });
      expect(lost.json()).toMatchObject({ status: 409, code: 'lock-lost' });
      // The lock is the authority: a token it did not grant, or an older one, writes nothing.
      for (const token of [lease.token + 5, lease.token - 1]) {
        const fenced = await api.call('alice', 'PUT', `/v1/sessions/${s}/state/k`, {
          ...json('not granted'),
          headers: { 'fencing-token': String(token) },
        });
        expect(fenced.json()).toMatchObject({ status: 409, code: 'fenced' });
      }
      const granted = await api.call('alice', 'PUT', `/v1/sessions/${s}/state/k`, {
        ...json('by the holder'),
        headers: { 'fencing-token': String(lease.token) },
      });
      expect(granted.status).toBe(200);
      expect(
        (await api.call('alice', 'DELETE', `/v1/sessions/${s}/lock`, { headers: lockHeaders })).status,
      ).toBe(204);
      expect(
        (await api.call('alice', 'DELETE', `/v1/sessions/${s}/lock`, { headers: lockHeaders })).status,
      ).toBe(204);
    });

    it('lock read: 200 {owner, expiresAt, token} while held, 404 when free, released or expired; changes nothing', async () => {
      // An odd id (encoded, with slashes and dots inside) and a plain one.
      for (const s of [sid(), encodeUrlId('a/../b .c'), 'plain-id']) {
        const none = await api.call('alice', 'GET', `/v1/sessions/${s}/lock`);
        expect(none.status).toBe(404);
        expect(none.headers['content-type']).toBe('application/problem+json');
        expect(none.json()).toMatchObject({ status: 404, code: 'not-found' });
        const lease = (
          await api.call('alice', 'POST', `/v1/sessions/${s}/lock`, json({ owner: 'reader', leaseMs: 5000 }))
        ).json();
        const held = await api.call('alice', 'GET', `/v1/sessions/${s}/lock`);
        expect(held.status).toBe(200);
        expect(held.headers['cache-control']).toBe('no-store');
        expect(held.json()).toEqual({ owner: 'reader', expiresAt: lease.expiresAt, token: lease.token });
        // Reading it again is the same answer: the read renews nothing and creates no session.
        expect((await api.call('alice', 'GET', `/v1/sessions/${s}/lock`)).json()).toEqual(held.json());
        expect((await api.call('alice', 'HEAD', `/v1/sessions/${s}`)).status).toBe(404);
        // Another user's session of that id: 404, nothing of alice's lease in it.
        const other = await api.call('bob', 'GET', `/v1/sessions/${s}/lock`);
        expect(other.status).toBe(404);
        for (const secret of ['reader', String(lease.token), lease.expiresAt])
          expect(other.body).not.toContain(secret);
        const headers = { 'lock-owner': 'reader', 'fencing-token': String(lease.token) };
        expect((await api.call('alice', 'DELETE', `/v1/sessions/${s}/lock`, { headers })).status).toBe(204);
        expect((await api.call('alice', 'GET', `/v1/sessions/${s}/lock`)).status).toBe(404);
      }
      for (const bad of ['a%2Fb', '~!!', '~YQ==']) {
        const res = await api.call('alice', 'GET', `/v1/sessions/${bad}/lock`);
        expect({ bad, status: res.status }).toEqual({ bad, status: 400 });
        expect(res.json()).toMatchObject({ code: 'invalid-request', field: 'sessionId' });
      }
      expect((await api.call(null, 'GET', `/v1/sessions/${sid()}/lock`)).status).toBe(401);
    });

    it('lock read: an expired lease is not held', async () => {
      const clock = { t: Date.now() };
      const timed = await h.make({ now: () => clock.t });
      try {
        const s = sid();
        await timed.call('alice', 'POST', `/v1/sessions/${s}/lock`, json({ leaseMs: 1000 }));
        expect((await timed.call('alice', 'GET', `/v1/sessions/${s}/lock`)).status).toBe(200);
        clock.t += 1001;
        expect((await timed.call('alice', 'GET', `/v1/sessions/${s}/lock`)).status).toBe(404);
      } finally {
        await timed.close();
      }
    });

    it('another user sees nothing of alice: 404 or empty, never 403; locks are separate', async () => {
      const s = sid();
      await api.call('alice', 'PUT', `/v1/sessions/${s}/state/secret`, json('alice only'));
      await api.call('alice', 'PUT', `/v1/sessions/${s}/lists/l`, json([1]));
      await api.call('alice', 'POST', `/v1/sessions/${s}/lock`, json({}));
      expect((await api.call('bob', 'GET', `/v1/sessions/${s}/state/secret`)).status).toBe(404);
      expect((await api.call('bob', 'HEAD', `/v1/sessions/${s}`)).status).toBe(404);
      expect((await api.call('bob', 'GET', `/v1/sessions/${s}/lists/l`)).json().count).toBe(0);
      expect((await api.call('bob', 'GET', `/v1/sessions/${s}/lists/l/archives`)).json().archives).toEqual(
        [],
      );
      expect(
        (await api.call('bob', 'GET', '/v1/sessions'))
          .json()
          .sessions.map((x: { sessionId: string }) => x.sessionId),
      ).not.toContain(s);
      expect((await api.call('bob', 'POST', `/v1/sessions/${s}/lock`, json({}))).status).toBe(200);
      expect((await api.call('bob', 'DELETE', `/v1/sessions/${s}`)).status).toBe(204);
      expect((await api.call('bob', 'DELETE', '/v1/sessions?all=true')).status).toBe(204);
      expect((await api.call('alice', 'GET', `/v1/sessions/${s}/state/secret`)).json()).toBe('alice only');
    });

    it('refuses bad input with problems naming the field', async () => {
      const s = sid();
      const cases: Array<[string, string, Parameters<ApiHarness['call']>[3], number, string, string?]> = [
        ['PUT', `/v1/sessions/${s}/state/k`, { body: '{"broken":' }, 400, 'invalid-request', 'body'],
        ['PUT', `/v1/sessions/${s}/state/k`, {}, 400, 'invalid-request', 'body'],
        ['PUT', `/v1/sessions/${s}/lists/k`, json({ not: 'an array' }), 400, 'invalid-request', 'body'],
        [
          'POST',
          `/v1/sessions/${s}/lists/k/items`,
          json({ items: [], expectedCount: 0 }),
          400,
          'invalid-request',
          'items',
        ],
        [
          'POST',
          `/v1/sessions/${s}/lists/k/items`,
          json({ items: [1], expectedCount: 'x' }),
          400,
          'invalid-request',
          'expectedCount',
        ],
        [
          'POST',
          `/v1/sessions/${s}/lists/k/items`,
          json({ items: [1], expectedCount: 0, extra: 1 }),
          400,
          'invalid-request',
        ],
        ['GET', '/v1/sessions/a%2Fb/state/k', {}, 400, 'invalid-request', 'sessionId'],
        ['GET', '/v1/sessions/~!!/state/k', {}, 400, 'invalid-request', 'sessionId'],
        ['GET', '/v1/sessions/~YQ==/state/k', {}, 400, 'invalid-request', 'sessionId'],
        [
          'GET',
          `/v1/sessions/${s}/state/~${Buffer.from('\u0000').toString('base64url')}`,
          {},
          400,
          'invalid-request',
          'key',
        ],
        ['GET', `/v1/sessions/${s}/lists/k?offset=-1`, {}, 400, 'invalid-request', 'offset'],
        ['GET', '/v1/sessions?limit=0', {}, 400, 'invalid-request', 'limit'],
        ['GET', '/v1/sessions?cursor=Li4vYm9i', {}, 400, 'invalid-request', 'cursor'],
        [
          'PUT',
          `/v1/sessions/${s}/state/k`,
          { ...json(1), headers: { 'fencing-token': '9007199254740993' } },
          400,
          'invalid-request',
          'Fencing-Token',
        ],
        [
          'PUT',
          `/v1/sessions/${s}/state/k`,
          { ...json(1), headers: { 'fencing-token': 'abc' } },
          400,
          'invalid-request',
          'Fencing-Token',
        ],
        [
          'PUT',
          `/v1/sessions/${s}/state/k`,
          { ...json(1), headers: { 'if-match': 'unquoted' } },
          400,
          'invalid-request',
          'If-Match',
        ],
        ['POST', `/v1/sessions/${s}/lock`, json({ leaseMs: 10 }), 400, 'invalid-request', 'leaseMs'],
        ['POST', `/v1/sessions/${s}/lock`, json({ waitMs: 60000 }), 400, 'invalid-request', 'waitMs'],
        ['POST', `/v1/sessions/${s}/lock`, json({ owner: 'has space' }), 400, 'invalid-request', 'owner'],
        ['PUT', `/v1/sessions/${s}/lock`, {}, 400, 'invalid-request', 'Lock-Owner'],
        ['GET', '/v1/nothing/here', {}, 404, 'not-found'],
        ['PATCH', `/v1/sessions/${s}/state/k`, {}, 405, 'method-not-allowed'],
        [
          'PUT',
          `/v1/sessions/${s}/state/k`,
          { body: JSON.stringify('x'.repeat(BODY_LIMIT + 10)) },
          413,
          'payload-too-large',
        ],
      ];
      for (const [method, path, options, status, code, field] of cases) {
        const res = await api.call('alice', method, path, options);
        expect({ method, path, status: res.status }).toEqual({ method, path, status });
        expect(res.headers['content-type']).toBe('application/problem+json');
        expect(res.json()).toMatchObject({ code, status, ...(field ? { field } : {}) });
      }
      // `..` as a segment (HTTP clients normalise it away, so straight to the router):
      const dots = await api.app.handle({
        method: 'GET',
        path: '/v1/sessions/../state/k',
        query: {},
        headers: {},
        requestId: 'r',
      });
      expect(dots.status).toBe(400);
      const big = await api.call('alice', 'PUT', `/v1/sessions/${s}/state/k`, {
        body: JSON.stringify('x'.repeat(BODY_LIMIT + 10)),
      });
      expect(big.json().limit).toBe(BODY_LIMIT);
      expect((await api.call('alice', 'HEAD', `/v1/sessions/${s}`)).status).toBe(404); // nothing written by any of it
    });

    it('refuses a missing identity with 401 and a problem body', async () => {
      const res = await api.call(null, 'GET', '/v1/sessions');
      expect(res.status).toBe(401);
      expect(res.json()).toMatchObject({ code: 'unauthorized' });
      expect((await api.call('   ', 'GET', '/v1/sessions')).status).toBe(401);
      expect((await api.call('u'.repeat(129), 'GET', '/v1/sessions')).status).toBe(401);
      // The id rule decides (lib/contract/ids.ts); auth answers its refusal as 401, not 400.
      for (const user of ['next\u0085line', 'lone\ud800surrogate', 'tab\there']) {
        const refused = await api.call(user, 'GET', '/v1/sessions');
        expect(refused.status, JSON.stringify(user)).toBe(401);
        expect(refused.json()).toMatchObject({ code: 'unauthorized' });
      }
    });
  });
}
