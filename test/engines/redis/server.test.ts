/**
 * The app on STORE_BACKEND=redis and LOCK_BACKEND=redis (lib/http/app.ts), as the local server
 * builds it: the typed client against it, workspaces and direct uploads refused as 501
 * `unsupported` naming BLOB_BACKEND, and a turn fenced by the Redis lock inside the scripts.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../../lib/client/index.js';
import { loadConfig } from '../../../lib/config.js';
import { FencedError, UnsupportedOperationError } from '../../../lib/contract/errors.js';
import { EMPTY_HASH } from '../../../lib/contract/hash.js';
import { createNodeServer } from '../../../lib/http/adapters/node.js';
import { createApp } from '../../../lib/http/app.js';
import { backendsFrom } from '../../../lib/http/backends/local.js';
import { hsToken, SECRET } from '../../http/harness.js';
import { startRedis } from '../../servers/redis.js';

describe('the local server on Redis (store and lock)', () => {
  let stop: () => Promise<void>;
  let baseUrl = '';
  const client = (user: string) => createHttpClient({ baseUrl, token: () => hsToken({ sub: user }) });

  beforeAll(async () => {
    const redis = await startRedis();
    const config = loadConfig({
      STORE_BACKEND: 'redis',
      LOCK_BACKEND: 'redis',
      REDIS_URL: redis.url,
      AUTH_JWT_SECRET: SECRET,
      LOG_LEVEL: 'SILENT',
    });
    const backends = backendsFrom(config);
    expect(backends).toEqual({});
    const app = createApp(config, backends);
    expect(app.driver).toBeUndefined();
    await app.store.checkReady();
    const server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    stop = async () => {
      await new Promise((r) => server.close(r));
      await redis.close();
    };
  });
  afterAll(() => stop());

  it('answers its capabilities: atomic commits, no presigned transfer', async () => {
    const caps = (await (await fetch(`${baseUrl}/v1/capabilities`)).json()) as Record<string, unknown>;
    expect(caps).toMatchObject({ atomicCommits: true, presignedTransfer: false, conditionalOverwrite: true });
  });

  it('saves, appends and reads back through the routes', async () => {
    const alice = client('alice');
    const { version } = await alice.save('s1', 'plan', { step: 1 });
    expect(await alice.getVersioned('s1', 'plan')).toEqual({ value: { step: 1 }, version });
    const appended = await alice.appendList('s1', 'm', [{ n: 1 }], {
      expectedCount: 0,
      expectedHash: EMPTY_HASH,
    });
    expect((await alice.getList('s1', 'm', { last: 50 })).items).toEqual([{ n: 1 }]);
    expect(appended.count).toBe(1);
    expect((await client('bob').listSessionIds()).sessions).toEqual([]);
  });

  it('refuses workspaces and direct uploads as 501 unsupported naming BLOB_BACKEND, never a 500', async () => {
    const alice = client('alice');
    const refused = await alice.listWorkspaces('s1').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(UnsupportedOperationError);
    expect(refused).toMatchObject({ status: 501, code: 'unsupported' });
    const answer = await fetch(`${baseUrl}/v1/sessions/s1/workspaces/w/uploads`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await hsToken({ sub: 'alice' })}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ size: 10, md5: 'AAAAAAAAAAAAAAAAAAAAAA==' }),
    });
    expect(answer.status).toBe(501);
    const problem = (await answer.json()) as { code: string; detail: string };
    expect(problem.code).toBe('unsupported');
    expect(problem.detail).toContain('BLOB_BACKEND');
  });

  it('a turn with the Redis lock: the commit fences a stale lease out, the live one commits', async () => {
    const alice = client('alice');
    const first = await alice.acquireLock('turn', { leaseMs: 1000 });
    await new Promise((r) => setTimeout(r, 1100));
    const second = await alice.acquireLock('turn', { leaseMs: 60_000 });
    expect(second.token).toBeGreaterThan(first.token);
    const stale = await alice
      .commit('turn', { commitId: 'c-stale', token: first.token, values: [{ key: 'k', value: 'old' }] })
      .catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(FencedError);
    const done = await alice.commit('turn', {
      commitId: 'c-live',
      token: second.token,
      values: [{ key: 'k', value: 'new' }],
    });
    expect(done.values[0]?.etag).toBeTruthy();
    expect(await alice.get('turn', 'k')).toBe('new');
  });
});
