/**
 * The object-storage backends of each test tier (test/tiers.ts). A suite that loops over
 * `backends()` runs on memory and fs in the fast tier, on s3rver (through the S3 front) and OSS
 * (ali-oss through the OSS front) in the servers tier, and on Ceph RGW in the rgw tier: adding a
 * suite to a tier is that one loop and the file's name in the tier's list.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { createFsDriver } from '../lib/drivers/fs.js';
import { createMemoryDriver } from '../lib/drivers/memory.js';
import { createOssDriver } from '../lib/drivers/oss.js';
import { createS3Driver, type S3DriverOptions } from '../lib/drivers/s3.js';
import type { ObjectStoreDriver } from '../lib/drivers/types.js';
import { frontControl } from './servers/control.js';
import { OSS_CREDENTIALS } from './servers/global-setup.js';
import type { TierName } from './tiers.js';

/** A backend under test. `name` ends with `[rgw]` for the RGW tier, which the reporter counts. */
export interface Backend {
  readonly name: string;
  /** A fresh driver; `close()` releases it (and removes a temp folder). */
  make(): Promise<{ driver: ObjectStoreDriver; close(): Promise<void> }>;
}

const servers = () => inject('servers');

/** The tier this file runs in. */
export const tier = (): TierName => inject('tier');
/** Whether this file runs in `name` (for `describe.runIf`). */
export const onTier = (...names: TierName[]) => names.includes(tier());

/** s3 driver options for Ceph RGW, with its documented deviations. */
export function rgwOptions(overrides: Partial<S3DriverOptions> = {}): S3DriverOptions {
  const rgw = servers().rgw;
  if (!rgw) throw new Error('RGW tier not running');
  return {
    bucket: servers().bucket,
    endpoint: rgw.endpoint,
    credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
    dialect: 'ceph-rgw',
    ...overrides,
  };
}

/** s3 driver options for s3rver behind the S3 front. */
export function s3rverOptions(overrides: Partial<S3DriverOptions> = {}): S3DriverOptions {
  return {
    bucket: servers().bucket,
    endpoint: servers().s3,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    ...overrides,
  };
}

/** The S3 front's control API. */
export const s3Front = () => frontControl(servers().s3);

/** The backends of this file's tier (`tiers`: of those instead). */
export function backends(tiers: readonly TierName[] = [tier()]): Backend[] {
  return ALL.filter((b) => tiers.includes(b.tier) && (b.tier !== 'rgw' || servers().rgw));
}

const ALL: ReadonlyArray<Backend & { readonly tier: TierName }> = [
  {
    name: 'memory',
    tier: 'fast',
    make: async () => {
      const driver = createMemoryDriver();
      return { driver, close: () => driver.close() };
    },
  },
  {
    name: 'fs',
    tier: 'fast',
    make: async () => {
      const root = await mkdtemp(path.join(tmpdir(), 'fs-backend-'));
      const driver = createFsDriver({ root });
      return { driver, close: () => rm(root, { recursive: true, force: true }) };
    },
  },
  {
    name: 's3 (s3rver)',
    tier: 'servers',
    make: async () => {
      const driver = createS3Driver(s3rverOptions());
      return { driver, close: () => driver.close() };
    },
  },
  {
    name: 'oss (ali-oss)',
    tier: 'servers',
    make: async () => {
      const driver = createOssDriver({
        bucket: servers().bucket,
        endpoint: servers().oss,
        ...OSS_CREDENTIALS,
      });
      return { driver, close: () => driver.close() };
    },
  },
  {
    name: 's3 [rgw]',
    tier: 'rgw',
    make: async () => {
      const driver = createS3Driver(rgwOptions());
      return { driver, close: () => driver.close() };
    },
  },
];
