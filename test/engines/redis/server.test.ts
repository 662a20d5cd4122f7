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
import { commandsSince, resetCommands, startRedis } from '../../servers/redis.js';

/** What the turn routes answer (as far as the test reads it). */
interface TurnAnswer {
  lease?: { owner: string; token: number; released?: boolean };
  values?: Array<Record<string, unknown>>;
  lists?: Array<Record<string, unknown>>;
}

describe('the local server on Redis (store and lock)', () => {
  let stop: () => Promise<void>;
  let baseUrl = '';
  let port = 0;
  const client = (user: string) => createHttpClient({ baseUrl, token: () => hsToken({ sub: user }) });

  beforeAll(async () => {
    const redis = await startRedis();
    port = redis.port;
    const config = loadConfig({
      STORE_BACKEND: 'redis',
      LOCK_BACKEND: 'redis',
      REDIS_URL: redis.url,
      AUTH_JWT_SECRET: SECRET,
      LOG_LEVEL: 'SILENT',
    });
    const backends = backendsFrom(config);
    // No driver and no lock of lib/lock/: the engine makes both.
    expect(Object.keys(backends)).toEqual(['engine']);
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
    expect(await alice.getVersioned('s1', 'plan')).toEqual({ value: { step: 1 }, version, revision: 1 });
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

  it('a two-call turn (lease + snapshot, commit + release) is 2 round trips in all, counted at the server', async () => {
    const alice = client('alice');
    const seeded = await alice.appendList('t2', 'm', [{ n: 0 }], { expectedCount: 0 });
    await alice.save('t2', 'a', 1);
    const post = async (path: string, body: unknown) => {
      const answer = await fetch(`${baseUrl}/v1/sessions/t2/${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await hsToken({ sub: 'alice' })}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify(body),
      });
      return { status: answer.status, body: (await answer.json()) as TurnAnswer };
    };
    await resetCommands(port);
    const turn = await post('turns', {
      leaseMs: 60_000,
      values: ['a', 'b'],
      lists: [{ key: 'm', last: 50 }],
    });
    expect(turn.status, JSON.stringify(turn.body)).toBe(201);
    const lease = turn.body.lease as { owner: string; token: number };
    expect(lease.token).toBeGreaterThan(0);
    expect(turn.body.values?.[0]).toMatchObject({ key: 'a', value: 1 });
    const done = await post('commits', {
      commitId: 'turn-2rt',
      token: lease.token,
      lease: { owner: lease.owner, release: true },
      values: [
        { key: 'a', value: 2 },
        { key: 'b', value: 3 },
      ],
      lists: [{ key: 'm', append: [{ n: 1 }, { n: 2 }], expectedCount: 1, expectedHash: seeded.hash }],
    });
    expect(done.status).toBe(200);
    const server = await commandsSince(port);
    // Every command of a turn is a script (Redis 7 counts EVALSHA as eval): two of them.
    expect((server.eval ?? 0) + (server.evalsha ?? 0)).toBe(2);
    expect(done.body.lists?.[0]).toMatchObject({ key: 'm', action: 'appended', count: 3 });
    expect(done.body.lease).toEqual({ owner: lease.owner, released: true });
    // Released: the next turn gets the lease at once, and reads the commit.
    expect(await alice.getLock('t2')).toBeUndefined();
    const next = await post('turns', { leaseMs: 60_000, values: ['a'] });
    expect(next.body.lease?.token).toBeGreaterThan(lease.token);
    expect(next.body.values?.[0]).toMatchObject({ value: 2 });
    // A replay of the commit answers the same, its lease gone.
    const replay = await post('commits', {
      commitId: 'turn-2rt',
      token: lease.token,
      lease: { owner: lease.owner, release: true },
      values: [
        { key: 'a', value: 2 },
        { key: 'b', value: 3 },
      ],
      lists: [{ key: 'm', append: [{ n: 1 }, { n: 2 }], expectedCount: 1, expectedHash: seeded.hash }],
    });
    expect(replay.body.lists).toEqual(done.body.lists);
  });
});
