/**
 * Workspaces and big values through the API and the typed client, on every backend with presigned
 * URLs (s3rver behind the S3 front, OSS through ali-oss and the OSS front, Ceph RGW), plus what fs
 * answers. The bytes go straight between the client and the object store: the function only signs.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FencedError,
  PreconditionFailedError,
  RestoreInProgressError,
  UnsupportedOperationError,
  UploadMismatchError,
} from '../../lib/contract/errors.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { md5Base64 } from '../../lib/util/encoding.js';
import { type Backend, backends, onTier, s3Front } from '../backends.js';
import { localBase, startWorkspaceApi, type WorkspaceApi } from './api.js';

const MIB = 1024 * 1024;
const all = backends();
/** The fs driver signing URLs that the local server answers (`npm start`). */
const localFs: Backend = {
  name: 'fs (local server)',
  make: async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'fs-presign-'));
    const driver = createFsDriver({ root, presign: { baseUrl: () => localBase.url } });
    return { driver, close: () => rm(root, { recursive: true, force: true }) };
  },
};
// The local fs (its own blob routes) runs in the fast tier; the others in theirs.
const transferring = onTier('fast') ? [localFs] : all;
/** Faults are injected by the S3 front: on s3rver and on OSS (whose front forwards to it). */
const faultable = (b: Backend) => b.name === 's3 (s3rver)' || b.name === 'oss (ali-oss)';
const sid = () => `session-${randomBytes(6).toString('hex')}`;

/** A realistic agent transcript: repetitive JSON with tool calls and code. */
function transcript(turns: number): Uint8Array {
  const items = Array.from({ length: turns }, (_, i) => ({
    role: i % 2 ? 'assistant' : 'user',
    content: `Turn ${i}: please run the tests in src/module${i % 7}.ts and fix what fails.`,
    toolCalls: i % 2 ? [{ name: 'bash', arguments: { command: `npm test -- module${i % 7}` } }] : [],
  }));
  return new Uint8Array(Buffer.from(JSON.stringify(items)));
}

