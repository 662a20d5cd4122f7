/**
 * Over HTTP: `GET /v1/sessions/{sessionId}/keys` and
 * `POST /v1/sessions/{sessionId}/lists/{key}/truncate` (keys-truncate-suite.ts), through each adapter
 * (local node:http, API Gateway v2 events, FC 3 events) on memory; then the typed client's
 * `listKeys` and `truncateList` (Dates, typed errors, a lost answer retried with the same
 * Idempotency-Key).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FencedError,
  ListPreconditionFailedError,
  ListTooShortError,
  SessionNotFoundError,
  ValidationError,
} from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { localApi } from '../client/helpers.js';
import { contractHarnesses, memoryBackend } from './harness.js';
import { keysTruncateSuite } from './keys-truncate-suite.js';

for (const h of contractHarnesses(memoryBackend)) keysTruncateSuite(h);

describe('typed client: listKeys and truncateList', () => {
  let api: Awaited<ReturnType<typeof localApi>>;
  beforeAll(async () => {
    api = await localApi();
  });
  afterAll(() => api.close());

  it('listKeys answers one page with Dates and a cursor; an absent session is SessionNotFoundError; bad options are ValidationError', async () => {
    const alice = api.client();
    const s = `c-${randomUUID()}`;
    const { version } = await alice.save(s, 'b/2', { v: 1 });
    const list = await alice.saveList(s, 'a', [1, 2]);
    await alice.save(s, 'c', 3);
    const first = await alice.listKeys(s, { limit: 2 });
    expect(first.lists).toEqual([{ key: 'a', count: 2, hash: list.hash, lastModified: expect.any(Date) }]);
    expect(first.values).toEqual([
      { key: 'b/2', etag: version, revision: 1, size: 7, lastModified: expect.any(Date) },
    ]);
    expect(Math.abs(Date.now() - (first.values[0]?.lastModified.getTime() ?? 0))).toBeLessThan(60_000);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await alice.listKeys(s, { limit: 2, cursor: first.nextCursor as string });
    expect(second.values.map((v) => v.key)).toEqual(['c']);
    expect('nextCursor' in second).toBe(false);
    expect((await alice.listKeys(s, { prefix: 'b/' })).values.map((v) => v.key)).toEqual(['b/2']);
    const absent = await alice.listKeys(`c-${randomUUID()}`).catch((e: unknown) => e);
    expect(absent).toBeInstanceOf(SessionNotFoundError);
    expect((absent as SessionNotFoundError).requestId).toEqual(expect.any(String));
    const bad = await alice.listKeys(s, { limit: 0 }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ValidationError);
    expect((bad as ValidationError).field).toBe('limit');
  });

  it('truncateList: typed errors, listArchives reads offset, and a lost answer is retried with the same Idempotency-Key', async () => {
    const s = `c-${randomUUID()}`;
    const { token } = await api.lock.acquire({ userId: 'alice', sessionId: s });
    const { hash } = await api.store.saveList(s, 'l', ['a', 'b', 'c', 'd'], { token });
    const keys: Array<string | null> = [];
    let drop = true;
    const losing: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === 'POST') {
        keys.push(new Headers(init.headers).get('idempotency-key'));
        if (drop) {
          drop = false;
          await response.arrayBuffer(); // applied by the server, the answer lost on the way
          throw new TypeError('fetch failed', { cause: new Error('socket hang up') });
        }
      }
      return response;
    };
    const alice = api.client({ fetch: losing });
    const cut = await alice.truncateList(s, 'l', { count: 1, expectedHash: hash, token });
    expect(cut).toEqual({ action: 'truncated', count: 1, hash: chainHash(EMPTY_HASH, ['a']) });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toEqual(expect.any(String));
    expect(keys[1]).toBe(keys[0]);
    const archives = await alice.listArchives(s, 'l');
    expect(archives).toEqual([
      {
        archiveId: expect.any(String),
        count: 3,
        hash: chainHash(EMPTY_HASH, ['b', 'c', 'd']),
        offset: 1,
        archivedAt: expect.any(Date),
      },
    ]);
    expect((await alice.getArchive(s, 'l', archives[0]?.archiveId as string))?.items).toEqual([
      'b',
      'c',
      'd',
    ]);
    // The writeId given is the Idempotency-Key.
    await alice.appendList(s, 'l', ['e', 'f'], { expectedCount: 1, expectedHash: cut.hash });
    const named = await alice.truncateList(s, 'l', {
      count: 2,
      expectedHash: chainHash(EMPTY_HASH, ['a', 'e', 'f']),
      writeId: 'pop-7',
    });
    expect(keys.at(-1)).toBe('pop-7');
    expect(named.count).toBe(2);
    const stale = await alice.truncateList(s, 'l', { count: 1, expectedHash: hash }).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(ListPreconditionFailedError);
    expect((stale as ListPreconditionFailedError).currentHash).toBe(named.hash);
    const short = await alice
      .truncateList(s, 'l', { count: 3, expectedHash: named.hash })
      .catch((e: unknown) => e);
    expect(short).toBeInstanceOf(ListTooShortError);
    expect(short).toMatchObject({ field: 'count', count: 3, currentCount: 2 });
    await expect(
      alice.truncateList(s, 'l', { count: 1, expectedHash: named.hash, token: token - 1 }),
    ).rejects.toBeInstanceOf(FencedError);
    expect((await api.store.getList(s, 'l')).items).toEqual(['a', 'e']);
  });
});
