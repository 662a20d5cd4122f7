import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, inject, it } from 'vitest';
import {
  ObjectConditionFailedError,
  ObjectNotFoundError,
  ObjectStoreError,
} from '../../lib/drivers/errors.js';
import { createS3Driver } from '../../lib/drivers/s3.js';
import { describeDriverConformance } from '../conformance/driver-suite.js';
import { frontControl } from '../servers/control.js';

const servers = inject('servers');

describeDriverConformance('s3 (s3rver behind the S3 front)', async () => {
  const front = frontControl(servers.s3);
  return {
    driver: createS3Driver({
      bucket: servers.bucket,
      endpoint: servers.s3,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    }),
    failDeletes: (keys) => front.failDeletes(keys),
    reset: () => front.reset(),
  };
});

describe('s3 driver against S3 error answers', () => {
  const front = frontControl(servers.s3);
  const make = (maxAttempts?: number) =>
    createS3Driver({
      bucket: servers.bucket,
      endpoint: servers.s3,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      maxAttempts,
    });
  afterEach(() => front.reset());

  it('retries a ConditionalRequestConflict once, then succeeds', async () => {
    const d = make();
    const key = `errors-${randomUUID()}/a`;
    await front.fault({ kind: '409', method: 'PUT', match: key });
    await d.put(key, 'x', { ifNoneMatch: '*' });
    expect(Buffer.from((await d.get(key)).body).toString()).toBe('x');
  });

  it('reports a second ConditionalRequestConflict as a failed precondition, nothing written', async () => {
    const d = make();
    const key = `errors-${randomUUID()}/b`;
    await front.fault({ kind: '409', method: 'PUT', match: key, times: 2 });
    await expect(d.put(key, 'x', { ifNoneMatch: '*' })).rejects.toBeInstanceOf(ObjectConditionFailedError);
    await expect(d.head(key)).rejects.toBeInstanceOf(ObjectNotFoundError);
  });

  it('rides out a 503 SlowDown with the SDK retries, and surfaces it as retryable without them', async () => {
    const key = `errors-${randomUUID()}/c`;
    await front.fault({ kind: '503', method: 'PUT', match: key });
    await make().put(key, 'x');
    await front.fault({ kind: '503', method: 'GET', match: key });
    const error = await make(1)
      .get(key)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ObjectStoreError);
    expect(error).toMatchObject({ retryable: true });
  });
});
