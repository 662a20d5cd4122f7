/**
 * Direct transfer through the drivers: presigned uploads bound to length and digest, presigned
 * multipart parts, and restores of archived objects, on every backend that has them (s3rver
 * behind the S3 front, OSS through the OSS front, Ceph RGW).
 */
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectArchivedError, ObjectNotFoundError } from '../../lib/drivers/errors.js';
import { createS3Driver } from '../../lib/drivers/s3.js';
import type { ObjectStoreDriver, PresignedRequest } from '../../lib/drivers/types.js';
import { backends, onTier, s3Front } from '../backends.js';

const MIB = 1024 * 1024;
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('base64');
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('base64');
const send = (r: PresignedRequest, body: Uint8Array, headers: Record<string, string> = r.headers) =>
  fetch(r.url, { method: r.method, body, headers });

const transferring = backends().filter((b) => !['memory', 'fs'].includes(b.name));

describe.each(transferring)('direct transfer on $name', (backend) => {
  let driver: ObjectStoreDriver;
  let close: () => Promise<void>;
  const key = (name: string) => `transfer/${randomUUID()}/${name}`;
  const standard = () => (driver.name === 'oss' ? 'Standard' : 'STANDARD');
  const infrequent = () => (driver.name === 'oss' ? 'IA' : 'STANDARD_IA');

  beforeAll(async () => {
    ({ driver, close } = await backend.make());
  });
  afterAll(() => close());

  it('uploads through a presigned PUT bound to length, MD5 and what it is stored with', async () => {
    const k = key('single');
    const body = new Uint8Array(Buffer.from('{"workspace":"bytes"}'));
    const put = await driver.presignUpload(k, {
      contentLength: body.length,
      contentMd5: md5(body),
      checksumSha256: sha256(body),
      contentType: 'application/octet-stream',
      contentEncoding: 'gzip',
      storageClass: infrequent(),
      tags: { kind: 'workspace' },
      metadata: { inc: 'abc' },
      expiresIn: 60,
    });
    expect(put.expiresAt.getTime()).toBeGreaterThan(Date.now());
    expect((await send(put, body)).status).toBe(200);
    const info = await driver.head(k, { tags: true });
    expect(info).toMatchObject({
      size: body.length,
      contentEncoding: 'gzip',
      storageClass: infrequent(),
      tags: { kind: 'workspace' },
      metadata: { inc: 'abc' },
    });
    const listed = (await driver.list({ prefix: k })).objects[0];
    expect(listed?.storageClass).toBe(infrequent());
  });

  it('refuses a body that does not match the signed MD5, and keeps nothing', async () => {
    const k = key('tampered-body');
    const body = new Uint8Array(Buffer.from('the declared bytes'));
    const put = await driver.presignUpload(k, { contentLength: body.length, contentMd5: md5(body) });
    const other = new Uint8Array(Buffer.from('the swapped bytes!'));
    expect(other.length).toBe(body.length);
    expect((await send(put, other)).status).toBe(400);
    await expect(driver.head(k)).rejects.toBeInstanceOf(ObjectNotFoundError);
  });

  it('uploads presigned parts, lists them, and completes; a bad part is refused and retried', async () => {
    const k = key('multipart');
    const parts = [new Uint8Array(5 * MIB).fill(7), new Uint8Array(Buffer.from('tail'))];
    const uploadId = await driver.createMultipart(k, {
      storageClass: infrequent(),
      tags: { kind: 'workspace' },
      contentEncoding: 'br',
    });
    for (const [i, part] of parts.entries()) {
      const url = await driver.presignPart(k, uploadId, i + 1, {
        contentLength: part.length,
        contentMd5: md5(part),
      });
      if (i === 0) expect((await send(url, new Uint8Array(part.length))).status).toBe(400);
      expect((await send(url, part)).status).toBe(200);
    }
    const listed = await driver.listParts(k, uploadId);
    expect(listed.map((p) => [p.partNumber, p.size])).toEqual([
      [1, 5 * MIB],
      [2, 4],
    ]);
    const hex = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
    expect(listed.map((p) => p.etag.toLowerCase())).toEqual(parts.map(hex));
    await driver.completeMultipart(k, uploadId, listed);
    const info = await driver.head(k, { tags: true });
    expect(info).toMatchObject({
      size: 5 * MIB + 4,
      storageClass: infrequent(),
      tags: { kind: 'workspace' },
    });
    const got = await driver.get(k);
    expect(Buffer.from(got.body.subarray(5 * MIB)).toString()).toBe('tail');
  });

  it('aborts an upload: its parts are gone', async () => {
    const k = key('aborted');
    const uploadId = await driver.createMultipart(k);
    await driver.abortMultipart(k, uploadId);
    await expect(driver.listParts(k, uploadId)).rejects.toBeInstanceOf(ObjectNotFoundError);
    await driver.abortMultipart(k, uploadId);
  });

  it('restores an archived object before it can be read (where the backend archives)', async () => {
    const k = key('archived');
    const cold = driver.capabilities.restoreClasses[0];
    await driver.put(k, 'cold bytes', cold ? { storageClass: cold } : {});
    if (!cold) {
      expect(await driver.restore(k)).toBe('done');
      expect(Buffer.from((await driver.get(k)).body).toString()).toBe('cold bytes');
      return;
    }
    if (driver.name === 's3') await s3Front().restoreDelay(300);
    await expect(driver.get(k)).rejects.toBeInstanceOf(ObjectArchivedError);
    expect((await driver.head(k)).restore).toBeUndefined();
    expect(await driver.restore(k)).toBe('started');
    expect(await driver.restore(k)).toBe('ongoing');
    expect((await driver.head(k)).restore).toEqual({ ongoing: true });
    await new Promise((r) => setTimeout(r, 400));
    expect(await driver.restore(k)).toBe('done');
    const restored = await driver.head(k);
    expect(restored.restore?.ongoing).toBe(false);
    expect(restored.restore?.expiresAt?.getTime()).toBeGreaterThan(Date.now());
    expect(Buffer.from((await driver.get(k)).body).toString()).toBe('cold bytes');
    await driver.put(`${k}-standard`, 'warm', { storageClass: standard() });
    expect(await driver.restore(`${k}-standard`)).toBe('done');
  });
});

