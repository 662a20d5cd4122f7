/**
 * Storage v2: a list item over 1 MiB is an object of its own; a page whose first item alone is over
 * the answer cap answers 303 to that item's object (as big values do), and the typed client follows
 * it. On the s3 driver (s3rver behind the S3 front), which presigns.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../lib/client/index.js';
import { loadConfig } from '../../lib/config.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { createS3Driver } from '../../lib/drivers/s3.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { createStateStore } from '../../lib/store/store.js';
import { s3rverOptions } from '../backends.js';
import { hsToken, SECRET } from '../http/harness.js';

const MIB = 1024 * 1024;

describe('list items over the answer cap', () => {
  const config = loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, LOG_LEVEL: 'SILENT' });
  let driver: ReturnType<typeof createS3Driver>;
  let server: ReturnType<typeof createNodeServer>;
  let baseUrl: string;
  const prefix = `big-items-${Date.now()}/`;

  beforeAll(async () => {
    driver = createS3Driver(s3rverOptions());
    const app = createApp({ ...config, STATE_PREFIX: prefix }, { driver, lock: createMemoryLock() });
    server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    await driver.close();
  });

  it('a page whose first item is over the cap is a 303 to it; the client reads the list whole through it', async () => {
    // Written through the library: a 5 MiB item does not fit a request body either.
    const direct = createStateStore({ driver, prefix }).forUser('alice');
    const huge = { role: 'tool', content: 'h'.repeat(5 * MIB) };
    const items = [{ role: 'user', content: 'run it' }, huge, { role: 'assistant', content: 'done' }];
    await direct.saveList('s', 'memory', items);
    const token = await hsToken({ sub: 'alice' });
    const raw = await fetch(`${baseUrl}/v1/sessions/s/lists/memory?offset=1&limit=2`, {
      headers: { authorization: `Bearer ${token}` },
      redirect: 'manual',
    });
    expect(raw.status).toBe(303);
    const located = (await raw.json()) as Record<string, unknown>;
    expect(located).toMatchObject({
      offset: 1,
      count: 3,
      baseHash: chainHash(EMPTY_HASH, items.slice(0, 1)),
    });
    expect(raw.headers.get('location')).toBe((located.download as { url: string }).url);
    expect(located.size as number).toBeGreaterThan(5 * MIB);

    const alice = createHttpClient({ baseUrl, token: () => hsToken({ sub: 'alice' }) });
    const whole = await alice.getList('s', 'memory');
    expect(whole.items).toEqual(items);
    expect(whole.hash).toBe(chainHash(EMPTY_HASH, items));
    expect((await alice.getList('s', 'memory', { offset: 1, limit: 1 })).items).toEqual([huge]);
    // The server cuts `last: 2` before the big item; the client reads it (through its 303) too.
    expect((await alice.getList('s', 'memory', { last: 2 })).items).toEqual(items.slice(1));
    expect(await alice.locateListItem('s', 'memory', 0)).toBeUndefined();
    expect((await alice.locateListItem('s', 'memory', 1))?.size).toBeGreaterThan(5 * MIB);
  });
});
