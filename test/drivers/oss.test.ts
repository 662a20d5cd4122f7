import OSS from 'ali-oss';
import { describe, expect, inject, it } from 'vitest';
import { createOssDriver } from '../../lib/drivers/oss.js';
import { describeDriverConformance } from '../conformance/driver-suite.js';
import { frontControl } from '../servers/control.js';
import { OSS_CREDENTIALS } from '../servers/global-setup.js';

const servers = inject('servers');
const options = { bucket: servers.bucket, endpoint: servers.oss, ...OSS_CREDENTIALS };

describeDriverConformance('oss (ali-oss through the OSS front)', async () => {
  // The OSS front forwards to the S3 front, whose control API injects the delete failures.
  const front = frontControl(servers.s3);
  return {
    driver: createOssDriver(options),
    failDeletes: (keys) => front.failDeletes(keys),
    reset: () => front.reset(),
  };
});

describe('OSS front signatures', () => {
  it('refuses a request signed with a wrong secret (403, as OSS)', async () => {
    const driver = createOssDriver({ ...options, accessKeySecret: 'wrong-secret' });
    await expect(driver.put('signed/x', 'x')).rejects.toMatchObject({
      cause: { status: 403, code: 'SignatureDoesNotMatch' },
    });
  });

  it('refuses an unknown access key', async () => {
    const driver = createOssDriver({ ...options, accessKeyId: 'LTAI-nobody' });
    await expect(driver.get('signed/x')).rejects.toMatchObject({
      cause: { status: 403, code: 'InvalidAccessKeyId' },
    });
  });

  it('refuses a tampered and an expired presigned URL', async () => {
    const driver = createOssDriver(options);
    await driver.put('signed/ok', 'fine');
    const url = await driver.presignGet('signed/ok', { expiresIn: 60 });
    expect((await fetch(url)).status).toBe(200);
    expect((await fetch(url.replace('signed/ok', 'signed/other'))).status).toBe(403);
    const client = new OSS({ ...options, sldEnable: true, secure: false } as OSS.Options);
    const expired = new URL(client.signatureUrl('signed/ok', { expires: 60 }));
    expired.searchParams.set('Expires', String(Math.floor(Date.now() / 1000) - 10));
    expect((await fetch(expired)).status).toBe(403);
  });
});
