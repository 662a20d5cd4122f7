/**
 * The RGW tier: the s3 driver against Ceph RGW, a real S3 implementation that checks signatures,
 * evaluates conditional writes and runs lifecycle rules. Skipped (with one line saying how to
 * enable it) only where Ceph is not installed; CI requires it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { DeleteBucketPolicyCommand, PutBucketPolicyCommand } from '@aws-sdk/client-s3';
import { describe, expect, inject, it } from 'vitest';
import { ObjectConditionFailedError, ObjectStoreError } from '../../lib/drivers/errors.js';
import { createS3Client, createS3Driver } from '../../lib/drivers/s3.js';
import { rgwOptions } from '../backends.js';
import { describeDriverConformance } from '../conformance/driver-suite.js';

const servers = inject('servers');
const rgw = servers.rgw;

describe.skipIf(!rgw)('Ceph RGW tier', () => {
  if (!rgw) return;
  const admin = createS3Client({
    endpoint: rgw.endpoint,
    credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
  });

  // Per-key DeleteObjects failures made real: a bucket policy that denies deleting those keys.
  describeDriverConformance('s3 [rgw]', async () => ({
    driver: createS3Driver(rgwOptions({ multipartThresholdBytes: 6 * 1024 * 1024 })),
    failDeletes: async (keys) => {
      await admin.send(
        new PutBucketPolicyCommand({
          Bucket: servers.bucket,
          Policy: JSON.stringify({
            Version: '2012-10-17',
            Statement: [
              {
                Effect: 'Deny',
                Principal: '*',
                Action: ['s3:DeleteObject'],
                Resource: keys.map((key) => `arn:aws:s3:::${servers.bucket}/${key}`),
              },
            ],
          }),
        }),
      );
    },
    reset: async () => {
      await admin.send(new DeleteBucketPolicyCommand({ Bucket: servers.bucket }));
    },
  }));

  describe('real S3 behaviour [rgw]', () => {
    const driver = createS3Driver(rgwOptions());
    const key = (name: string) => `rgw-${randomUUID()}/${name}`;

    it('refuses a request signed with a wrong secret [rgw]', async () => {
      const wrong = createS3Driver(
        rgwOptions({ credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: 'not-the-secret' } }),
      );
      const error = await wrong.put(key('x'), 'x').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ObjectStoreError);
      expect((error as ObjectStoreError).cause).toMatchObject({ name: 'SignatureDoesNotMatch' });
    });

    it('If-None-Match: * with 10 concurrent creators: exactly one wins [rgw]', async () => {
      const k = key('race');
      const results = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) => driver.put(k, `w${i}`, { ifNoneMatch: '*' })),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results)
        if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(ObjectConditionFailedError);
    });

    it('If-Match with the right etag writes, with a wrong one is refused [rgw]', async () => {
      const k = key('cas');
      const { etag } = await driver.put(k, 'v1');
      const { etag: next } = await driver.put(k, 'v2', { ifMatch: etag });
      await expect(driver.put(k, 'v3', { ifMatch: etag })).rejects.toBeInstanceOf(ObjectConditionFailedError);
      expect((await driver.head(k)).etag).toBe(next);
    });

    it('quoted If-Match is refused by RGW 16, which is why the driver sends bare etags there [rgw]', async () => {
      const quoted = createS3Driver(rgwOptions({ dialect: 'aws' }));
      const k = key('quoted');
      const { etag } = await quoted.put(k, 'v1');
      await expect(quoted.put(k, 'v2', { ifMatch: etag })).rejects.toBeInstanceOf(ObjectConditionFailedError);
    });

    it('refuses an expired and a tampered presigned URL [rgw]', async () => {
      const k = key('presigned');
      await driver.put(k, 'secret');
      const url = await driver.presignGet(k, { expiresIn: 60 });
      expect(await (await fetch(url)).text()).toBe('secret');
      expect((await fetch(url.replace('presigned', 'presigneX'))).status).toBe(403);
      const short = await driver.presignGet(k, { expiresIn: 1 });
      await new Promise((r) => setTimeout(r, 2100));
      expect((await fetch(short)).status).toBe(403);
    });

    it('uploads in parts and reads back, with the etag RGW leaves out of CompleteMultipartUpload [rgw]', async () => {
      const parts = createS3Driver(
        rgwOptions({ multipartThresholdBytes: 5 * 1024 * 1024, partSizeBytes: 5 * 1024 * 1024 }),
      );
      const k = key('multipart');
      const body = randomBytes(12 * 1024 * 1024);
      const { etag } = await parts.put(k, body, {
        metadata: { kind: 'workspace' },
        tags: { kind: 'workspace' },
      });
      expect(etag).toMatch(/-3$/);
      const got = await parts.get(k);
      expect(got.etag).toBe(etag);
      expect(Buffer.from(got.body).equals(body)).toBe(true);
      expect((await parts.head(k, { tags: true })).tags).toEqual({ kind: 'workspace' });
    });
  });
});