describe.each(transferring)('workspaces on $name', (backend) => {
  let driver: ObjectStoreDriver;
  let close: () => Promise<void>;
  let api: WorkspaceApi;
  const cold = () => driver.capabilities.restoreClasses.length > 0;

  beforeAll(async () => {
    ({ driver, close } = await backend.make());
    api = await startWorkspaceApi(driver);
    if (backend !== localFs && (driver.name !== 's3' || cold())) await s3Front().restoreDelay(300);
  });
  afterAll(async () => {
    await api.close();
    await close();
  });

  it('round-trips gzip, brotli and identity workspaces; lists and deletes them', async () => {
    const alice = api.client('alice');
    const s = sid();
    const data = transcript(200);
    for (const encoding of ['gzip', 'br', 'identity'] as const) {
      const info = await alice.uploadWorkspace(s, `w-${encoding}`, data, { encoding });
      if (encoding === 'identity') expect(info.size).toBe(data.length);
      else expect(info.size).toBeLessThan(data.length / 4);
      expect(Buffer.from((await alice.downloadWorkspace(s, `w-${encoding}`)) ?? [])).toEqual(
        Buffer.from(data),
      );
    }
    const listed = await alice.listWorkspaces(s);
    expect(listed.map((w) => [w.name, w.storageClass])).toEqual([
      ['w-br', 'standard'],
      ['w-gzip', 'standard'],
      ['w-identity', 'standard'],
    ]);
    const found = await alice.getWorkspace(s, 'w-gzip');
    expect(found).toMatchObject({ status: 'ready', contentEncoding: 'gzip', name: 'w-gzip' });
    await alice.deleteWorkspace(s, 'w-gzip');
    expect(await alice.downloadWorkspace(s, 'w-gzip')).toBeUndefined();
    expect((await alice.listWorkspaces(s)).map((w) => w.name)).toEqual(['w-br', 'w-identity']);
    // Deleting the session takes its workspaces with it.
    await alice.delete(s);
    expect(await alice.listWorkspaces(s)).toEqual([]);
  });

  it('keeps odd names isolated and another user out: no URL for their session can be had', async () => {
    const alice = api.client('alice');
    const bob = api.client('bob');
    const s = sid();
    for (const name of ['../escape', 'a/b', '~tilde', 'ünïcode ✓']) {
      await alice.uploadWorkspace(s, name, new Uint8Array(Buffer.from(name)));
      expect(Buffer.from((await alice.downloadWorkspace(s, name)) ?? []).toString()).toBe(name);
    }
    expect((await alice.listWorkspaces(s)).map((w) => w.name).sort()).toEqual(
      ['../escape', 'a/b', '~tilde', 'ünïcode ✓'].sort(),
    );
    // Bob names the same session: it is his own (empty) session, never Alice's.
    expect(await bob.getWorkspace(s, 'a/b')).toBeUndefined();
    expect(await bob.listWorkspaces(s)).toEqual([]);
    const started = await bob.createWorkspaceUpload(s, 'a/b', {
      size: 3,
      md5: md5Base64(Buffer.from('bob')),
    });
    const aliceUrl = (await alice.getWorkspace(s, 'a/b')) as { download: { url: string } };
    const prefixOf = (url: string) =>
      decodeURIComponent(new URL(url).pathname).split('/').slice(0, 4).join('/');
    expect(prefixOf(started.upload?.url ?? '')).not.toBe(prefixOf(aliceUrl.download.url));
    expect(decodeURIComponent(new URL(started.upload?.url ?? '').pathname)).not.toContain('/alice/');
    // Unknown and forged upload ids are refused.
    await expect(bob.completeWorkspaceUpload(s, 'a/b', 'f'.repeat(24))).rejects.toThrow(/no such upload/);
    const forged = await api.call('bob', 'POST', `/v1/sessions/${s}/workspaces/x/uploads/..%2F..`);
    expect(forged.status).toBe(404);
    // Bad declarations are 400 problems.
    for (const body of [
      { size: 3 },
      { size: -1, md5: md5Base64(Buffer.from('x')) },
      { size: 3, md5: 'nope' },
    ]) {
      const answer = await api.call('bob', 'POST', `/v1/sessions/${s}/workspaces/x/uploads`, body);
      expect(answer.status).toBe(400);
      expect(answer.headers.get('content-type')).toBe('application/problem+json');
    }
  });

  it('refuses bytes that do not match the declared MD5, and a complete without them', async () => {
    const alice = api.client('alice');
    const s = sid();
    const declared = Buffer.from('declared bytes');
    const started = await alice.createWorkspaceUpload(s, 'w', {
      size: declared.length,
      md5: md5Base64(declared),
    });
    const upload = started.upload as { url: string; headers: Record<string, string> };
    const swapped = await fetch(upload.url, {
      method: 'PUT',
      headers: upload.headers,
      body: Buffer.from('swapped bytes!'),
    });
    expect(swapped.status).toBe(400);
    await expect(alice.completeWorkspaceUpload(s, 'w', started.uploadId)).rejects.toBeInstanceOf(
      UploadMismatchError,
    );
    expect(await alice.listWorkspaces(s)).toEqual([]);
    // Where the backend checks SHA-256 (AWS S3; the S3 front does too) the upload is bound to it as well.
    const sha256 = createHash('sha256').update(declared).digest('base64');
    const bound = await alice.createWorkspaceUpload(s, 'w2', {
      size: declared.length,
      md5: md5Base64(declared),
      sha256,
    });
    const headers = bound.upload?.headers ?? {};
    if (!driver.capabilities.checksumSha256) return expect(headers['x-amz-checksum-sha256']).toBeUndefined();
    expect(headers['x-amz-checksum-sha256']).toBe(sha256);
    const other = createHash('sha256').update('other').digest('base64');
    const refused = await fetch(bound.upload?.url ?? '', {
      method: 'PUT',
      headers: { ...headers, 'x-amz-checksum-sha256': other },
      body: declared,
    });
    // The header is signed: S3 (and the S3 front) refuse another value as a signature mismatch (403).
    expect(refused.status).toBe(403);
  });

  it('uploads in parts; a missing part fails the complete step; a failed part is retried', async () => {
    const alice = api.client('alice');
    const s = sid();
    const data = new Uint8Array(randomBytes(11 * MIB));
    const parts = [data.subarray(0, 5 * MIB), data.subarray(5 * MIB, 10 * MIB), data.subarray(10 * MIB)];
    const started = await alice.createWorkspaceUpload(s, 'parts', {
      size: data.length,
      parts: parts.map((p) => ({ size: p.length, md5: md5Base64(p) })),
    });
    const urls = started.parts ?? [];
    expect(urls.map((p) => p.partNumber)).toEqual([1, 2, 3]);
    await fetch(urls[0]?.url ?? '', { method: 'PUT', headers: urls[0]?.headers, body: parts[0] });
    await expect(alice.completeWorkspaceUpload(s, 'parts', started.uploadId)).rejects.toBeInstanceOf(
      UploadMismatchError,
    );
    if (!faultable(backend)) return;
    await s3Front().reset();
    await s3Front().fault({ kind: '500', method: 'PUT', match: 'partNumber=2', times: 1 });
    const info = await alice.uploadWorkspace(s, 'parts', data, {
      encoding: 'identity',
      multipartAboveBytes: 5 * MIB,
      partBytes: 5 * MIB,
    });
    expect(info.size).toBe(data.length);
    const tries = (await s3Front().requests()).filter(
      (r) => r.method === 'PUT' && r.path.includes('partNumber=2'),
    );
    expect(tries.length).toBe(2);
    const back = (await alice.downloadWorkspace(s, 'parts')) as Uint8Array;
    expect(createHash('sha256').update(back).digest('hex')).toBe(
      createHash('sha256').update(data).digest('hex'),
    );
  });

  it('uploads from a file and downloads into one, a part at a time', async () => {
    const alice = api.client('alice');
    const s = sid();
    const dir = await mkdtemp(path.join(tmpdir(), 'ws-file-'));
    try {
      const source = path.join(dir, 'workspace.tar');
      const data = Buffer.concat([randomBytes(6 * MIB), Buffer.from(transcript(4000))]);
      await writeFile(source, data);
      const info = await alice.uploadWorkspaceFile(s, 'from-file', source, {
        multipartAboveBytes: 5 * MIB,
        partBytes: 5 * MIB,
      });
      expect(info).toMatchObject({ name: 'from-file', contentEncoding: 'gzip' });
      expect(info.size).toBeLessThan(data.length);
      const target = path.join(dir, 'back.tar');
      expect(await alice.downloadWorkspaceToFile(s, 'from-file', target)).toBe(true);
      const digest = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
      expect(digest(await readFile(target))).toBe(digest(data));
      expect(await alice.downloadWorkspaceToFile(s, 'absent', target)).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('stores the chosen class; an archived workspace answers 202 until restored', async () => {
    const alice = api.client('alice');
    const s = sid();
    await alice.uploadWorkspace(s, 'ia', new Uint8Array(Buffer.from('infrequent')), {
      storageClass: 'infrequent',
    });
    await alice.uploadWorkspace(s, 'cold', new Uint8Array(Buffer.from('archived bytes')), {
      storageClass: 'archive',
    });
    expect((await alice.listWorkspaces(s)).map((w) => [w.name, w.storageClass])).toEqual([
      ['cold', 'archive'],
      ['ia', 'infrequent'],
    ]);
    if (!cold()) {
      // RGW keeps every class readable: no restore needed.
      expect(Buffer.from((await alice.downloadWorkspace(s, 'cold')) ?? []).toString()).toBe('archived bytes');
      return;
    }
    const first = await api.call('alice', 'GET', `/v1/sessions/${s}/workspaces/cold`);
    expect(first.status).toBe(202);
    expect(await first.json()).toMatchObject({ status: 'restoring', storageClass: 'archive' });
    await expect(alice.downloadWorkspace(s, 'cold')).rejects.toBeInstanceOf(RestoreInProgressError);
    await new Promise((r) => setTimeout(r, 400));
    expect(Buffer.from((await alice.downloadWorkspace(s, 'cold')) ?? []).toString()).toBe('archived bytes');
  });

  it('saves and reads values larger than a request body or an answer, conditions and fencing included', async () => {
    const alice = api.client('alice');
    const s = sid();
    const big = { transcript: Buffer.from(randomBytes(150 * 1024)).toString('base64') };
    api.seen.length = 0;
    const { token } = await api.lock.acquire({ userId: 'alice', sessionId: s });
    const { version, revision } = await alice.save(s, 'big', big, { token });
    expect(await alice.getVersioned(s, 'big')).toEqual({ value: big, version, revision });
    const raw = await api.call('alice', 'GET', `/v1/sessions/${s}/state/big`);
    expect(raw.status).toBe(303);
    expect(raw.headers.get('location')).toMatch(/^http:\/\/(127\.0\.0\.1|localhost):/);
    expect(Math.max(...api.seen.map((x) => Math.max(x.requestBytes, x.answerBytes)))).toBeLessThan(4096);
    const other = { transcript: Buffer.from(randomBytes(150 * 1024)).toString('base64') };
    await expect(alice.save(s, 'big', other, { token: token - 1 })).rejects.toBeInstanceOf(FencedError);
    await expect(alice.save(s, 'big', other, { ifAbsent: true })).rejects.toBeInstanceOf(
      PreconditionFailedError,
    );
    if (driver.capabilities.conditionalOverwrite) {
      await expect(alice.save(s, 'big', other, { ifVersion: 'not-it' })).rejects.toBeInstanceOf(
        PreconditionFailedError,
      );
      const next = await alice.save(s, 'big', other, { ifVersion: version, token });
      expect(await alice.getVersioned(s, 'big')).toEqual({ value: other, ...next });
    }
    expect((await alice.get(s, 'big')) as object).toEqual(
      driver.capabilities.conditionalOverwrite ? other : big,
    );
    // Bob cannot commit Alice's upload: his session is another object.
    const started = await alice.createValueUpload(s, 'k', { size: 2, md5: md5Base64(Buffer.from('{}')) });
    await fetch(started.upload.url, { method: 'PUT', headers: started.upload.headers, body: '{}' });
    const stolen = await api.call('bob', 'POST', `/v1/sessions/${s}/state/k/uploads/${started.uploadId}`);
    expect(stolen.status).toBe(404);
    expect(await api.client('bob').get(s, 'k')).toBeUndefined();
    // Not JSON: refused, nothing written.
    const bad = await alice.createValueUpload(s, 'bad', { size: 3, md5: md5Base64(Buffer.from('{x}')) });
    await fetch(bad.upload.url, { method: 'PUT', headers: bad.upload.headers, body: '{x}' });
    const refused = await api.call('alice', 'POST', `/v1/sessions/${s}/state/bad/uploads/${bad.uploadId}`);
    expect(refused.status).toBe(400);
    expect(await alice.get(s, 'bad')).toBeUndefined();
  });

  it('stores list archives compressed and restores a cold one before reading it', async () => {
    const alice = api.client('alice');
    const s = sid();
    const items = Array.from({ length: 300 }, (_, i) => ({ role: 'user', text: `message ${i} `.repeat(5) }));
    await alice.saveList(s, 'chat', items);
    await alice.saveList(s, 'chat', [{ summary: 'compacted' }]);
    const [archive] = await alice.listArchives(s, 'chat');
    expect(archive?.count).toBe(300);
    const object = (await driver.list({ prefix: `${api.prefix}alice/${s}/chat.list~a~` })).objects[0];
    expect(object).toBeDefined();
    const stored = await driver.head(object?.key ?? '');
    expect(stored.contentEncoding).toBe('gzip');
    expect(stored.size).toBeLessThan(JSON.stringify(items).length / 5);
    expect((await alice.getArchive(s, 'chat', archive?.archiveId ?? ''))?.items).toEqual(items);
    if (!cold()) return;
    const coldClass = driver.capabilities.restoreClasses[0] as string;
    await driver.copy(object?.key ?? '', object?.key ?? '', { storageClass: coldClass });
    const answer = await api.call(
      'alice',
      'GET',
      `/v1/sessions/${s}/lists/chat/archives/${archive?.archiveId}`,
    );
    expect(answer.status).toBe(202);
    await expect(alice.getArchive(s, 'chat', archive?.archiveId ?? '')).rejects.toBeInstanceOf(
      RestoreInProgressError,
    );
    await new Promise((r) => setTimeout(r, 400));
    expect((await alice.getArchive(s, 'chat', archive?.archiveId ?? ''))?.items).toEqual(items);
  });
});

describe.each(transferring.filter((b) => b.name !== 's3 (s3rver)'))(
  'signatures checked by $name',
  (backend) => {
    it('refuses a tampered and an expired presigned upload', async () => {
      const { driver, close } = await backend.make();
      const api = await startWorkspaceApi(driver, { presignExpiresIn: 1 });
      try {
        const alice = api.client('alice');
        const body = Buffer.from('signed bytes');
        const started = await alice.createWorkspaceUpload(sid(), 'w', {
          size: body.length,
          md5: md5Base64(body),
        });
        const upload = started.upload as { url: string; headers: Record<string, string> };
        // One character of the signature (S3, OSS) or of the signed grant (fs) changed.
        const flip = (_: string, k: string, c: string) => `${k}${c === 'A' ? 'B' : 'A'}`;
        const tampered = upload.url.includes('Signature=')
          ? upload.url.replace(/(Signature=)([A-Za-z0-9%])/, flip)
          : upload.url.replace(/(\/v1\/blobs\/)(.)/, flip);
        expect((await fetch(tampered, { method: 'PUT', headers: upload.headers, body })).status).toBe(403);
        await new Promise((r) => setTimeout(r, 2100));
        expect((await fetch(upload.url, { method: 'PUT', headers: upload.headers, body })).status).toBe(403);
      } finally {
        await api.close();
        await close();
      }
    });
  },
);

describe.runIf(onTier('fast'))('workspaces on fs without presigned URLs', () => {
  it('are refused with 501, and nothing is written', async () => {
    const fs = all.find((b) => b.name === 'fs');
    const { driver, close } = await (fs as (typeof all)[number]).make();
    const api = await startWorkspaceApi(driver);
    try {
      const alice = api.client('alice');
      const s = sid();
      await expect(alice.uploadWorkspace(s, 'w', new Uint8Array(3))).rejects.toBeInstanceOf(
        UnsupportedOperationError,
      );
      const refused = await api.call('alice', 'POST', `/v1/sessions/${s}/workspaces/w/uploads`, {
        size: 3,
        md5: md5Base64(Buffer.from('abc')),
      });
      expect(refused.status).toBe(501);
      expect(((await refused.json()) as { code: string }).code).toBe('unsupported');
      const answer = await api.call('alice', 'GET', `/v1/sessions/${s}/workspaces`);
      expect(answer.status).toBe(200);
      expect(((await answer.json()) as { workspaces: unknown[] }).workspaces).toEqual([]);
      expect((await driver.list({ prefix: api.prefix })).objects).toEqual([]);
    } finally {
      await api.close();
      await close();
    }
  });
});
