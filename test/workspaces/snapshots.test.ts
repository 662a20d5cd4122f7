/**
 * Workspace snapshots through the HTTP API and the Node client's `workspaces`: on fs through the
 * local server's signed URLs (fast tier), on s3rver behind the S3 front and OSS through the OSS
 * front (servers tier). Round trips of odd trees, hostile manifests, replays, fencing, another
 * user, a push cut between packs, and the request budget of a second push after a small change.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../lib/client/node/index.js';
import { progressBar, runWorkspaceCli, WORKSPACE_USAGE } from '../../lib/client/node/workspace-cli.js';
import { FencedError } from '../../lib/contract/errors.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { type Backend, backends, onTier } from '../backends.js';
import { hsToken } from '../http/harness.js';
import { BODY_LIMIT, localBase, startWorkspaceApi, type WorkspaceApi } from './api.js';

const MIB = 1024 * 1024;
const localFs: Backend = {
  name: 'fs (local server)',
  make: async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'fs-snap-'));
    const driver = createFsDriver({ root, presign: { baseUrl: () => localBase.url } });
    return { driver, close: () => rm(root, { recursive: true, force: true }) };
  },
};
const transferring = onTier('fast')
  ? [localFs]
  : backends().filter((b) => b.name !== 'memory' && b.name !== 'fs');
const sid = () => `session-${randomBytes(6).toString('hex')}`;
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('base64');
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Deterministic incompressible bytes. */
function noise(n: number, seed: number): Buffer {
  const out = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/** A tree with odd paths: spaces, Unicode, deep nesting, empty files and folders, links, modes. */
async function oddTree(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'snap-src-'));
  const deep = path.join(dir, ...Array.from({ length: 12 }, (_, i) => `level ${i}`));
  await mkdir(deep, { recursive: true });
  await writeFile(path.join(deep, 'bottom.txt'), 'at the bottom\n');
  await mkdir(path.join(dir, 'empty dir'));
  await writeFile(path.join(dir, 'empty file'), '');
  await writeFile(path.join(dir, 'naïve café ☕ 日本語.md'), '# Unicode\n'.repeat(100));
  await writeFile(path.join(dir, 'with  two spaces .txt'), 'spaces');
  await writeFile(path.join(dir, 'run.sh'), '#!/bin/sh\necho hi\n');
  await chmod(path.join(dir, 'run.sh'), 0o755);
  await writeFile(path.join(dir, 'secret'), 'private');
  await chmod(path.join(dir, 'secret'), 0o600);
  await writeFile(path.join(dir, 'big.bin'), noise(3 * MIB, 11));
  await writeFile(path.join(dir, 'text.log'), Buffer.from('log line with some repetition\n'.repeat(60_000)));
  await symlink('run.sh', path.join(dir, 'link to run'));
  await symlink('../outside/target', path.join(dir, 'dangling link'));
  await symlink('empty dir', path.join(dir, 'dir link'));
  return dir;
}

/** Every entry of a tree: type, mode, content hash or link target. */
async function describeTree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (abs: string, rel: string) => {
    for (const name of (await readdir(abs)).sort()) {
      const full = path.join(abs, name);
      const p = rel ? `${rel}/${name}` : name;
      const st = await lstat(full);
      if (st.isSymbolicLink()) out[p] = `link ${await readlink(full)}`;
      else if (st.isDirectory()) {
        out[p] = `dir ${(st.mode & 0o7777).toString(8)}`;
        await walk(full, p);
      } else out[p] = `file ${(st.mode & 0o7777).toString(8)} ${st.size} ${sha(await readFile(full))}`;
    }
  };
  await walk(dir, '');
  return out;
}

