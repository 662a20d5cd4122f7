/**
 * Over HTTP: `POST …/snapshot`, `POST …/turns` (the lease, then the
 * snapshot) and `POST …/commits` (every change, the lease released or renewed), through each
 * adapter (local node:http, API Gateway v2 events, FC 3 events); then the typed client's
 * `beginTurn` → buffered changes → `commit`, retried with the same commitId after a lost answer.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpClientOptions } from '../../lib/client/index.js';
import {
  CommitMismatchError,
  CommitPartialError,
  CommitPreconditionError,
  LockConflictError,
} from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { encodeUrlId } from '../../lib/protocol/url-ids.js';
import { localApi } from '../client/helpers.js';
import { counting, withFaults } from '../store/wrappers.js';
import { type ApiHarness, apiGatewayHarness, functionComputeHarness, nodeHarness } from './harness.js';

const harnesses = [nodeHarness, apiGatewayHarness, functionComputeHarness];
const sid = () => `t-${randomUUID()}`;
const json = (value: unknown) => ({
  body: JSON.stringify(value),
  headers: { 'content-type': 'application/json' },
});

for (const make of harnesses) {
  describe(`turns via ${make.name}`, () => {
    let api: ApiHarness;
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
      api = await make(createMemoryDriver(), createMemoryLock());
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
      expect(other.json()).toMatchObject({
        code: 'commit-mismatch',
        commitId: 'c-1',
        kind: 'value',
        key: 'v',
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
  });
}

describe('snapshot over the answer cap (node, fs driver with presigned URLs)', () => {
  let api: ApiHarness;
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'turns-'));
    api = await nodeHarness(
      createFsDriver({ root, presign: { baseUrl: 'http://127.0.0.1:9' } }),
      createMemoryLock(),
    );
  });
  afterAll(async () => {
    await api.close();
    await rm(root, { recursive: true, force: true });
  });

  it('a big value becomes a download, a long list its most recent items that fit with their offset; small values stay inline', async () => {
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
    const answer = await call('POST', '/snapshot', {
      values: ['big', 'medium', 'small'],
      lists: [{ key: 'log' }],
    });
    expect(answer.status).toBe(200);
    expect(answer.body.length).toBeLessThanOrEqual(64 * 1024);
    const snap = answer.json();
    expect(snap.values[0]).toEqual({
      key: 'big',
      etag: bigEtag,
      revision: 1,
      size: Buffer.byteLength(JSON.stringify(big)),
      download: {
        method: 'GET',
        url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:9\//),
        headers: expect.any(Object),
      },
      expiresAt: expect.any(String),
    });
    expect(snap.values[1]).toEqual({ key: 'medium', value: medium, etag: expect.any(String), revision: 1 });
    expect(snap.values[2]).toEqual({ key: 'small', value: 'tiny', etag: expect.any(String), revision: 1 });
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

describe('typed client: snapshot, beginTurn → Turn → commit', () => {
  let api: Awaited<ReturnType<typeof localApi>>;
  beforeAll(async () => {
    api = await localApi();
  });
  afterAll(() => api.close());

  it('beginTurn → save / append → commit({ release: true }); a read after a buffered save sees it; the turn is over after', async () => {
    const alice = api.client();
    const s = `c-${randomUUID()}`;
    await alice.save(s, 'plan', { step: 0 });
    await alice.saveList(s, 'memory', ['m0']);
    const turn = await alice.beginTurn(s, {
      leaseMs: 10_000,
      owner: 'agent',
      values: ['plan', 'missing'],
      lists: [{ key: 'memory', last: 10 }],
    });
    expect(turn.lease).toMatchObject({
      owner: 'agent',
      token: expect.any(Number),
      expiresAt: expect.any(Date),
    });
    expect(turn.exists).toBe(true);
    expect(await turn.get('plan')).toEqual({ step: 0 });
    expect(await turn.get('missing')).toBeUndefined();
    turn.save('plan', { step: 1 });
    expect(await turn.get('plan')).toEqual({ step: 1 });
    turn.append('memory', ['m1']).append('memory', ['m2']);
    expect(turn.list('memory')).toMatchObject({
      items: ['m0', 'm1', 'm2'],
      count: 3,
      hash: chainHash(EMPTY_HASH, ['m0', 'm1', 'm2']),
    });
    const busy = await alice.beginTurn(s, { leaseMs: 5000, owner: 'other' }).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(LockConflictError);
    const result = await turn.commit({ release: true });
    expect(result).toEqual({
      commitId: expect.any(String),
      values: [{ key: 'plan', etag: expect.any(String), revision: expect.any(Number) }],
      lists: [
        { key: 'memory', action: 'appended', count: 3, hash: chainHash(EMPTY_HASH, ['m0', 'm1', 'm2']) },
      ],
      lease: { owner: 'agent', released: true },
    });
    expect(await alice.get(s, 'plan')).toEqual({ step: 1 });
    expect((await alice.getList(s, 'memory')).items).toEqual(['m0', 'm1', 'm2']);
    expect(() => turn.save('plan', 2)).toThrow(/over/);
    // Released: the next turn begins at once and sees the commit.
    const next = await alice.beginTurn(s, { leaseMs: 5000, values: ['plan'], lists: [{ key: 'memory' }] });
    expect(await next.get('plan')).toEqual({ step: 1 });
    expect(next.list('memory').count).toBe(3);
    const snap = await alice.snapshot(s, { values: ['plan'] });
    expect(snap).toEqual({
      exists: true,
      values: [{ key: 'plan', value: { step: 1 }, etag: expect.any(String), revision: expect.any(Number) }],
      lists: [],
    });
    expect(await alice.snapshot(`c-${randomUUID()}`, { values: ['plan'] })).toEqual({
      exists: false,
      values: [],
      lists: [],
    });
  });

  it('typed errors: a failing precondition is CommitPreconditionError naming each key, a reused commit id CommitMismatchError', async () => {
    const alice = api.client();
    const s = `c-${randomUUID()}`;
    await alice.saveList(s, 'l', [1]);
    const turn = await alice.beginTurn(s, { leaseMs: 5000, values: ['v'], lists: [{ key: 'l' }] });
    turn.save('v', 1, { ifVersion: 'stale' }).append('l', [2]);
    await alice.appendList(s, 'l', ['meanwhile'], { expectedCount: 1, token: turn.lease.token });
    const failed = await turn.commit().catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(CommitPreconditionError);
    const error = failed as CommitPreconditionError;
    expect(error.status).toBe(409);
    expect(error.failures.map((f) => [f.kind, f.key, f.reason])).toEqual(
      expect.arrayContaining([
        ['value', 'v', 'version'],
        ['list', 'l', 'count'],
      ]),
    );
    expect(error.requestId).toEqual(expect.any(String));
    const store = api.client();
    const ids = ['same', 'same'];
    const mismatch = createTurnWithIds(store, `c-${randomUUID()}`, ids);
    const t1 = await mismatch.begin();
    await t1.save('x', 1).commit({ renewMs: 5000 });
    const again = await t1
      .save('x', 2)
      .commit()
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(CommitMismatchError);
  });

  it('commit is retried with the same commitId and body after a lost answer, and answers complete', async () => {
    const s = `c-${randomUUID()}`;
    const bodies: string[] = [];
    let drop = true;
    const losing: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (String(input).endsWith('/commits')) {
        bodies.push(String(init?.body));
        if (drop) {
          drop = false;
          await response.arrayBuffer(); // applied by the server, the answer lost on the way
          throw new TypeError('fetch failed', { cause: new Error('socket hang up') });
        }
      }
      return response;
    };
    const alice = api.client({ fetch: losing });
    const turn = await alice.beginTurn(s, {
      leaseMs: 10_000,
      owner: 'retry',
      values: ['v'],
      lists: [{ key: 'l' }],
    });
    turn.save('v', 'one').append('l', ['a', 'b']);
    const result = await turn.commit({ release: true });
    expect(bodies).toHaveLength(2);
    expect(bodies[1]).toBe(bodies[0]);
    expect(JSON.parse(bodies[0] as string)).toMatchObject({
      commitId: result.commitId,
      token: turn.lease.token,
      lease: { owner: 'retry', release: true },
    });
    expect(result).toMatchObject({
      values: [{ key: 'v', etag: expect.any(String) }],
      lists: [{ key: 'l', count: 2, hash: chainHash(EMPTY_HASH, ['a', 'b']) }],
      lease: { owner: 'retry', released: true },
    });
    expect((await alice.getList(s, 'l')).items).toEqual(['a', 'b']);
    expect((await alice.acquireLock(s, { owner: 'after' })).owner).toBe('after');
  });
});

describe('commits over HTTP: a partial commit retried, concurrent commits with and without the lease', () => {
  /** Counts puts by object name; `faults` fails the next write whose name contains a pattern. */
  const faults = withFaults(createMemoryDriver());
  faults.state.once = true;
  const driver = counting(faults.driver);
  let api: Awaited<ReturnType<typeof localApi>>;
  beforeAll(async () => {
    api = await localApi(driver);
  });
  afterAll(() => api.close());
  const client = (o: Partial<HttpClientOptions> = {}) => api.client(o);
  const putsOf = (s: string, suffix: string) =>
    driver.puts.filter((k) => k.endsWith(`/${s}/${suffix}`)).length;

  it('a fault on one named value of three: the client retries with the same commitId and completes exactly the missing one', async () => {
    const s = `p-${randomUUID()}`;
    const alice = client();
    await alice.saveList(s, 'l', ['x']);
    driver.reset();
    const sent: string[] = [];
    const recording: typeof fetch = async (input, init) => {
      if (String(input).endsWith('/commits')) sent.push(String(init?.body));
      return fetch(input, init);
    };
    faults.state.pattern = `/${s}/b.json`;
    const result = await client({ fetch: recording }).commit(s, {
      commitId: 'partial-1',
      values: ['a', 'b', 'c'].map((key) => ({ key, value: `${key}!` })),
      lists: [{ key: 'l', append: ['y'], expectedCount: 1, expectedHash: chainHash(EMPTY_HASH, ['x']) }],
    });
    expect(faults.state.fired).toBe(1);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toBe(sent[0]);
    expect(result.values.map((v) => v.key)).toEqual(['a', 'b', 'c']);
    expect(result.lists).toEqual([
      { key: 'l', action: 'appended', count: 2, hash: chainHash(EMPTY_HASH, ['x', 'y']) },
    ]);
    // a and c were written once (the retry skipped them: they record the commit id), b twice.
    expect([putsOf(s, 'a.json'), putsOf(s, 'b.json'), putsOf(s, 'c.json')]).toEqual([1, 2, 1]);
    expect(await alice.get(s, 'b')).toBe('b!');
    expect((await alice.getList(s, 'l')).items).toEqual(['x', 'y']);
  });

  it('concurrent turns under the lease all land, one after the other; lease-less commits at one count: exactly one wins, the others are refused and write nothing', async () => {
    const s = `q-${randomUUID()}`;
    const turns = await Promise.all(
      Array.from({ length: 4 }, async (_, i) => {
        const turn = await client().beginTurn(s, {
          leaseMs: 10_000,
          waitMs: 10_000,
          owner: `agent-${i}`,
          values: ['by'],
          lists: [{ key: 'log' }],
        });
        const before = turn.list('log').count;
        turn.save('by', i).append('log', [{ i, after: before }]);
        await turn.commit({ release: true });
        return before;
      }),
    );
    // Each turn saw the one before it: counts 0, 1, 2, 3 in some order, and nothing was lost.
    expect([...turns].sort()).toEqual([0, 1, 2, 3]);
    const log = (await client().getList(s, 'log')).items as Array<{ i: number; after: number }>;
    expect(log.map((x) => x.after)).toEqual([0, 1, 2, 3]);
    expect(new Set(log.map((x) => x.i)).size).toBe(4);
    // Without a lease: 6 commits at the same count and hash race.
    const { count, hash } = await client().getList(s, 'log', { limit: 0 });
    const raced = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        client().commit(s, {
          commitId: `race-${i}`,
          values: [{ key: `mine-${i}`, value: i, ifAbsent: true }],
          lists: [{ key: 'log', append: [{ racer: i }], expectedCount: count, expectedHash: hash }],
        }),
      ),
    );
    const won = raced.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const r of raced) {
      if (r.status === 'fulfilled') continue;
      // Refused before any write (the count moved), or after its own value (commit-partial).
      expect(r.reason instanceof CommitPreconditionError || r.reason instanceof CommitPartialError).toBe(
        true,
      );
    }
    const after = (await client().getList(s, 'log')).items;
    expect(after).toHaveLength(5);
    expect(after.filter((x) => 'racer' in (x as object))).toHaveLength(1);
  });
});

/** A client's turns whose commit ids are `ids`, in order (to reuse one on purpose). */
function createTurnWithIds(
  client: ReturnType<Awaited<ReturnType<typeof localApi>>['client']>,
  s: string,
  ids: string[],
) {
  return {
    begin: async () => {
      const turn = await client.beginTurn(s, { leaseMs: 5000, values: ['x'] });
      // biome-ignore lint/suspicious/noExplicitAny: the test swaps the turn's id source
      (turn as any).io = { ...(turn as any).io, commitId: () => ids.shift() as string };
      return turn;
    },
  };
}
