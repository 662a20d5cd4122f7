/**
 * An engine store (Redis, MySQL) with its blob store (BLOB_BACKEND; lib/http/backends/blobs.ts) as
 * the local server builds it, on node:http with the fs driver's signed URLs answered beside the
 * API; and the checks both engines' suites share: a workspace's upload and download, a workspace
 * snapshot's push and pull, another user isolated, the session's delete taking its blobs along,
 * and BLOB_BACKEND=none answering 501 `unsupported` naming it.
 */

import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { createHttpClient, type NodeHttpSessionStore } from '../../lib/client/node/index.js';
import { loadConfig } from '../../lib/config.js';
import { EMPTY_HASH } from '../../lib/contract/hash.js';
import type { ArchiveInfo } from '../../lib/contract/types.js';
import { hasWorkspacePackSweep, type WorkspacePackSweeper } from '../../lib/contract/workspace-snapshots.js';
import type { FsDriver } from '../../lib/drivers/fs.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { type App, createApp } from '../../lib/http/app.js';
import { backendsFrom } from '../../lib/http/backends/local.js';
import { runSweep } from '../../lib/lifecycle/sweep.js';
import { hsToken, SECRET } from '../http/harness.js';

/** The app on an engine with a blob store, served on 127.0.0.1. */
export interface EngineWithBlobs {
  readonly baseUrl: string;
  readonly app: App;
  /** The blob driver BLOB_BACKEND named (undefined with `none`). */
  readonly blobDriver: ObjectStoreDriver | undefined;
  /** The folder fs blobs are written under (DATA_DIR). */
  readonly dataDir: string;
  /** STATE_PREFIX. */
  readonly prefix: string;
  client(user: string): NodeHttpSessionStore;
  /** A raw call as one user. */
  call(user: string, method: string, path: string, body?: unknown): Promise<Response>;
  close(): Promise<void>;
}

