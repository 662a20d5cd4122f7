/**
 * Each backend's answer to `GET /v1/capabilities`, served by the local server over that backend's
 * driver: memory and fs (fast tier), s3rver behind the S3 front and the OSS front (servers tier),
 * Ceph RGW (rgw tier). OSS has no conditional overwrite, and says so; every backend has revisions,
 * none atomic commits; presigned transfers where the driver signs URLs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StoreCapabilities } from '../../lib/contract/types.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { backends, onTier } from '../backends.js';
import { type ApiHarness, nodeHarness } from '../http/harness.js';

const EXPECTED: Record<string, StoreCapabilities> = {
  memory: {
    versioning: true,
    revisions: true,
    conditionalOverwrite: true,
    ranges: true,
    presignedTransfer: false,
    atomicCommits: false,
  },
  // Without `presign` (the local server's fs signs its own /v1/blobs URLs: see below).
  fs: {
    versioning: true,
    revisions: true,
    conditionalOverwrite: true,
    ranges: true,
    presignedTransfer: false,
    atomicCommits: false,
  },
  's3 (s3rver)': {
    versioning: true,
    revisions: true,
    conditionalOverwrite: true,
    ranges: true,
    presignedTransfer: true,
    atomicCommits: false,
  },
  'oss (ali-oss)': {
    versioning: true,
    revisions: true,
    conditionalOverwrite: false,
    ranges: true,
    presignedTransfer: true,
    atomicCommits: false,
  },
  's3 [rgw]': {
    versioning: true,
    revisions: true,
    conditionalOverwrite: true,
    ranges: true,
    presignedTransfer: true,
    atomicCommits: false,
  },
};

for (const backend of backends()) {
  describe(`GET /v1/capabilities on ${backend.name}`, () => {
    let api: ApiHarness | undefined;
    let close: (() => Promise<void>) | undefined;
    afterEach(async () => {
      await api?.close();
      await close?.();
      api = undefined;
      close = undefined;
    });

    it("answers what the backend's driver can do", async () => {
      const made = await backend.make();
      close = made.close;
      api = await nodeHarness({ driver: made.driver, lock: createMemoryLock() });
      const answer = await api.call(null, 'GET', '/v1/capabilities');
      expect(answer.status).toBe(200);
      expect(answer.json()).toEqual(EXPECTED[backend.name]);
    });
  });
}

describe.runIf(onTier('fast'))('GET /v1/capabilities on fs with presign (the local server)', () => {
  it('answers presignedTransfer true: the server signs its own blob URLs', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'capabilities-fs-'));
    const api = await nodeHarness({
      driver: createFsDriver({ root, presign: { baseUrl: () => 'http://127.0.0.1:1' } }),
      lock: createMemoryLock(),
    });
    try {
      const answer = await api.call(null, 'GET', '/v1/capabilities');
      expect(answer.json()).toEqual({ ...EXPECTED.fs, presignedTransfer: true });
    } finally {
      await api.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});
