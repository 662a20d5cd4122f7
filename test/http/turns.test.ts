/**
 * Over HTTP: `POST …/snapshot`, `POST …/turns` (the lease, then the
 * snapshot) and `POST …/commits` (every change, the lease released or renewed; turns-suite.ts),
 * through each adapter (local node:http, API Gateway v2 events, FC 3 events) on memory and on fs
 * with presigned URLs; then the typed client's
 * `beginTurn` → buffered changes → `commit`, retried with the same commitId after a lost answer.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpClientOptions } from '../../lib/client/index.js';
import {
  CommitMismatchError,
  CommitPartialError,
  CommitPreconditionError,
  LockConflictError,
} from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { localApi } from '../client/helpers.js';
import { counting, withFaults } from '../store/wrappers.js';
import { contractHarnesses, fsBackend, memoryBackend } from './harness.js';
import { turnsSuite } from './turns-suite.js';

for (const backend of [memoryBackend, fsBackend]) for (const h of contractHarnesses(backend)) turnsSuite(h);

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