/** Starts the app on `env` (STORE_BACKEND, LOCK_BACKEND, their URLs, BLOB_BACKEND and its settings). */
export async function startEngineWithBlobs(env: Record<string, string>): Promise<EngineWithBlobs> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'engine-blobs-'));
  const prefix = `eb-${randomBytes(4).toString('hex')}/`;
  const config = loadConfig({
    AUTH_JWT_SECRET: SECRET,
    LOG_LEVEL: 'SILENT',
    DATA_DIR: dataDir,
    STATE_PREFIX: prefix,
    ...env,
  });
  let baseUrl = '';
  const backends = backendsFrom(config, () => baseUrl);
  const app = createApp(config, backends);
  await app.store.checkReady();
  const fs = backends.blobDriver as Partial<FsDriver> | undefined;
  const server = createNodeServer(
    app.handle,
    config.BODY_LIMIT_BYTES,
    fs?.serveBlob ? { serveBlob: fs.serveBlob, limitBytes: 64 * 1024 * 1024 } : undefined,
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    app,
    blobDriver: backends.blobDriver,
    dataDir,
    prefix,
    client: (user) => createHttpClient({ baseUrl, token: () => hsToken({ sub: user }) }),
    call: async (user, method, p, body) =>
      fetch(`${baseUrl}${p}`, {
        method,
        headers: {
          authorization: `Bearer ${await hsToken({ sub: user })}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export const sid = () => `s-${randomBytes(6).toString('hex')}`;
const digest = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Every name the blob driver holds under the app's prefix. */
export async function blobNames(api: EngineWithBlobs): Promise<string[]> {
  const driver = api.blobDriver as ObjectStoreDriver;
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await driver.list({ prefix: '', ...(cursor ? { cursor } : {}) });
    names.push(...page.objects.map((o) => o.key));
    cursor = page.nextCursor;
  } while (cursor);
  return names;
}

/** A workspace goes up and comes back whole; another user sees nothing of it; a delete takes it. */
export async function workspaceRoundTrip(api: EngineWithBlobs): Promise<void> {
  const alice = api.client('alice');
  const bob = api.client('bob');
  const s = sid();
  await alice.save(s, 'plan', { step: 1 });
  const data = new Uint8Array(randomBytes(300 * 1024));
  const info = await alice.uploadWorkspace(s, 'repo.tar', data, { encoding: 'identity' });
  expect(info.size).toBe(data.byteLength);
  const back = (await alice.downloadWorkspace(s, 'repo.tar')) as Uint8Array;
  expect(digest(back)).toBe(digest(data));
  expect((await alice.listWorkspaces(s)).map((w) => w.name)).toEqual(['repo.tar']);
  // The bytes are the blob store's, under alice's own names.
  const names = await blobNames(api);
  expect(names.some((n) => n.includes('alice') && n.includes(s))).toBe(true);
  // Another user's session of the same id is absent, never alice's.
  expect(await bob.listWorkspaces(s)).toEqual([]);
  expect(await bob.getWorkspace(s, 'repo.tar')).toBeUndefined();
  // The engine's delete takes the session's blobs with it.
  await alice.delete(s);
  expect(await alice.listWorkspaces(s)).toEqual([]);
  expect((await blobNames(api)).filter((n) => n.includes(s))).toEqual([]);
}

/** A workspace snapshot is pushed and pulled back; another user cannot list or pull it. */
export async function snapshotRoundTrip(api: EngineWithBlobs): Promise<void> {
  const alice = api.client('alice');
  const bob = api.client('bob');
  const s = sid();
  const src = await mkdtemp(path.join(tmpdir(), 'engine-snap-'));
  const out = path.join(await mkdtemp(path.join(tmpdir(), 'engine-pull-')), 'restored');
  try {
    await mkdir(path.join(src, 'src'), { recursive: true });
    const big = randomBytes(200 * 1024);
    await writeFile(path.join(src, 'README.md'), '# hello\n');
    await writeFile(path.join(src, 'src', 'data.bin'), big);
    const pushed = await alice.workspaces.push(s, 'repo', src);
    expect(pushed.uploadedPacks).toBeGreaterThan(0);
    expect((await alice.workspaces.list(s, 'repo')).map((x) => x.snapshotId)).toEqual([pushed.snapshotId]);
    expect(await alice.workspaces.pull(s, 'repo', 'latest', out)).toBe(true);
    expect(await readFile(path.join(out, 'README.md'), 'utf8')).toBe('# hello\n');
    expect(digest(await readFile(path.join(out, 'src', 'data.bin')))).toBe(digest(big));
    // Packs and manifest are in the blob store.
    expect((await blobNames(api)).filter((n) => n.includes(s) && n.includes('~wss~')).length).toBeGreaterThan(
      1,
    );
    expect(await bob.workspaces.list(s, 'repo')).toEqual([]);
    const other = path.join(await mkdtemp(path.join(tmpdir(), 'engine-pull-')), 'restored');
    // Absent for bob: nothing restored.
    expect(await bob.workspaces.pull(s, 'repo', pushed.snapshotId, other)).toBe(false);
  } finally {
    await rm(src, { recursive: true, force: true });
    await rm(path.dirname(out), { recursive: true, force: true });
  }
}

/** With BLOB_BACKEND=none the blob routes answer 501 `unsupported` naming it, never a 500. */
export async function refusedWithoutBlobs(api: EngineWithBlobs): Promise<void> {
  const s = sid();
  const calls: Array<[string, string, unknown?]> = [
    ['POST', `/v1/sessions/${s}/workspaces/w/uploads`, { size: 10, md5: 'AAAAAAAAAAAAAAAAAAAAAA==' }],
    ['GET', `/v1/sessions/${s}/workspaces`],
    ['POST', `/v1/sessions/${s}/workspaces/w/snapshots`, { chunks: [] }],
    ['GET', `/v1/sessions/${s}/workspaces/w/snapshots`],
  ];
  for (const [method, p, body] of calls) {
    const answer = await api.call('alice', method, p, body);
    expect(answer.status, `${method} ${p}`).toBe(501);
    expect(answer.headers.get('content-type')).toContain('application/problem+json');
    const problem = (await answer.json()) as { code: string; detail: string };
    expect(problem.code).toBe('unsupported');
    expect(problem.detail).toContain('BLOB_BACKEND');
  }
}

/**
 * Redis: a list's archives (a rewrite, a truncate) go to the blob store and read back there, pages
 * included, nothing of their items left in RAM; another user reads none of them.
 */
export async function redisArchivesInBlobs(
  api: EngineWithBlobs,
  redisKeys: (pattern: string) => Promise<string[]>,
): Promise<void> {
  const alice = api.client('alice');
  const s = sid();
  const items = Array.from({ length: 12 }, (_, n) => ({ n, text: `item ${n} ☕` }));
  await alice.appendList(s, 'm', items, { expectedCount: 0, expectedHash: EMPTY_HASH });
  // A rewrite archives the whole list; a truncate archives what it removes.
  const rewritten = await alice.saveList(s, 'm', [{ n: 'new' }, { n: 'newer' }, { n: 'newest' }]);
  expect(rewritten.action).toBe('rewritten');
  await alice.truncateList(s, 'm', { count: 1, expectedHash: rewritten.hash });
  const archives = await alice.listArchives(s, 'm');
  expect(archives.map((a) => [a.count, a.offset])).toEqual([
    [12, 0],
    [2, 1],
  ]);
  const [whole, cut] = archives as [ArchiveInfo, ArchiveInfo];
  expect((await alice.getArchive(s, 'm', whole.archiveId))?.items).toEqual(items);
  const paged = await alice.getArchive(s, 'm', whole.archiveId, { offset: 4, limit: 3 });
  expect(paged).toMatchObject({ count: 12, offset: 4, hash: whole.hash, items: items.slice(4, 7) });
  // The page's base hash is the chain's hash after item 3: the hash of the first 4 items.
  const four = await alice.saveList(sid(), 'x', items.slice(0, 4));
  expect(paged?.baseHash).toBe(four.hash);
  expect((await alice.getArchive(s, 'm', whole.archiveId, { last: 2 }))?.items).toEqual(items.slice(10));
  expect((await alice.getArchive(s, 'm', cut.archiveId))?.items).toEqual([{ n: 'newer' }, { n: 'newest' }]);
  // In the blob store, content-named; no archived item left in Redis.
  const stored = (await blobNames(api)).filter((n) => n.includes(s) && n.includes('.list~a~engine~'));
  expect(stored).toHaveLength(2);
  expect(stored.every((n) => /~[0-9a-f]{64}$/.test(n))).toBe(true);
  expect(await redisKeys(`*${s}*:a:*`)).toEqual([]);
  expect(await redisKeys(`*${s}*:ah:*`)).toEqual([]);
  // Another user: no such archive.
  const bob = api.client('bob');
  expect(await bob.listArchives(s, 'm')).toEqual([]);
  expect(await bob.getArchive(s, 'm', whole.archiveId)).toBeUndefined();
  // The session's delete takes them.
  await alice.delete(s);
  expect((await blobNames(api)).filter((n) => n.includes(s))).toEqual([]);
}

/** The pack sweep: delegated to the blob side with a blob store; absent without one. */
export async function sweepDelegated(withBlobs: EngineWithBlobs, without: EngineWithBlobs): Promise<void> {
  const user = withBlobs.app.store.forUser('alice');
  expect(hasWorkspacePackSweep(user)).toBe(true);
  const s = sid();
  const src = await mkdtemp(path.join(tmpdir(), 'engine-sweep-'));
  try {
    await writeFile(path.join(src, 'a.txt'), 'a');
    await withBlobs.client('alice').workspaces.push(s, 'w', src);
    const swept = await (user as typeof user & WorkspacePackSweeper).sweepWorkspacePacks({ sessionId: s });
    expect(swept).toMatchObject({ workspaces: 1, referenced: swept.packs, unreferenced: 0 });
    expect(swept.packs).toBeGreaterThan(0);
    // The scheduled sweep (every user's packs) finds them through the app's blob store.
    const report = await runSweep(withBlobs.app);
    expect(report.packs?.workspaces).toBeGreaterThanOrEqual(1);
    expect(report.packs?.referenced).toBeGreaterThanOrEqual(swept.packs);
    expect((await runSweep(without.app)).packs).toBeUndefined();
  } finally {
    await rm(src, { recursive: true, force: true });
  }
  expect(hasWorkspacePackSweep(without.app.store.forUser('alice'))).toBe(false);
}
