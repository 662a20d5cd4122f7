/**
 * "no read silently returns part of a list": the typed client reads a list (or an archive)
 * larger than the 4 MiB answer cap whole, returns the first snapshot while an appender runs, starts
 * again when the list is rewritten meanwhile, and gives up with `ListChangedError`.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHttpClient, ListChangedError, PayloadTooLargeError } from '../../lib/client/index.js';
import { loadConfig } from '../../lib/config.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import type { SessionStore } from '../../lib/contract/types.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { createStateStore } from '../../lib/store/store.js';
import { hsToken, SECRET } from '../http/harness.js';

const MIB = 1024 * 1024;
/** 6,500 items of about 1 KB: about 6.7 MB, well over the 4 MiB answer cap. */
const COUNT = 6500;
const listOf = (tag: string, count = COUNT) =>
  Array.from({ length: count }, (_, i) => ({ i, tag, text: 'x'.repeat(1000) }));

describe('typed client: whole reads of lists larger than the answer cap', () => {
  const config = loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, LOG_LEVEL: 'SILENT' });
  const driver = createMemoryDriver();
  /** The same store the server serves, written directly (a rewrite of 6.7 MB exceeds a request body). */
  const direct: SessionStore = createStateStore({ driver, prefix: config.STATE_PREFIX }).forUser('alice');
  let server: ReturnType<typeof createNodeServer>;
  let baseUrl: string;
  /** Requests the client made, and a hook run after each first page of a list read is answered. */
  let requests: Array<{ method: string; url: URL }>;
  let afterFirstPage: (() => Promise<void>) | undefined;

  const isFirstListPage = (method: string, url: URL) =>
    method === 'GET' &&
    /\/lists\/[^/]+$/.test(url.pathname) &&
    Number(url.searchParams.get('offset') ?? 0) === 0;

  const client = () =>
    createHttpClient({
      baseUrl,
      token: () => hsToken({ sub: 'alice' }),
      fetch: async (input, init) => {
        const url = new URL(String(input));
        const method = init?.method ?? 'GET';
        requests.push({ method, url });
        const response = await fetch(input, init);
        if (!isFirstListPage(method, url) || !afterFirstPage) return response;
        // The server has answered this page: change the list before the client asks for the next one.
        const body = await response.arrayBuffer();
        await afterFirstPage();
        return new Response(body, { status: response.status, headers: response.headers });
      },
    });

  beforeAll(async () => {
    expect(config.BODY_LIMIT_BYTES).toBe(4 * MIB);
    expect(Buffer.byteLength(JSON.stringify(listOf('a')))).toBeGreaterThan(6_000_000);
    const app = createApp(config, { driver, lock: createMemoryLock() });
    server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    requests = [];
    afterFirstPage = undefined;
  });

  it('reads the whole list, pages through the cap, and remembers it for the next append', async () => {
    const items = listOf('a');
    await direct.saveList('whole', 'memory', items);
    const alice = client();
    const page = await alice.getList('whole', 'memory');
    expect(page.count).toBe(COUNT);
    expect(page.hash).toBe(chainHash(EMPTY_HASH, items));
    expect(page.items).toEqual(items);
    expect(requests.filter((r) => r.method === 'GET').length).toBeGreaterThan(1);
    // The client knows the list it returned: extending it sends only the new item.
    requests = [];
    const next = [...items, { i: COUNT, tag: 'a', text: 'new' }];
    expect(await alice.saveList('whole', 'memory', next)).toMatchObject({ count: COUNT + 1 });
    expect(requests.map((r) => r.method)).toEqual(['POST']);
    // With a limit, that page.
    const limited = await alice.getList('whole', 'memory', { offset: 10, limit: 5 });
    expect(limited).toEqual({
      items: next.slice(10, 15),
      count: COUNT + 1,
      hash: chainHash(EMPTY_HASH, next),
      offset: 10,
      baseHash: chainHash(EMPTY_HASH, next.slice(0, 10)),
    });
  });

  it('reads the whole rest of the list from an offset', async () => {
    const items = listOf('o');
    await direct.saveList('offset', 'memory', items);
    const page = await client().getList('offset', 'memory', { offset: 100 });
    expect(page).toEqual({
      items: items.slice(100),
      count: COUNT,
      hash: chainHash(EMPTY_HASH, items),
      offset: 100,
      baseHash: chainHash(EMPTY_HASH, items.slice(0, 100)),
    });
  });

  it('returns the first snapshot while an appender runs', async () => {
    const items = listOf('a');
    await direct.saveList('append', 'memory', items);
    let appended = COUNT;
    afterFirstPage = async () => {
      const extra = Array.from({ length: 10 }, (_, j) => ({ i: appended + j, tag: 'late', text: 'y' }));
      await direct.appendList('append', 'memory', extra, { expectedCount: appended });
      appended += extra.length;
    };
    const page = await client().getList('append', 'memory');
    expect(page.count).toBe(COUNT);
    expect(page.hash).toBe(chainHash(EMPTY_HASH, items));
    expect(page.items).toEqual(items);
    expect(requests.filter((r) => isFirstListPage(r.method, r.url))).toHaveLength(1);
    expect((await direct.getList('append', 'memory', { limit: 0 })).count).toBe(COUNT + 10);
  });

  it('starts again when the list is rewritten meanwhile, and returns the new list', async () => {
    await direct.saveList('rewrite', 'memory', listOf('a'));
    const rewritten = listOf('b');
    afterFirstPage = async () => {
      afterFirstPage = undefined;
      expect(await direct.saveList('rewrite', 'memory', rewritten)).toMatchObject({ action: 'rewritten' });
    };
    const page = await client().getList('rewrite', 'memory');
    expect(page.count).toBe(COUNT);
    expect(page.hash).toBe(chainHash(EMPTY_HASH, rewritten));
    expect(page.items).toEqual(rewritten);
    expect(requests.filter((r) => isFirstListPage(r.method, r.url))).toHaveLength(2);
  });

  it('gives up with ListChangedError after 3 restarts', async () => {
    await direct.saveList('churn', 'memory', listOf('a'));
    let rewrites = 0;
    afterFirstPage = async () => {
      rewrites++;
      await direct.saveList('churn', 'memory', listOf(`r${rewrites}`));
    };
    const error = await client()
      .getList('churn', 'memory')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ListChangedError);
    expect(error).toMatchObject({ sessionId: 'churn', key: 'memory', attempts: 4 });
    expect(requests.filter((r) => isFirstListPage(r.method, r.url))).toHaveLength(4);
  });

  it('reads a whole archive larger than the answer cap', async () => {
    const items = listOf('a');
    await direct.saveList('archive', 'memory', items);
    await direct.saveList('archive', 'memory', listOf('b', 10));
    const alice = client();
    const [archive] = await alice.listArchives('archive', 'memory');
    expect(archive?.count).toBe(COUNT);
    const archiveId = archive?.archiveId ?? '';
    const page = await alice.getArchive('archive', 'memory', archiveId);
    expect(page).toEqual({
      items,
      count: COUNT,
      hash: chainHash(EMPTY_HASH, items),
      offset: 0,
      baseHash: EMPTY_HASH,
    });
    expect(requests.filter((r) => r.method === 'GET' && r.url.pathname.includes('/archives/')).length).toBe(
      2,
    );
    expect(await alice.getArchive('archive', 'memory', archiveId, { offset: 3, limit: 2 })).toEqual({
      items: items.slice(3, 5),
      count: COUNT,
      hash: chainHash(EMPTY_HASH, items),
      offset: 3,
      baseHash: chainHash(EMPTY_HASH, items.slice(0, 3)),
    });
  });

  it('refuses an item larger than an answer with PayloadTooLargeError instead of looping', async () => {
    await direct.saveList('huge', 'memory', [{ small: true }, { big: 'z'.repeat(4 * MIB) }]);
    await expect(client().getList('huge', 'memory')).rejects.toBeInstanceOf(PayloadTooLargeError);
    expect(requests.filter((r) => r.method === 'GET')).toHaveLength(2);
  });
});