describe.runIf(onTier('servers'))('presigned URLs for AWS S3 (signed offline)', () => {
  const driver = createS3Driver({
    bucket: 'b',
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
  });
  afterAll(() => driver.close());

  it('sign the digest, the checksum and the stored attributes, and carry no SDK checksum of an empty body', async () => {
    const put = await driver.presignUpload('a/b', {
      contentLength: 3,
      contentMd5: md5(Buffer.from('abc')),
      checksumSha256: sha256(Buffer.from('abc')),
      storageClass: 'GLACIER',
      tags: { kind: 'workspace' },
    });
    const url = new URL(put.url);
    const signed = url.searchParams.get('X-Amz-SignedHeaders')?.split(';');
    expect(signed).toEqual(
      expect.arrayContaining([
        'content-length',
        'content-md5',
        'x-amz-checksum-sha256',
        'x-amz-storage-class',
        'x-amz-tagging',
      ]),
    );
    expect(put.headers['x-amz-checksum-sha256']).toBe(sha256(Buffer.from('abc')));
    const part = new URL(
      (
        await driver.presignPart('a/b', 'upload', 2, {
          contentLength: 3,
          contentMd5: md5(Buffer.from('abc')),
        })
      ).url,
    );
    expect([...part.searchParams.keys()].filter((k) => k.startsWith('x-amz-checksum'))).toEqual([]);
    expect(part.searchParams.get('partNumber')).toBe('2');
  });
});