describe.each(transferring)('workspace snapshots on $name', (backend) => {
  let driver: ObjectStoreDriver;
  let close: () => Promise<void>;
  let api: WorkspaceApi;
  const temps: string[] = [];
  const temp = async () => {
    const d = await mkdtemp(path.join(tmpdir(), 'snap-'));
    temps.push(d);
    return d;
  };

  beforeAll(async () => {
    ({ driver, close } = await backend.make());
    api = await startWorkspaceApi(driver);
  });
  afterAll(async () => {
    await api.close();
    await close();
    await Promise.all(temps.map((d) => rm(d, { recursive: true, force: true })));
  });

  /** A client of `user` whose every request (API and object store) is counted. */
  const counted = (user: string, fault?: (url: string, init: RequestInit | undefined) => boolean) => {
    const requests: Array<{ method: string; url: string }> = [];
    const client = createHttpClient({
      baseUrl: api.baseUrl,
      token: () => hsToken({ sub: user }),
      bodyLimitBytes: BODY_LIMIT,
      attempts: 1,
      fetch: async (input, init) => {
        const url = String(input);
        requests.push({ method: init?.method ?? 'GET', url });
        if (fault?.(url, init)) throw new TypeError('fetch failed (injected)');
        return fetch(input, init);
      },
    });
    return { client, requests };
  };

  it('round-trips a tree with odd paths, lists it, reads one file and diffs two snapshots', async () => {
    const alice = api.client('alice');
    const s = sid();
    const src = await oddTree();
    temps.push(src);
    const first = await alice.workspaces.push(s, 'repo', src);
    expect(first.entries).toBe(Object.keys(await describeTree(src)).length);
    expect(first.uploadedPacks).toBeGreaterThan(0);
    const out = path.join(await temp(), 'restored');
    expect(await alice.workspaces.pull(s, 'repo', first.snapshotId, out)).toBe(true);
    expect(await describeTree(out)).toEqual(await describeTree(src));

    const listed = await alice.workspaces.list(s, 'repo');
    expect(listed.map((x) => x.snapshotId)).toEqual([first.snapshotId]);
    const uni = 'naïve café ☕ 日本語.md';
    expect(Buffer.from((await alice.workspaces.readFile(s, 'repo', first.snapshotId, uni)) ?? [])).toEqual(
      await readFile(path.join(src, uni)),
    );
    expect(await alice.workspaces.readFile(s, 'repo', first.snapshotId, 'no such file')).toBeUndefined();

    await writeFile(path.join(src, 'added.txt'), 'new');
    await rm(path.join(src, 'secret'));
    await writeFile(path.join(src, 'with  two spaces .txt'), 'spaces changed');
    const second = await alice.workspaces.push(s, 'repo', src);
    expect(second.parent).toBe(first.snapshotId);
    const diff = await alice.workspaces.diff(s, 'repo', first.snapshotId, second.snapshotId);
    expect(diff).toMatchObject({
      added: ['added.txt'],
      removed: ['secret'],
      changed: ['with  two spaces .txt'],
    });
    expect(diff.newChunkBytes).toBe('new'.length + 'spaces changed'.length);
    expect((await alice.workspaces.list(s, 'repo')).map((x) => x.snapshotId)).toEqual([
      second.snapshotId,
      first.snapshotId,
    ]);
    // `latest` is the newest; a pull refuses a folder that is not empty.
    const again = path.join(await temp(), 'again');
    expect(await alice.workspaces.pull(s, 'repo', 'latest', again)).toBe(true);
    expect(await describeTree(again)).toEqual(await describeTree(src));
    await expect(alice.workspaces.pull(s, 'repo', 'latest', again)).rejects.toThrow(/not empty/);

    await alice.workspaces.delete(s, 'repo', first.snapshotId);
    expect((await alice.workspaces.list(s, 'repo')).map((x) => x.snapshotId)).toEqual([second.snapshotId]);
    expect(await alice.workspaces.get(s, 'repo', first.snapshotId)).toBeUndefined();
  });

  it('restores byte-identical many large files read into reused buffers (repeats, text, edits)', async () => {
    const alice = api.client('alice');
    const s = sid();
    const src = await temp();
    const text = Buffer.from('a line of a build log, compressible\n'.repeat(40_000));
    for (let i = 0; i < 14; i++) {
      // Sizes cross the buffers' steps; every third file repeats another's bytes (a chunk added
      // once, its second compression left running), every fourth compresses.
      const bytes =
        i % 4 === 3 ? text.subarray(0, text.length - i) : noise(MIB + i * 700_000, i % 3 === 2 ? 1 : i + 1);
      await writeFile(path.join(src, `f${i}.bin`), bytes);
    }
    const first = await alice.workspaces.push(s, 'w', src);
    const out = path.join(await temp(), 'one');
    await alice.workspaces.pull(s, 'w', first.snapshotId, out);
    expect(await describeTree(out)).toEqual(await describeTree(src));
    for (const i of [0, 5, 9]) {
      const edited = await readFile(path.join(src, `f${i}.bin`));
      edited.set(noise(64 * 1024, 900 + i), 300_000);
      await writeFile(path.join(src, `f${i}.bin`), edited);
    }
    const second = await alice.workspaces.push(s, 'w', src);
    const again = path.join(await temp(), 'two');
    await alice.workspaces.pull(s, 'w', second.snapshotId, again);
    expect(await describeTree(again)).toEqual(await describeTree(src));
  });

  it('pushes a small change within the budget: ≤ 12 requests, ≤ 3 API calls, only the new bytes', async () => {
    const s = sid();
    const src = await temp();
    for (let i = 0; i < 200; i++) await writeFile(path.join(src, `f${i}.txt`), `file ${i}\n`.repeat(50 + i));
    await writeFile(path.join(src, 'blob.bin'), noise(4 * MIB, 5));
    const { client, requests } = counted('alice');
    const first = await client.workspaces.push(s, 'w', src);
    const data = noise(4 * MIB, 5);
    data.set(noise(200 * 1024, 99), 2 * MIB);
    await writeFile(path.join(src, 'blob.bin'), data);
    await writeFile(path.join(src, 'f7.txt'), 'edited');
    requests.length = 0;
    const apiBefore = api.seen.length;
    const progress: Array<[number, number]> = [];
    const second = await client.workspaces.push(s, 'w', src, { onProgress: (d, n) => progress.push([d, n]) });
    expect(progress.at(-1)).toEqual([second.uploadedBytes, second.uploadedBytes]);
    const calls = api.seen.slice(apiBefore).filter((r) => !r.path.startsWith('/v1/blobs/'));
    expect(calls.length).toBeLessThanOrEqual(3);
    expect(requests.length).toBeLessThanOrEqual(12);
    expect(second.unchangedFiles).toBe(199);
    expect(second.uploadedBytes).toBeLessThan(1.2 * MIB);
    expect(first.uploadedBytes).toBeGreaterThan(4 * MIB);
    const out = path.join(await temp(), 'out');
    await client.workspaces.pull(s, 'w', second.snapshotId, out);
    expect(await describeTree(out)).toEqual(await describeTree(src));
  });

  it('sends chunk hashes in batches when they exceed one request body', async () => {
    const s = sid();
    const src = await temp();
    await Promise.all(
      Array.from({ length: 1200 }, (_, i) => writeFile(path.join(src, `f${i}.txt`), `file number ${i}\n`)),
    );
    const before = api.seen.length;
    const pushed = await api.client('alice').workspaces.push(s, 'w', src);
    const starts = api.seen.slice(before).filter((r) => r.method === 'POST' && r.path.endsWith('/snapshots'));
    // 1,200 hashes are ~89 KB of JSON: more than the API's 64 KiB body limit here.
    expect(starts.length).toBe(2);
    expect(Math.max(...starts.map((r) => r.requestBytes))).toBeLessThanOrEqual(BODY_LIMIT);
    expect(pushed.entries).toBe(1200);
    const out = path.join(await temp(), 'out');
    await api.client('alice').workspaces.pull(s, 'w', pushed.snapshotId, out);
    expect(await describeTree(out)).toEqual(await describeTree(src));
  });

  it('retries a push cut off between packs, sending only the packs that did not arrive', async () => {
    const s = sid();
    const src = await temp();
    // Packs of 1 MiB here (16 MiB by default): the tree is three packs or more.
    await writeFile(path.join(src, 'a.bin'), noise(2.5 * MIB, 3));
    await writeFile(path.join(src, 'b.bin'), noise(1.5 * MIB, 4));
    let puts = 0;
    const cut = counted('alice', (url, init) => {
      if (init?.method !== 'PUT' || url.startsWith(`${api.baseUrl}/v1/sessions`)) return false;
      puts++;
      return puts === 2;
    });
    const small = { packBytes: 1 * MIB };
    await expect(cut.client.workspaces.push(s, 'w', src, { ...small, concurrency: 1 })).rejects.toThrow();
    expect(await cut.client.workspaces.list(s, 'w')).toEqual([]);
    const retried = await api.client('alice').workspaces.push(s, 'w', src, small);
    expect(retried.packs.length).toBeGreaterThanOrEqual(3);
    // The first pack arrived before the cut: only the others are sent again.
    expect(retried.uploadedPacks).toBe(retried.packs.length - 1);
    const out = path.join(await temp(), 'out');
    await api.client('alice').workspaces.pull(s, 'w', retried.snapshotId, out);
    expect(await describeTree(out)).toEqual(await describeTree(src));
  });

  it('uploads packs while it still scans: a start call per 8 sealed packs, the manifest in the last', async () => {
    const s = sid();
    const src = await temp();
    // 20 incompressible files of 256 KiB, one pack each.
    for (let i = 0; i < 20; i++) await writeFile(path.join(src, `f${i}.bin`), noise(256 * 1024, 200 + i));
    const { client, requests } = counted('alice');
    const pushed = await client.workspaces.push(s, 'w', src, { packBytes: 256 * 1024 });
    expect(pushed.packs).toHaveLength(20);
    const starts = requests.flatMap((r, i) =>
      r.method === 'POST' && r.url.endsWith('/workspaces/w/snapshots') ? [i] : [],
    );
    const packPuts = requests.flatMap((r, i) =>
      r.method === 'PUT' && !r.url.startsWith(`${api.baseUrl}/v1/sessions`) ? [i] : [],
    );
    // Two calls of 8 packs while scanning, the last with the 4 left and the manifest.
    expect(starts).toHaveLength(3);
    expect(packPuts).toHaveLength(21); // 20 packs and the manifest
    // The first packs went up before the scan ended (before the last start call).
    expect(packPuts[0]).toBeLessThan(starts.at(-1) as number);
    // The manifest is uploaded after the last start call, and the commit comes last.
    expect(packPuts.at(-1)).toBeGreaterThan(starts.at(-1) as number);
    expect(requests.at(-1)?.url).toContain(`/workspaces/w/snapshots/${pushed.snapshotId}`);
    const out = path.join(await temp(), 'out');
    await client.workspaces.pull(s, 'w', pushed.snapshotId, out);
    expect(await describeTree(out)).toEqual(await describeTree(src));
  });

  it('commits two pushes of one workspace at once, and a session delete takes every snapshot along', async () => {
    const alice = api.client('alice');
    const s = sid();
    const base = await temp();
    await writeFile(path.join(base, 'shared.bin'), noise(1 * MIB, 21));
    const first = await alice.workspaces.push(s, 'w', base);
    expect((await driver.list({ prefix: `${api.prefix}alice/${s}/` })).objects.length).toBeGreaterThan(1);
    const trees = await Promise.all(
      [1, 2].map(async (n) => {
        const dir = await temp();
        await writeFile(path.join(dir, 'shared.bin'), noise(1 * MIB, 21));
        await writeFile(path.join(dir, `only-${n}.bin`), noise(700 * 1024, 30 + n));
        return dir;
      }),
    );
    const pushed = await Promise.all(trees.map((dir) => alice.workspaces.push(s, 'w', dir)));
    expect(pushed.map((p) => p.parent)).toEqual([first.snapshotId, first.snapshotId]);
    expect(new Set(pushed.map((p) => p.snapshotId)).size).toBe(2);
    for (const [i, p] of pushed.entries()) {
      const out = path.join(await temp(), `out-${i}`);
      await alice.workspaces.pull(s, 'w', p.snapshotId, out);
      expect(await describeTree(out)).toEqual(await describeTree(trees[i] as string));
    }
    expect((await alice.workspaces.list(s, 'w')).length).toBe(3);
    // Packs, manifests and records carry kind=pack: no lifecycle rule archives or expires them.
    const owned = (await driver.list({ prefix: `${api.prefix}alice/${s}/` })).objects.filter((o) =>
      o.key.includes('~wss~'),
    );
    expect(new Set(owned.map((o) => o.key.split('/').at(-2))).size).toBe(3);
    if (driver.capabilities.tags)
      for (const o of owned)
        expect((await driver.head(o.key, { tags: true })).tags).toEqual({ kind: 'pack' });
    await alice.delete(s);
    expect(await alice.workspaces.list(s, 'w')).toEqual([]);
    // The session's folder (`<prefix>alice/<session>/`) holds nothing any more: packs included.
    expect((await driver.list({ prefix: `${api.prefix}alice/${s}/` })).objects).toEqual([]);
  });

  it('does the same from the CLI: push, ls, cat, diff, pull; usage errors exit 2', async () => {
    const s = sid();
    const src = await temp();
    await writeFile(path.join(src, 'a.txt'), 'first');
    const token = await hsToken({ sub: 'alice' });
    const run = async (...args: string[]) => {
      const out: Array<string | Uint8Array> = [];
      const lines: string[] = [];
      const code = await runWorkspaceCli([...args, '--session', s, '--name', 'cli', '--token', token], {
        env: { AGENT_STATE_URL: api.baseUrl },
        line: (t) => lines.push(t),
        write: (d) => out.push(d),
      });
      return { code, out: Buffer.concat(out.map((d) => Buffer.from(d))).toString('utf8'), lines };
    };
    const first = await run('push', src);
    expect(first.code).toBe(0);
    const id1 = first.out.trim();
    expect(first.lines.at(-1)).toMatch(new RegExp(`^committed ${id1}: 1 entries, 5 bytes`));
    await writeFile(path.join(src, 'a.txt'), 'second');
    await writeFile(path.join(src, 'b.txt'), 'new');
    const id2 = (await run('push', src)).out.trim();
    expect((await run('ls')).out).toMatch(new RegExp(`^${id2}  .*\n${id1}  `));
    expect((await run('cat', id1, 'a.txt')).out).toBe('first');
    expect((await run('diff', id1, id2)).out).toBe('+ b.txt\n~ a.txt\n');
    const out = path.join(await temp(), 'out');
    expect((await run('pull', 'latest', out)).code).toBe(0);
    expect(await describeTree(out)).toEqual(await describeTree(src));
    expect((await run('cat', id1, 'nope.txt')).code).toBe(1);
    expect((await run('pull')).code).toBe(2);
    expect((await run('push', src, '--bogus')).code).toBe(2);
    const help = await run('--help');
    expect(help.code).toBe(0);
    for (const flag of [
      '--session',
      '--name',
      '--url',
      '--token',
      '--fencing-token',
      '--no-parent',
      '--help',
    ])
      expect(WORKSPACE_USAGE).toContain(flag);
    expect(help.out).toContain('push <dir>');
  });

  it('resumes a pull cut off mid-way, downloading only the files not yet in place', async () => {
    const s = sid();
    const src = await temp();
    for (let i = 0; i < 4; i++) await writeFile(path.join(src, `f${i}.bin`), noise(1.25 * MIB, 40 + i));
    await api.client('alice').workspaces.push(s, 'w', src, { packBytes: 2 * MIB });
    const rangesOf = (init: RequestInit | undefined) => {
      const range = (init?.headers as Record<string, string> | undefined)?.range;
      const m = /^bytes=(\d+)-(\d+)$/.exec(range ?? '');
      return m ? Number(m[2]) - Number(m[1]) + 1 : undefined;
    };
    let packGets = 0;
    const cut = counted('alice', (_url, init) => {
      if (rangesOf(init) === undefined) return false;
      packGets++;
      return packGets === 2;
    });
    const out = path.join(await temp(), 'out');
    await expect(cut.client.workspaces.pull(s, 'w', 'latest', out)).rejects.toThrow();
    const partial = await describeTree(out);
    expect(Object.keys(partial).length).toBeGreaterThan(0);
    expect(partial).not.toEqual(await describeTree(src));
    let resumedBytes = 0;
    const progress: number[] = [];
    const resume = counted('alice', (_url, init) => {
      resumedBytes += rangesOf(init) ?? 0;
      return false;
    });
    await resume.client.workspaces.pull(s, 'w', 'latest', out, {
      resume: true,
      onProgress: (d) => progress.push(d),
    });
    expect(await describeTree(out)).toEqual(await describeTree(src));
    expect(resumedBytes).toBeGreaterThan(0);
    // The first pack's GET arrived whole before the cut: f0 is in place and not read again.
    expect(resumedBytes).toBeLessThanOrEqual(5 * MIB - 1.25 * MIB);
    expect(progress.at(-1)).toBe(5 * MIB);
  });

  it('keeps a session that holds a snapshot (or a workspace) existing after its last value is deleted', async () => {
    const alice = api.client('alice');
    const [s, t, u] = [sid(), sid(), sid()];
    const src = await temp();
    await writeFile(path.join(src, 'a.txt'), 'a');
    await alice.save(s, 'k', { v: 1 });
    await alice.workspaces.push(s, 'w', src);
    await alice.deleteKey(s, 'k');
    expect(await alice.exists(s)).toBe(true);
    await alice.save(t, 'k', { v: 1 });
    await alice.uploadWorkspace(t, 'blob', new Uint8Array([1, 2, 3]));
    await alice.deleteKey(t, 'k');
    expect(await alice.exists(t)).toBe(true);
    // With nothing else left, the session is empty again.
    await alice.save(u, 'k', { v: 1 });
    await alice.deleteKey(u, 'k');
    expect(await alice.exists(u)).toBe(false);
  });

  it('answers a fenced commit replayed after its lease was released; a fresh one is fenced', async () => {
    const s = sid();
    const lease = await api.lock.acquire({ userId: 'alice', sessionId: s });
    const send = async (method: string, url: string, body: unknown) =>
      fetch(`${api.baseUrl}${url}`, {
        method,
        headers: {
          authorization: `Bearer ${await hsToken({ sub: 'alice' })}`,
          'content-type': 'application/json',
          'fencing-token': String(lease.token),
        },
        body: JSON.stringify(body),
      });
    const gz = gzipSync(Buffer.from(JSON.stringify({ format: 1, entries: [] })));
    const declared = { packs: [], manifest: { size: gz.length, md5: md5(gz) } };
    const started = await send('POST', `/v1/sessions/${s}/workspaces/w/snapshots`, declared);
    expect(started.status).toBe(201);
    const { snapshotId, manifestUpload } = (await started.json()) as {
      snapshotId: string;
      manifestUpload: { url: string; headers: Record<string, string> };
    };
    await fetch(manifestUpload.url, { method: 'PUT', headers: manifestUpload.headers, body: gz });
    const url = `/v1/sessions/${s}/workspaces/w/snapshots/${snapshotId}`;
    const first = await send('POST', url, declared);
    expect(first.status).toBe(200);
    await api.lock.release({ userId: 'alice', sessionId: s }, lease.owner, lease.token);
    const replay = await send('POST', url, declared);
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual(await first.json());
    const fresh = await send('POST', `/v1/sessions/${s}/workspaces/w/snapshots`, declared);
    expect(fresh.status).toBe(409);
    expect(((await fresh.json()) as { code: string }).code).toBe('fenced');
  });

  /** Starts a push by hand, uploads `manifest` (any JSON) gzipped, and commits it: the answer. */
  async function pushRaw(
    user: string,
    s: string,
    manifest: unknown,
    packs: Array<{ bytes: Uint8Array }> = [],
  ) {
    const gz = gzipSync(Buffer.from(JSON.stringify(manifest)));
    const declared = {
      packs: packs.map((p) => ({ id: sha(p.bytes), size: p.bytes.length, md5: md5(p.bytes) })),
      manifest: { size: gz.length, md5: md5(gz) },
    };
    const started = await api.call(user, 'POST', `/v1/sessions/${s}/workspaces/w/snapshots`, declared);
    expect(started.status).toBe(201);
    const body = (await started.json()) as {
      snapshotId: string;
      uploads: Array<{ pack: string; url: string; headers: Record<string, string> }>;
      manifestUpload: { url: string; headers: Record<string, string> };
    };
    for (const u of body.uploads) {
      const bytes = packs.find((p) => sha(p.bytes) === u.pack)?.bytes;
      expect((await fetch(u.url, { method: 'PUT', headers: u.headers, body: bytes })).status).toBe(200);
    }
    const put = await fetch(body.manifestUpload.url, {
      method: 'PUT',
      headers: body.manifestUpload.headers,
      body: gz,
    });
    expect(put.status).toBe(200);
    const commit = await api.call(
      user,
      'POST',
      `/v1/sessions/${s}/workspaces/w/snapshots/${body.snapshotId}`,
      declared,
    );
    return { commit, snapshotId: body.snapshotId, declared };
  }

  it('refuses hostile manifests with 400 naming the field, and commits nothing', async () => {
    const s = sid();
    const pack = { bytes: new Uint8Array(Buffer.from('0123456789')) };
    const chunk = (over: Record<string, unknown> = {}) => ({
      hash: `sha256:${sha(Buffer.from('0123456789'))}`,
      size: 10,
      pack: sha(pack.bytes),
      offset: 0,
      length: 10,
      encoding: 'identity',
      ...over,
    });
    const file = (p: string, chunks = [chunk()]) => ({
      path: p,
      type: 'file',
      mode: 0o644,
      size: 10,
      mtimeMs: 0,
      sha256: `sha256:${sha(Buffer.from('0123456789'))}`,
      chunks,
    });
    const cases: Array<[unknown, string]> = [
      [{ format: 1, entries: [file('a/../../etc/passwd')] }, 'entries[0].path'],
      [{ format: 1, entries: [file('/etc/passwd')] }, 'entries[0].path'],
      [{ format: 1, entries: [file('x'), file('x')] }, 'entries[1].path'],
      [{ format: 1, entries: [file('x', [chunk({ offset: 5 })])] }, 'entries[0].chunks[0].offset'],
      [{ format: 1, entries: [file('x', [chunk({ pack: 'f'.repeat(64) })])] }, 'entries[0].chunks[0].pack'],
    ];
    for (const [manifest, field] of cases) {
      const { commit } = await pushRaw('alice', s, manifest, [pack]);
      expect(commit.status).toBe(400);
      const problem = (await commit.json()) as { code: string; field: string };
      expect(problem).toMatchObject({ code: 'invalid-request', field });
    }
    expect(await api.client('alice').workspaces.list(s, 'w')).toEqual([]);
    // The same pack in a sound manifest commits.
    const { commit } = await pushRaw('alice', s, { format: 1, entries: [file('x')] }, [pack]);
    expect(commit.status).toBe(200);
  });

  it('refuses a pack PUT whose Content-MD5 is not the signed one, or has none (S3, OSS, fs alike)', async () => {
    const s = sid();
    const declaredBytes = randomBytes(4096);
    const swapped = randomBytes(4096);
    const gz = gzipSync(Buffer.from(JSON.stringify({ format: 1, entries: [] })));
    const declared = {
      packs: [{ id: sha(declaredBytes), size: declaredBytes.length, md5: md5(declaredBytes) }],
      manifest: { size: gz.length, md5: md5(gz) },
    };
    const started = await api.call('alice', 'POST', `/v1/sessions/${s}/workspaces/w/snapshots`, declared);
    const body = (await started.json()) as {
      snapshotId: string;
      uploads: Array<{ url: string; headers: Record<string, string> }>;
      manifestUpload: { url: string; headers: Record<string, string> };
    };
    const upload = body.uploads[0] as { url: string; headers: Record<string, string> };
    expect(upload.headers['content-md5']).toBe(md5(declaredBytes));
    const { 'content-md5': _signed, ...unsigned } = upload.headers;
    const attempts: Array<[Record<string, string>, Uint8Array]> = [
      [{ ...upload.headers, 'content-md5': md5(swapped) }, swapped],
      [unsigned, swapped],
      [unsigned, declaredBytes],
      [upload.headers, swapped],
    ];
    for (const [headers, bytes] of attempts) {
      const put = await fetch(upload.url, { method: 'PUT', headers, body: bytes });
      expect(put.status, JSON.stringify(Object.keys(headers))).toBeGreaterThanOrEqual(400);
      expect(put.status).toBeLessThan(500);
    }
    await fetch(body.manifestUpload.url, { method: 'PUT', headers: body.manifestUpload.headers, body: gz });
    const url = `/v1/sessions/${s}/workspaces/w/snapshots/${body.snapshotId}`;
    const early = await api.call('alice', 'POST', url, declared);
    expect(early.status).toBe(422);
    expect(
      (await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: declaredBytes })).status,
    ).toBe(200);
    expect((await api.call('alice', 'POST', url, declared)).status).toBe(200);
  });

  it('answers a replayed commit again, refuses one with another body, and a commit of nothing uploaded', async () => {
    const s = sid();
    const { commit, snapshotId, declared } = await pushRaw('alice', s, { format: 1, entries: [] });
    expect(commit.status).toBe(200);
    const first = await commit.json();
    const url = `/v1/sessions/${s}/workspaces/w/snapshots/${snapshotId}`;
    const replay = await api.call('alice', 'POST', url, declared);
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual(first);
    const other = await api.call('alice', 'POST', url, {
      ...declared,
      manifest: { ...declared.manifest, size: 1 },
    });
    expect(other.status).toBe(409);
    expect(((await other.json()) as { code: string }).code).toBe('commit-mismatch');
    await expect(api.client('alice').workspaces.delete(s, 'w', 'not-an-id')).rejects.toMatchObject({
      status: 400,
    });
    // Nothing uploaded for a declared pack: 422, nothing committed.
    const bytes = randomBytes(100);
    const missing = await api.call(
      'alice',
      'POST',
      `/v1/sessions/${s}/workspaces/w/snapshots/0000000000-0123456789abcdef`,
      {
        packs: [{ id: sha(bytes), size: 100, md5: md5(bytes) }],
        manifest: declared.manifest,
      },
    );
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { code: string }).code).toBe('upload-mismatch');
    expect((await api.client('alice').workspaces.list(s, 'w')).map((x) => x.snapshotId)).toEqual([
      snapshotId,
    ]);
  });

  it('refuses a stale lease token, and keeps snapshots from another user', async () => {
    const alice = api.client('alice');
    const s = sid();
    const src = await temp();
    await writeFile(path.join(src, 'a.txt'), 'a');
    const { token } = await api.lock.acquire({ userId: 'alice', sessionId: s });
    const pushed = await alice.workspaces.push(s, 'w', src, { token });
    await expect(alice.workspaces.push(s, 'w', src, { token: token - 1 })).rejects.toBeInstanceOf(
      FencedError,
    );
    await expect(
      alice.workspaces.delete(s, 'w', pushed.snapshotId, { token: token + 1 }),
    ).rejects.toBeInstanceOf(FencedError);
    expect((await alice.workspaces.list(s, 'w')).length).toBe(1);
    const bob = api.client('bob');
    expect(await bob.workspaces.list(s, 'w')).toEqual([]);
    expect(await bob.workspaces.get(s, 'w', pushed.snapshotId)).toBeUndefined();
    expect(await bob.workspaces.pull(s, 'w', 'latest', path.join(await temp(), 'x'))).toBe(false);
  });
});

