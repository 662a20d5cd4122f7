import { randomUUID } from 'node:crypto';
import OSS from 'ali-oss';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import {
  InvalidArgumentError,
  ObjectConditionFailedError,
  ObjectNotFoundError,
  ObjectStoreError,
} from '../../lib/drivers/errors.js';
import { createOssDriver } from '../../lib/drivers/oss.js';
import { describeDriverConformance } from '../conformance/driver-suite.js';
import { frontControl } from '../servers/control.js';
import { OSS_CREDENTIALS } from '../servers/global-setup.js';
import { crc64ecma } from '../servers/oss-front.js';

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

describe('OSS AppendObject and PutObject as OSS answers them (through the front)', () => {
  const raw = () => new OSS({ ...options, sldEnable: true, secure: false } as OSS.Options);
  const key = (name: string) => `oss-append-${randomUUID()}/${name}`;
  const front = frontControl(servers.oss);
  afterEach(() => front.reset());

  it('computes x-oss-hash-crc64ecma as CRC-64/ECMA-182 (the check value of "123456789"), across appends', async () => {
    expect(crc64ecma(Buffer.from('123456789'))).toBe(0x995dc9bbdf1939fan);
    expect(crc64ecma(Buffer.from('6789'), crc64ecma(Buffer.from('12345')))).toBe(0x995dc9bbdf1939fan);
    expect(crc64ecma(new Uint8Array(0))).toBe(0n);
    const k = key('crc');
    const driver = createOssDriver(options);
    await driver.append(k, '12345', { position: 0 });
    await driver.append(k, '6789', { position: 5 });
    const head = await raw().head(k);
    const headers = head.res.headers as Record<string, string>;
    expect(headers['x-oss-hash-crc64ecma']).toBe(String(0x995dc9bbdf1939fan));
    expect(headers['x-oss-object-type']).toBe('Appendable');
    expect(headers['x-oss-next-append-position']).toBe('9');
  });

  it('answers If-Match / If-None-Match on PutObject with 400 NotImplemented, and writes nothing', async () => {
    const k = key('conditional-put');
    for (const header of [{ 'If-Match': '"0123"' }, { 'If-None-Match': '*' }]) {
      await expect(raw().put(k, Buffer.from('x'), { headers: header })).rejects.toMatchObject({
        status: 400,
        code: 'NotImplemented',
      });
    }
    await expect(createOssDriver(options).head(k)).rejects.toBeInstanceOf(ObjectNotFoundError);
    const normal = await raw().put(k, Buffer.from('x'), { headers: { 'x-oss-forbid-overwrite': 'true' } });
    expect((normal.res.headers as Record<string, string>)['x-oss-object-type']).toBeUndefined();
    expect(((await raw().head(k)).res.headers as Record<string, string>)['x-oss-object-type']).toBe('Normal');
  });

  it('sends the creating append with its tags and metadata, and later appends bare, once each', async () => {
    const client = raw();
    const append = vi.spyOn(client, 'append');
    const head = vi.spyOn(client, 'head');
    const driver = createOssDriver({ ...options, client });
    const k = key('wire');
    await driver.append(k, 'ab', {
      position: 0,
      tags: { kind: 'state' },
      metadata: { n: '1' },
      contentType: 'text/plain',
    });
    await driver.append(k, 'cd', { position: 2, tags: { kind: 'other' }, metadata: { n: '2' } });
    const wrong = await driver.append(k, 'ef', { position: 2 }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(ObjectConditionFailedError);
    expect((wrong as ObjectConditionFailedError).nextPosition).toBe(4);
    const sent = append.mock.calls.map(
      ([, , o]) => o as { position: string; headers: Record<string, string>; meta?: unknown; mime?: string },
    );
    expect(sent.map((o) => o.position)).toEqual(['0', '2', '2']);
    expect(sent[0]).toMatchObject({
      headers: { 'x-oss-tagging': 'kind=state' },
      meta: { n: '1' },
      mime: 'text/plain',
    });
    for (const later of sent.slice(1)) {
      expect(later.headers).toEqual({});
      expect(later.meta).toBeUndefined();
    }
    // The next position came from the 409's x-oss-next-append-position: no HEAD was needed.
    expect(head).not.toHaveBeenCalled();
  });

  it('never retries an append: a 503 fails it, retryable, with nothing written', async () => {
    const k = key('no-retry');
    await front.fault({ kind: '503', method: 'POST', match: k });
    const error = await createOssDriver(options)
      .append(k, 'x', { position: 0 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ObjectStoreError);
    expect(error).toMatchObject({ retryable: true });
    await expect(createOssDriver(options).head(k)).rejects.toBeInstanceOf(ObjectNotFoundError);
    // The same client's other calls still ride out a 503 with their retries.
    await front.fault({ kind: '503', method: 'PUT', match: k });
    await createOssDriver(options).put(k, 'y');
  });

  it('refuses an appendable object in a cold archive class: the driver before any request, the front with 400', async () => {
    const k = key('cold');
    await expect(
      createOssDriver(options).append(k, 'x', { position: 0, storageClass: 'ColdArchive' }),
    ).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(
      raw().append(k, Buffer.from('x'), { position: '0', headers: { 'x-oss-storage-class': 'ColdArchive' } }),
    ).rejects.toMatchObject({ status: 400, code: 'InvalidArgument' });
    const ia = await createOssDriver(options).append(k, 'x', { position: 0, storageClass: 'IA' });
    expect(ia.nextPosition).toBe(1);
    expect((await createOssDriver(options).head(k)).storageClass).toBe('IA');
  });

  it('lists appendable objects with Type Appendable among Normal ones (ListObjectsV2 and V1)', async () => {
    const prefix = key('');
    const driver = createOssDriver(options);
    await driver.put(`${prefix}a`, 'normal');
    await driver.append(`${prefix}b`, 'appended', { position: 0 });
    const v2 = await raw().listV2({ prefix, 'max-keys': '10' } as OSS.ListV2ObjectsQuery, {});
    expect(v2.objects.map((o) => [o.name, (o as { type?: string }).type, o.size])).toEqual([
      [`${prefix}a`, 'Normal', 6],
      [`${prefix}b`, 'Appendable', 8],
    ]);
    const v1 = await raw().list({ prefix, 'max-keys': 1 }, {});
    expect(v1.objects.map((o) => o.name)).toEqual([`${prefix}a`]);
    expect(v1.nextMarker).toBe(`${prefix}a`);
    const rest = await raw().list({ prefix, marker: v1.nextMarker, 'max-keys': 10 }, {});
    expect(rest.objects.map((o) => [o.name, (o as { type?: string }).type])).toEqual([
      [`${prefix}b`, 'Appendable'],
    ]);
    expect(rest.isTruncated).toBe(false);
  });
});
