/**
 * MySQL (MariaDB, started by the test) with a blob store (docs/DESIGN.md, "What lives where"):
 * BLOB_BACKEND=fs keeps workspaces and workspace snapshots through the same routes and client as
 * on object storage, another user isolated; archives stay rows; BLOB_BACKEND=none answers 501
 * `unsupported` naming it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMPTY_HASH } from '../../lib/contract/hash.js';
import { connectMysql } from '../../lib/engines/mysql/index.js';
import { type MariaDb, startMariaDb } from '../servers/mariadb.js';
import {
  blobNames,
  type EngineWithBlobs,
  refusedWithoutBlobs,
  sid,
  snapshotRoundTrip,
  startEngineWithBlobs,
  sweepDelegated,
  workspaceRoundTrip,
} from './blob-harness.js';

let db: MariaDb;
const onMysql = () => ({ STORE_BACKEND: 'mysql', LOCK_BACKEND: 'mysql', MYSQL_URL: db.url });
beforeAll(async () => {
  db = await startMariaDb();
  const conn = connectMysql({ url: db.url });
  await conn.bootstrap();
  await conn.close();
});
afterAll(() => db.stop());

describe('MySQL with BLOB_BACKEND=fs', () => {
  let api: EngineWithBlobs;
  beforeAll(async () => {
    api = await startEngineWithBlobs({ ...onMysql(), BLOB_BACKEND: 'fs' });
  });
  afterAll(() => api.close());

  it('uploads and downloads a workspace, isolated from another user, deleted with its session', () =>
    workspaceRoundTrip(api));
  it('pushes and pulls a workspace snapshot', () => snapshotRoundTrip(api));

  it('keeps archives as rows: nothing of them in the blob store', async () => {
    const alice = api.client('alice');
    const s = sid();
    await alice.appendList(s, 'm', [{ n: 1 }, { n: 2 }], { expectedCount: 0, expectedHash: EMPTY_HASH });
    await alice.saveList(s, 'm', [{ n: 9 }]);
    const [archive] = await alice.listArchives(s, 'm');
    expect(archive?.count).toBe(2);
    expect((await alice.getArchive(s, 'm', archive?.archiveId as string))?.items).toEqual([
      { n: 1 },
      { n: 2 },
    ]);
    expect((await blobNames(api)).filter((n) => n.includes(s))).toEqual([]);
  });
});

describe('MySQL with BLOB_BACKEND=none', () => {
  let api: EngineWithBlobs;
  let withBlobs: EngineWithBlobs;
  beforeAll(async () => {
    api = await startEngineWithBlobs(onMysql());
    withBlobs = await startEngineWithBlobs({ ...onMysql(), BLOB_BACKEND: 'fs' });
  });
  afterAll(async () => {
    await api.close();
    await withBlobs.close();
  });

  it('has the pack sweep only with a blob store (delegated to the blob side)', () =>
    sweepDelegated(withBlobs, api));

  it('answers the blob routes 501 unsupported naming BLOB_BACKEND, never a 500', () =>
    refusedWithoutBlobs(api));
});
