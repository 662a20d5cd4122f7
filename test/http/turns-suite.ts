/**
 * Turns over HTTP, given an adapter over a backend (test/http/harness.ts): `POST …/snapshot`,
 * `POST …/turns` (the lease, then the snapshot) and `POST …/commits` (every change, the lease
 * released or renewed).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { encodeUrlId } from '../../lib/protocol/url-ids.js';
import type { ContractApi, ContractHarness } from './harness.js';

const sid = () => `t-${randomUUID()}`;
const json = (value: unknown) => ({
  body: JSON.stringify(value),
  headers: { 'content-type': 'application/json' },
});

/** Snapshots, turns and commits through one adapter over one backend. */
export function turnsSuite(h: ContractHarness): void {
  describe(`turns via ${h.name}`, () => {
    let api: ContractApi;
    const post = (user: string, s: string, what: 'snapshot' | 'turns' | 'commits', body: unknown) =>
      api.call(user, 'POST', `/v1/sessions/${s}/${what}`, json(body));
    const putValue = (s: string, key: string, value: unknown) =>
      api.call('alice', 'PUT', `/v1/sessions/${s}/state/${encodeUrlId(key)}`, json(value));
    const putList = (s: string, key: string, items: unknown[]) =>
      api.call('alice', 'PUT', `/v1/sessions/${s}/lists/${encodeUrlId(key)}`, json(items));
    const getValue = (s: string, key: string) =>
      api.call('alice', 'GET', `/v1/sessions/${s}/state/${encodeUrlId(key)}`);
    const getList = (s: string, key: string) =>
      api.call('alice', 'GET', `/v1/sessions/${s}/lists/${encodeUrlId(key)}`);

    beforeAll(async () => {
      api = await h.make();
    });
    afterAll(() => api.close());

    it("snapshot: values present and absent, lists whole and last, in the order asked; another user's session is exists:false with no data", async () => {
      const s = sid();
      const plan = (await putValue(s, 'plan', { step: 1 })).json().etag;
      const items = ['a', 'b', 'c', 'd'];
      const { hash } = (await putList(s, 'memory', items)).json();
      const answer = await post('alice', s, 'snapshot', {
        values: ['plan', 'missing'],
        lists: [{ key: 'memory', last: 2 }, { key: 'none' }, { key: 'memory2' }],
      });
      expect(answer.status).toBe(200);
      expect(answer.json()).toEqual({
        exists: true,
        values: [
          { key: 'plan', value: { step: 1 }, etag: plan, revision: 1 },
          { key: 'missing', absent: true },
        ],
        lists: [
          {
            key: 'memory',
            items: ['c', 'd'],
            offset: 2,
            baseHash: chainHash(EMPTY_HASH, ['a', 'b']),
            count: 4,
            hash,
          },
          { key: 'none', items: [], offset: 0, baseHash: EMPTY_HASH, count: 0, hash: EMPTY_HASH },
          { key: 'memory2', items: [], offset: 0, baseHash: EMPTY_HASH, count: 0, hash: EMPTY_HASH },
        ],
      });
      for (const [user, session] of [
        ['bob', s],
        ['alice', sid()],
      ] as const) {
        const other = await post(user, session, 'snapshot', { values: ['plan'], lists: [{ key: 'memory' }] });
        expect(other.status).toBe(200);
        expect(other.json()).toEqual({ exists: false, values: [], lists: [] });
      }
      // An empty body asks for nothing.
      expect((await post('alice', s, 'snapshot', {})).json()).toEqual({
        exists: true,
        values: [],
        lists: [],
      });
    });

    it('snapshot valuePage: the values under a prefix a page at a time by nextCursor, through the turn too; another user’s is exists:false', async () => {
      const s = sid();
      for (const key of ['p/1', 'p/2', 'p/../3', 'q']) await putValue(s, key, { key });
      const first = await post('alice', s, 'snapshot', { valuePage: { prefix: 'p/', limit: 2 } });
      expect(first.status).toBe(200);
      const body = first.json();
      expect(body.values.map((v: { key: string }) => v.key)).toEqual(['p/../3', 'p/1']);
      expect(body.values[0]).toEqual({
        key: 'p/../3',
        value: { key: 'p/../3' },
        etag: expect.any(String),
        revision: 1,
      });
      const rest = await post('alice', s, 'snapshot', {
        valuePage: { prefix: 'p/', limit: 2, cursor: body.nextCursor },
      });
      expect(rest.json()).toEqual({
        exists: true,
        values: [{ key: 'p/2', value: { key: 'p/2' }, etag: expect.any(String), revision: 1 }],
        lists: [],
      });
      const turn = await post('alice', s, 'turns', { leaseMs: 5000, valuePage: { limit: 10 } });
      expect(turn.status).toBe(201);
      expect(turn.json().values.map((v: { key: string }) => v.key)).toEqual(['p/../3', 'p/1', 'p/2', 'q']);
      expect((await post('bob', s, 'snapshot', { valuePage: { limit: 10 } })).json()).toEqual({
        exists: false,
        values: [],
        lists: [],
      });
    });

    it('bad input is 400 naming the field: unknown members, 101 keys, the same key twice in one kind; lease without token', async () => {
      const s = sid();
      await putValue(s, 'a', 1);
      const keys = Array.from({ length: 101 }, (_, i) => `k${i}`);
      const cases: Array<[string, 'snapshot' | 'turns' | 'commits', unknown]> = [
        ['body', 'snapshot', { values: [], extra: 1 }],
        ['lists.0', 'snapshot', { lists: [{ key: 'l', first: 2 }] }],
        ['values', 'snapshot', { values: keys }],
        [
          'values',
          'snapshot',
          { values: keys.slice(0, 60), lists: keys.slice(0, 41).map((key) => ({ key })) },
        ],
        ['values', 'snapshot', { values: ['a', 'a'] }],
        ['lists', 'snapshot', { lists: [{ key: 'l' }, { key: 'l', last: 1 }] }],
        ['valuePage.limit', 'snapshot', { valuePage: { limit: 0 } }],
        ['valuePage', 'snapshot', { valuePage: { limit: 1, stray: true } }],
        ['values', 'snapshot', { values: keys.slice(0, 95), valuePage: { limit: 10 } }],
        ['valuePage.prefix', 'snapshot', { valuePage: { limit: 1, prefix: 'a\u0001' } }],
        ['valuePage.cursor', 'snapshot', { valuePage: { limit: 1, cursor: 'YQ==' } }],
        ['valuePage.cursor', 'turns', { leaseMs: 5000, valuePage: { limit: 1, cursor: '..' } }],
        ['body', 'turns', { leaseMs: 5000, values: [], stray: true }],
        ['leaseMs', 'turns', { values: ['a'] }],
        ['values', 'turns', { leaseMs: 5000, values: ['a', 'a'] }],
        ['body', 'commits', { commitId: 'c1', values: [], other: 1 }],
        ['values', 'commits', { commitId: 'c1', values: keys.map((key) => ({ key, value: 1 })) }],
        [
          'values',
          'commits',
          {
            commitId: 'c1',
            values: [
              { key: 'a', value: 1 },
              { key: 'a', delete: true },
            ],
          },
        ],
        [
          'lease',
          'commits',
          { commitId: 'c1', values: [{ key: 'a', value: 2 }], lease: { owner: 'o', release: true } },
        ],
      ];
      for (const [field, what, body] of cases) {
        const answer = await post('alice', s, what, body);
        expect([what, body, answer.status]).toEqual([what, body, 400]);
        expect(answer.json().code).toBe('invalid-request');
        expect(answer.json().field).toBe(field);
      }
      // A value key and a list key may share a name.
      expect((await post('alice', s, 'snapshot', { values: ['a'], lists: [{ key: 'a' }] })).status).toBe(200);
      // Nothing of the refused commits was written, and a refused turn holds no lock.
      expect((await getValue(s, 'a')).json()).toBe(1);
      expect((await post('alice', s, 'turns', { leaseMs: 5000 })).status).toBe(201);
    });

    it('begin grants a lease and answers the snapshot read after it; a second begin is 409 lock-held as the lock route answers', async () => {
      const s = sid();
      const etag = (await putValue(s, 'plan', 'p0')).json().etag;
      const begin = await post('alice', s, 'turns', {
        leaseMs: 10_000,
        owner: 'agent-1',
        values: ['plan'],
        lists: [{ key: 'memory', last: 20 }],
      });
      expect(begin.status).toBe(201);
      const turn = begin.json();
      expect(turn).toEqual({
        lease: {
          owner: 'agent-1',
          token: expect.any(Number),
          expiresAt: expect.any(String),
          leaseMs: 10_000,
        },
        exists: true,
        values: [{ key: 'plan', value: 'p0', etag, revision: 1 }],
        lists: [{ key: 'memory', items: [], offset: 0, baseHash: EMPTY_HASH, count: 0, hash: EMPTY_HASH }],
      });
      expect(Date.parse(turn.lease.expiresAt)).toBeGreaterThan(Date.now());
      const second = await post('alice', s, 'turns', { leaseMs: 10_000, owner: 'agent-2', values: ['plan'] });
      const lock = await api.call('alice', 'POST', `/v1/sessions/${s}/lock`, json({ owner: 'agent-3' }));
      for (const held of [second, lock]) {
        expect(held.status).toBe(409);
        expect(held.json()).toMatchObject({
          code: 'lock-held',
          holder: 'agent-1',
          expiresAt: turn.lease.expiresAt,
        });
        expect(Number(held.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      // Bob's session of the same id is another lock: a turn of his own (exists: false, no data).
      const bob = await post('bob', s, 'turns', { leaseMs: 10_000, values: ['plan'] });
      expect(bob.status).toBe(201);
      expect(bob.json()).toMatchObject({ exists: false, values: [], lists: [] });
    });

    it('commit with release: values before lists, answered with etags and list actions; the lease is free after; a retry answers complete', async () => {
      const s = sid();
      await putList(s, 'memory', ['m0']);
      const turn = (
        await post('alice', s, 'turns', {
          leaseMs: 10_000,
          owner: 'a1',
          values: ['plan'],
          lists: [{ key: 'memory' }],
        })
      ).json();
      const memory = turn.lists[0];
      const body = {
        commitId: 'turn-1',
        token: turn.lease.token,
        values: [
          { key: 'plan', value: { step: 2 }, ifAbsent: true },
          { key: 'gone', delete: true },
        ],
        lists: [
          { key: 'memory', append: ['m1', 'm2'], expectedCount: memory.count, expectedHash: memory.hash },
        ],
        lease: { owner: 'a1', release: true },
      };
      const commit = await post('alice', s, 'commits', body);
      expect(commit.status).toBe(200);
      const hash = chainHash(memory.hash, ['m1', 'm2']);
      const result = commit.json();
      expect(result).toEqual({
        commitId: 'turn-1',
        values: [{ key: 'plan', etag: expect.any(String), revision: expect.any(Number) }, { key: 'gone' }],
        lists: [{ key: 'memory', action: 'appended', count: 3, hash }],
        lease: { owner: 'a1', released: true },
      });
      expect((await getValue(s, 'plan')).json()).toEqual({ step: 2 });
      expect((await getList(s, 'memory')).json().items).toEqual(['m0', 'm1', 'm2']);
      // The retry of a commit whose first attempt released the lease: complete, not lock-lost.
      const retry = await post('alice', s, 'commits', body);
      expect(retry.status).toBe(200);
      expect(retry.json()).toEqual(result);
      expect((await getList(s, 'memory')).json().count).toBe(3);
      // Released: another owner takes the lock at once.
      expect((await post('alice', s, 'turns', { leaseMs: 5000, owner: 'a2' })).status).toBe(201);
    });

    it("a stale token's commit writes nothing (409 fenced), even keys the newer holder did not touch", async () => {
      const s = sid();
      const first = (await post('alice', s, 'turns', { leaseMs: 10_000, owner: 'old' })).json();
      await post('alice', s, 'commits', {
        commitId: 'old-0',
        token: first.lease.token,
        values: [{ key: 'x', value: 0 }],
        lease: { owner: 'old', release: true },
      });
      const second = (
        await post('alice', s, 'turns', { leaseMs: 10_000, owner: 'new', values: ['x'] })
      ).json();
      expect(second.lease.token).toBeGreaterThan(first.lease.token);
      const newer = await post('alice', s, 'commits', {
        commitId: 'new-1',
        token: second.lease.token,
        values: [{ key: 'x', value: 'new' }],
      });
      expect(newer.status).toBe(200);
      const stale = await post('alice', s, 'commits', {
        commitId: 'old-1',
        token: first.lease.token,
        values: [
          { key: 'x', value: 'old' },
          { key: 'y', value: 'old' },
        ],
        lists: [{ key: 'l', append: ['old'], expectedCount: 0, expectedHash: EMPTY_HASH }],
      });
      expect(stale.status).toBe(409);
      expect(stale.json().code).toBe('fenced');
      expect((await getValue(s, 'x')).json()).toBe('new');
      expect((await getValue(s, 'y')).status).toBe(404);
      expect((await getList(s, 'l')).json().count).toBe(0);
    });

    it('the same commitId with another body is 409 commit-mismatch, nothing written', async () => {
      const s = sid();
      const one = await post('alice', s, 'commits', { commitId: 'c-1', values: [{ key: 'v', value: 1 }] });
      expect(one.status).toBe(200);
      const other = await post('alice', s, 'commits', { commitId: 'c-1', values: [{ key: 'v', value: 2 }] });
      expect(other.status).toBe(409);
      // Where the other body was found (CommitMismatchError): a backend whose commits are atomic
      // records each commit whole, and names its own record; per-key atomic storage, the value's.
      expect(other.json()).toMatchObject({
        code: 'commit-mismatch',
        commitId: 'c-1',
        ...(h.backend.capabilities.atomicCommits ? { kind: 'commit', key: '' } : { kind: 'value', key: 'v' }),
      });
      expect((await getValue(s, 'v')).json()).toBe(1);
    });

    it('a precondition failure names each failing key with its current state: 409 commit-conflict with a count, else 412', async () => {
      const s = sid();
      const etag = (await putValue(s, 'v', 'v0')).json().etag;
      const list = (await putList(s, 'l', [1, 2])).json();
      const both = await post('alice', s, 'commits', {
        commitId: 'p-1',
        values: [
          { key: 'v', value: 'v1', ifVersion: 'not-the-etag' },
          { key: 'w', value: 'w1', ifAbsent: true },
          { key: 'new', value: 'n' },
        ],
        lists: [{ key: 'l', append: [3], expectedCount: 1, expectedHash: list.hash }],
      });
      expect(both.status).toBe(409);
      const problem = both.json();
      expect(problem.code).toBe('commit-conflict');
      expect(problem.commitId).toBe('p-1');
      expect(problem.failures).toEqual(
        expect.arrayContaining([
          { kind: 'value', key: 'v', reason: 'version', currentVersion: etag, currentRevision: 1 },
          { kind: 'list', key: 'l', reason: 'count', count: 2, hash: list.hash },
        ]),
      );
      expect(problem.failures).toHaveLength(2);
      const hashOnly = await post('alice', s, 'commits', {
        commitId: 'p-2',
        values: [{ key: 'v', value: 'v1', ifAbsent: true }],
        lists: [{ key: 'l', replace: [9], expectedHash: EMPTY_HASH }],
      });
      expect(hashOnly.status).toBe(412);
      expect(hashOnly.json()).toMatchObject({ code: 'precondition-failed', commitId: 'p-2' });
      expect(hashOnly.json().failures).toEqual(
        expect.arrayContaining([
          { kind: 'value', key: 'v', reason: 'version', currentVersion: etag, currentRevision: 1 },
          { kind: 'list', key: 'l', reason: 'hash', count: 2, hash: list.hash },
        ]),
      );
      expect(hashOnly.json().failures).toHaveLength(2);
      // Nothing of either was written.
      expect((await getValue(s, 'v')).json()).toBe('v0');
      expect((await getValue(s, 'new')).status).toBe(404);
      expect((await getList(s, 'l')).json().items).toEqual([1, 2]);
    });

    it('commit with renewMs renews the lease; a lease not held is 409 lock-lost after the writes', async () => {
      const s = sid();
      const turn = (await post('alice', s, 'turns', { leaseMs: 5000, owner: 'r1' })).json();
      const renewed = await post('alice', s, 'commits', {
        commitId: 'r-1',
        token: turn.lease.token,
        values: [{ key: 'a', value: 1 }],
        lease: { owner: 'r1', renewMs: 20_000 },
      });
      expect(renewed.status).toBe(200);
      expect(renewed.json().lease).toEqual({
        owner: 'r1',
        token: turn.lease.token,
        expiresAt: expect.any(String),
        leaseMs: 20_000,
      });
      const lost = await post('alice', s, 'commits', {
        commitId: 'r-2',
        token: turn.lease.token,
        values: [{ key: 'b', value: 1 }],
        lease: { owner: 'someone-else', renewMs: 20_000 },
      });
      expect(lost.status).toBe(409);
      expect(lost.json().code).toBe('lock-lost');
    });

    it('over the answer cap: a long list answers its most recent items that fit, with their offset; a value too large is a download where the backend presigns, else 501 unsupported; small values stay inline', async () => {
      const s = sid();
      const call = (method: string, p: string, body: unknown) =>
        api.call('alice', method, `/v1/sessions/${s}${p}`, json(body));
      // Each fits a request body (64 KiB); together over the answer cap: the larger is a download.
      const big = 'x'.repeat(45 * 1024);
      const bigEtag = (await call('PUT', '/state/big', big)).json().etag;
      const medium = 'z'.repeat(30 * 1024);
      await call('PUT', '/state/medium', medium);
      await call('PUT', '/state/small', 'tiny');
      const items = Array.from({ length: 120 }, (_, i) => ({ i, text: 'y'.repeat(1000) }));
      for (let i = 0; i < items.length; i += 40) {
        const at = items.slice(0, i);
        await call('POST', '/lists/log/items', {
          items: items.slice(i, i + 40),
          expectedCount: i,
          expectedHash: chainHash(EMPTY_HASH, at),
        });
      }
      const all = await call('POST', '/snapshot', {
        values: ['big', 'medium', 'small'],
        lists: [{ key: 'log' }],
      });
      if (h.backend.capabilities.presignedTransfer) {
        expect(all.status).toBe(200);
        expect(all.body.length).toBeLessThanOrEqual(64 * 1024);
        expect(all.json().values[0]).toEqual({
          key: 'big',
          etag: bigEtag,
          revision: 1,
          size: Buffer.byteLength(JSON.stringify(big)),
          download: { method: 'GET', url: expect.any(String), headers: expect.any(Object) },
          expiresAt: expect.any(String),
        });
      } else {
        // As a GET of the value would: the backend cannot hand it out of band (never `absent`).
        expect(all.status).toBe(501);
        expect(all.json()).toMatchObject({ code: 'unsupported', status: 501 });
      }
      const answer = await call('POST', '/snapshot', {
        values: ['medium', 'small'],
        lists: [{ key: 'log' }],
      });
      expect(answer.status).toBe(200);
      expect(answer.body.length).toBeLessThanOrEqual(64 * 1024);
      const snap = answer.json();
      expect(snap.values).toEqual([
        { key: 'medium', value: medium, etag: expect.any(String), revision: 1 },
        { key: 'small', value: 'tiny', etag: expect.any(String), revision: 1 },
      ]);
      const log = snap.lists[0];
      expect(log.count).toBe(120);
      expect(log.hash).toBe(chainHash(EMPTY_HASH, items));
      expect(log.items.length).toBeGreaterThan(20);
      expect(log.items.length).toBeLessThan(120);
      expect(log.offset).toBe(120 - log.items.length);
      expect(log.items).toEqual(items.slice(log.offset));
      expect(log.baseHash).toBe(chainHash(EMPTY_HASH, items.slice(0, log.offset)));
    });
  });
}
