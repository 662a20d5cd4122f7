/**
 * `AbortSignal` on every call: an aborted call rejects with the signal's reason at once,
 * before it starts, while it waits for an answer (even from a fetch that ignores the signal), while
 * it waits between retries, and during direct transfers to and from the object store.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createHttpClient } from '../../lib/client/index.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { paths } from '../../lib/protocol/paths.js';
import { FAKE_TIMERS, fakeFetch, never, problem, scriptedServer, until } from './helpers.js';

const reasonOf = (signal: AbortSignal) => signal.reason as unknown;
const expiresAt = new Date(Date.now() + 3600_000).toISOString();

describe('typed client: AbortSignal', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('rejects a call whose signal is already aborted with its reason, sending nothing', async () => {
    const fake = fakeFetch(() => Response.json({ etag: 'v' }));
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const controller = new AbortController();
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(client.save('s', 'k', 1, { signal: controller.signal })).rejects.toBe(reason);
    await expect(client.exists('s', { signal: controller.signal })).rejects.toBe(reason);
    await expect(client.deleteAllSessions({ signal: controller.signal })).rejects.toBe(reason);
    await expect(
      client.appendList('s', 'k', ['a'], { expectedCount: 0, signal: controller.signal }),
    ).rejects.toBe(reason);
    expect(fake.calls).toHaveLength(0);
  });

  it('passes the signal to fetch and rejects at once when aborted during a call, even if fetch ignores it', async () => {
    const fake = fakeFetch(() => never<Response>());
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const controller = new AbortController();
    const result = client.getList('s', 'k', { signal: controller.signal });
    await until(() => fake.calls.length === 1);
    expect(fake.calls[0]?.signal).toBeInstanceOf(AbortSignal);
    controller.abort();
    await expect(result).rejects.toBe(reasonOf(controller.signal));
    await expect(result).rejects.toMatchObject({ name: 'AbortError' });
    expect(fake.calls).toHaveLength(1);
  });

  it('aborts a real request to a server that does not answer', async () => {
    const hanging = await scriptedServer(() => {});
    const client = createHttpClient({ baseUrl: hanging.url });
    const controller = new AbortController();
    const result = client.get('s', 'k', { signal: controller.signal });
    await until(() => hanging.requests.length === 1);
    const reason = new Error('user pressed stop');
    controller.abort(reason);
    await expect(result).rejects.toBe(reason);
    expect(hanging.requests).toHaveLength(1);
    await hanging.close();
  });

  it('rejects while it waits between retries, without sending again', async () => {
    vi.useFakeTimers(FAKE_TIMERS);
    const fake = fakeFetch(
      () =>
        new Response('{"message":"Service Unavailable"}', { status: 503, headers: { 'retry-after': '2' } }),
    );
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const controller = new AbortController();
    const result = client.listWorkspaces('s', { signal: controller.signal });
    result.catch(() => {});
    await vi.advanceTimersByTimeAsync(100);
    expect(fake.calls).toHaveLength(1); // waiting at least 1 s, per Retry-After
    controller.abort();
    await expect(result).rejects.toBe(reasonOf(controller.signal));
    await vi.advanceTimersByTimeAsync(5000);
    expect(fake.calls).toHaveLength(1);
  });

  it('aborts a contended append while it waits to send it again', async () => {
    vi.useFakeTimers(FAKE_TIMERS);
    const fake = fakeFetch(() => problem(409, 'contended', {}, { 'retry-after': '1' }));
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const controller = new AbortController();
    const result = client.appendList('s', 'k', ['a'], { expectedCount: 0, signal: controller.signal });
    result.catch(() => {});
    await vi.advanceTimersByTimeAsync(10);
    controller.abort();
    await expect(result).rejects.toBe(reasonOf(controller.signal));
    await vi.advanceTimersByTimeAsync(5000);
    expect(fake.calls).toHaveLength(1);
  });

  it('aborts a direct upload to the object store (a part PUT that never completes)', async () => {
    const data = new Uint8Array(64);
    const fake = fakeFetch((sent) => {
      if (sent.url.startsWith('http://store.test')) return never<Response>();
      return Response.json(
        {
          uploadId: 'u1',
          expiresAt,
          upload: { method: 'PUT', url: 'http://store.test/object', headers: {} },
        },
        { status: 201 },
      );
    });
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const controller = new AbortController();
    const progress: number[] = [];
    const result = client.uploadWorkspace('s', 'w', data, {
      signal: controller.signal,
      onProgress: (done) => progress.push(done),
    });
    await until(() => fake.calls.some((c) => c.url.startsWith('http://store.test')));
    controller.abort();
    await expect(result).rejects.toBe(reasonOf(controller.signal));
    // Never completed: no complete call to the API, no progress beyond 0.
    expect(fake.calls.map((c) => c.method)).toEqual(['POST', 'PUT']);
    expect(progress).toEqual([0]);
  });

  it('aborts a 303 follow of a large value whose download never answers', async () => {
    const fake = fakeFetch((sent) => {
      if (sent.url.startsWith('http://store.test')) return never<Response>();
      return Response.json(
        {
          etag: 'v',
          revision: 1,
          size: 10,
          download: { method: 'GET', url: 'http://store.test/value', headers: {} },
          expiresAt,
        },
        { status: 303, headers: { location: 'http://store.test/value' } },
      );
    });
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const controller = new AbortController();
    const result = client.get('s', 'big', { signal: controller.signal });
    await until(() => fake.calls.length === 2);
    controller.abort();
    await expect(result).rejects.toBe(reasonOf(controller.signal));
  });

  it('aborts a workspace download whose body stalls half way (node:http transport)', async () => {
    const body = Buffer.alloc(100_000, 7);
    let partlySent = false;
    const server = await scriptedServer((req, res) => {
      if (req.url === paths.workspace('s', 'w')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            name: 'w',
            size: body.length,
            storageClass: 'standard',
            lastModified: new Date().toISOString(),
            contentEncoding: 'identity',
            status: 'ready',
            download: { method: 'GET', url: `${server.url}/blob`, headers: {} },
            expiresAt,
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-length': String(body.length) });
      res.write(body.subarray(0, 40_000), () => {
        partlySent = true;
      });
    });
    const client = createHttpClient({ baseUrl: server.url });
    const controller = new AbortController();
    const progress: Array<[number, number]> = [];
    const result = client.downloadWorkspace('s', 'w', {
      signal: controller.signal,
      onProgress: (done, total) => progress.push([done, total]),
    });
    await until(() => partlySent && progress.some(([done]) => done > 0));
    controller.abort();
    await expect(result).rejects.toBe(reasonOf(controller.signal));
    expect(progress[0]).toEqual([0, body.length]);
    expect(progress.at(-1)?.[0]).toBeLessThanOrEqual(40_000);
    await server.close();
  });

  it('aborts a whole list read between its pages', async () => {
    const items = ['a', 'b'];
    const controller = new AbortController();
    const fake = fakeFetch((sent) => {
      if (sent.method === 'GET') {
        // The first page holds one of two items; the client asks for the second.
        controller.abort();
        return Response.json({ items: ['a'], count: 2, hash: chainHash(EMPTY_HASH, items) });
      }
      return Response.json({ action: 'created', count: 1, hash: chainHash(EMPTY_HASH, ['a']) });
    });
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    await client.saveList('s', 'k', ['a']);
    const reading = client.getList('s', 'k', { signal: controller.signal });
    await expect(reading).rejects.toBe(reasonOf(controller.signal));
    expect(fake.calls.filter((c) => c.method === 'GET')).toHaveLength(1);
  });

  it('a multipart upload whose part is refused aborts the parts in flight and starts no more', async () => {
    const MIB = 1024 * 1024;
    const inFlight: AbortSignal[] = [];
    const fake = fakeFetch((sent) => {
      if (sent.url.startsWith('http://store.test/part1'))
        return new Response('<Error><Code>AccessDenied</Code></Error>', { status: 403 });
      if (sent.url.startsWith('http://store.test/')) {
        if (sent.signal) inFlight.push(sent.signal);
        return new Promise<Response>((_, reject) =>
          sent.signal?.addEventListener('abort', () => reject(sent.signal?.reason)),
        );
      }
      return Response.json(
        {
          uploadId: 'u1',
          expiresAt: new Date(Date.now() + 3600_000).toISOString(),
          parts: [1, 2, 3, 4].map((partNumber) => ({
            partNumber,
            method: 'PUT',
            url: `http://store.test/part${partNumber}`,
            headers: {},
          })),
        },
        { status: 201 },
      );
    });
    const client = createHttpClient({ baseUrl: 'http://api.test', fetch: fake.fetch });
    const upload = client.uploadWorkspace('s', 'w', new Uint8Array(20 * MIB), {
      encoding: 'identity',
      multipartAboveBytes: 5 * MIB,
      partBytes: 5 * MIB,
      concurrency: 2,
    });
    await expect(upload).rejects.toThrow(/AccessDenied/);
    // Part 2 was in flight beside part 1: it is aborted; parts 3 and 4 never start.
    expect(inFlight.length).toBeGreaterThan(0);
    expect(inFlight.every((signal) => signal.aborted)).toBe(true);
    expect(fake.calls.filter((c) => /part[34]/.test(c.url))).toEqual([]);
  });
});
