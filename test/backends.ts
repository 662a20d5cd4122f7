/**
 * Every object-storage backend the suites run against. A suite that loops over `backends()` runs on
 * memory, fs, s3rver (through the S3 front), OSS (ali-oss through the OSS front) and, where Ceph is
 * installed (always in CI), Ceph RGW: adding a suite to the RGW tier is that one loop.
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

/** A backend under test. `name` ends with `[rgw]` for the RGW tier, which the reporter counts. */
export interface Backend {
  readonly name: string;
  /** A fresh driver; `close()` releases it (and removes a temp folder). */
  make(): Promise<{ driver: ObjectStoreDriver; close(): Promise<void> }>;
}

const servers = () => inject('servers');

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

/** Every backend available here. */
export function backends(): Backend[] {
  const list: Backend[] = [
    {
      name: 'memory',
      make: async () => {
        const driver = createMemoryDriver();
        return { driver, close: () => driver.close() };
      },
    },
    {
      name: 'fs',
      make: async () => {
        const root = await mkdtemp(path.join(tmpdir(), 'fs-backend-'));
        const driver = createFsDriver({ root });
        return { driver, close: () => rm(root, { recursive: true, force: true }) };
      },
    },
    {
      name: 's3 (s3rver)',
      make: async () => {
        const driver = createS3Driver(s3rverOptions());
        return { driver, close: () => driver.close() };
      },
    },
    {
      name: 'oss (ali-oss)',
      make: async () => {
        const driver = createOssDriver({
          bucket: servers().bucket,
          endpoint: servers().oss,
          ...OSS_CREDENTIALS,
        });
        return { driver, close: () => driver.close() };
      },
    },
  ];
  if (servers().rgw) {
    list.push({
      name: 's3 [rgw]',
      make: async () => {
        const driver = createS3Driver(rgwOptions());
        return { driver, close: () => driver.close() };
      },
    });
  }
  return list;
}
