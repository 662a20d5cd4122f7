/**
 * A 100 MB workspace round trip through s3rver and through Ceph RGW that never passes through the
 * function: the API only signs (every request and answer it handles stays small).
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { backends } from '../backends.js';
import { startWorkspaceApi, type WorkspaceApi } from './api.js';

const SIZE = 100 * 1024 * 1024;
const large = backends().filter((b) => b.name === 's3 (s3rver)' || b.name.includes('[rgw]'));

describe.each(large)('a 100 MB workspace on $name', (backend) => {
  let driver: ObjectStoreDriver;
  let close: () => Promise<void>;
  let api: WorkspaceApi;
  beforeAll(async () => {
    ({ driver, close } = await backend.make());
    api = await startWorkspaceApi(driver);
  });
  afterAll(async () => {
    await api.close();
    await close();
  });

  it('goes up in parts and comes back whole, straight between client and store', {
    timeout: 180_000,
  }, async () => {
    const data = new Uint8Array(randomBytes(SIZE));
    const alice = api.client('alice');
    api.seen.length = 0;
    const info = await alice.uploadWorkspace('big-session', 'workspace.tar', data, { encoding: 'identity' });
    expect(info.size).toBe(SIZE);
    const back = (await alice.downloadWorkspace('big-session', 'workspace.tar')) as Uint8Array;
    const digest = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
    expect(back.byteLength).toBe(SIZE);
    expect(digest(back)).toBe(digest(data));
    // The function saw a handful of small JSON requests, never the bytes.
    const largest = Math.max(...api.seen.map((s) => Math.max(s.requestBytes, s.answerBytes)));
    expect(api.seen.length).toBeLessThan(10);
    expect(largest).toBeLessThan(16 * 1024);
    await alice.delete('big-session');
  });
});