describe.runIf(onTier('fast'))('the CLI progress bar', () => {
  it('draws bytes, rate and ETA on a terminal, at most 10 times a second; nothing elsewhere', () => {
    let t = 0;
    const drawn: string[] = [];
    const io = { env: {}, line: () => {}, write: () => {}, tty: true, status: (x: string) => drawn.push(x) };
    const bar = progressBar(io, () => t);
    t = 1000;
    bar(2e6, 8e6);
    t = 1050;
    bar(3e6, 8e6); // within 100 ms of the last: not drawn
    t = 2000;
    bar(4e6, 8e6);
    t = 4000;
    bar(8e6, 8e6);
    expect(drawn).toEqual([
      '\r[######------------------] 2.0/8.0 MB  2.0 MB/s  ETA 3 s',
      '\r[############------------] 4.0/8.0 MB  2.0 MB/s  ETA 2 s',
      '\r[########################] 8.0/8.0 MB  2.0 MB/s  ETA 0 s\n',
    ]);
    const quiet: string[] = [];
    progressBar({ ...io, tty: false, status: (x: string) => quiet.push(x) })(1, 2);
    expect(quiet).toEqual([]);
  });
});

describe.runIf(onTier('fast'))('workspace snapshots without presigned URLs', () => {
  it('answers 501 unsupported on memory', async () => {
    const driver = createMemoryDriver();
    const api = await startWorkspaceApi(driver);
    try {
      const res = await api.call('alice', 'POST', `/v1/sessions/${sid()}/workspaces/w/snapshots`, {});
      expect(res.status).toBe(501);
      expect(((await res.json()) as { code: string }).code).toBe('unsupported');
    } finally {
      await api.close();
      await driver.close();
    }
  });
});
