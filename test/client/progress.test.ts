/**
 * progress of workspace transfers: `onProgress(done, total)` counts the bytes of the
 * stored (compressed) body, from (0, total), as each part of an upload or each chunk of a download
 * completes, to a last call with `done === total`. Against the local server, whose fs storage
 * answers the presigned URLs (as under `npm start`).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../lib/client/node/index.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import { hsToken } from '../http/harness.js';
import { localBase, startWorkspaceApi, type WorkspaceApi } from '../workspaces/api.js';

const MIB = 1024 * 1024;
const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Checks a run of progress calls: from (0, total), rising, to (total, total); returns the dones. */
function checkRun(calls: Array<[number, number]>, total: number) {
  expect(calls.length).toBeGreaterThan(0);
  expect(calls[0]).toEqual([0, total]);
  expect(calls.every(([, t]) => t === total)).toBe(true);
  const dones = calls.map(([d]) => d);
  for (let i = 1; i < dones.length; i++) expect(dones[i]).toBeGreaterThanOrEqual(dones[i - 1] as number);
  expect(calls.at(-1)).toEqual([total, total]);
  return dones;
}

describe('typed client: progress of workspace uploads and downloads (local server, fs storage)', () => {
  let root: string;
  let api: WorkspaceApi;
  const data = new Uint8Array(randomBytes(11 * MIB + 12_345));

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'client-progress-'));
    api = await startWorkspaceApi(createFsDriver({ root, presign: { baseUrl: () => localBase.url } }));
  });
  afterAll(async () => {
    await api.close();
    await rm(root, { recursive: true, force: true });
  });

  it('reports each part of a multipart upload as it completes, then the download chunk by chunk', async () => {
    const alice = api.client('alice');
    const up: Array<[number, number]> = [];
    const info = await alice.uploadWorkspace('progress', 'parts', data, {
      encoding: 'identity',
      multipartAboveBytes: 5 * MIB,
      partBytes: 5 * MIB,
      concurrency: 2,
      onProgress: (done, total) => up.push([done, total]),
    });
    expect(info.size).toBe(data.length);
    const dones = checkRun(up, data.length);
    // (0), then one call per part: 5 MiB, 5 MiB and the rest, completing in any order.
    expect(dones).toHaveLength(4);
    const steps = dones.slice(1).map((d, i) => d - (dones[i] as number));
    expect(steps.sort((a, b) => a - b)).toEqual([data.length - 10 * MIB, 5 * MIB, 5 * MIB]);

    const down: Array<[number, number]> = [];
    const back = await alice.downloadWorkspace('progress', 'parts', {
      onProgress: (done, total) => down.push([done, total]),
    });
    expect(sha(back as Uint8Array)).toBe(sha(data));
    expect(checkRun(down, data.length).length).toBeGreaterThan(10);
  });

  it('counts the stored, compressed bytes of a gzip workspace, up and down (also into a file)', async () => {
    const alice = api.client('alice');
    const text = new Uint8Array(Buffer.from('a transcript line, compressed well\n'.repeat(200_000)));
    const up: Array<[number, number]> = [];
    const info = await alice.uploadWorkspace('progress', 'gzip', text, {
      onProgress: (done, total) => up.push([done, total]),
    });
    expect(info.size).toBeLessThan(text.length / 10);
    expect(up).toEqual([
      [0, info.size],
      [info.size, info.size],
    ]);
    const down: Array<[number, number]> = [];
    const back = await alice.downloadWorkspace('progress', 'gzip', {
      onProgress: (done, total) => down.push([done, total]),
    });
    expect(sha(back as Uint8Array)).toBe(sha(text));
    checkRun(down, info.size);
    const dir = await mkdtemp(path.join(tmpdir(), 'client-progress-file-'));
    try {
      const toFile: Array<[number, number]> = [];
      const file = path.join(dir, 'out');
      expect(
        await alice.downloadWorkspaceToFile('progress', 'gzip', file, {
          onProgress: (done, total) => toFile.push([done, total]),
        }),
      ).toBe(true);
      expect(sha(await readFile(file))).toBe(sha(text));
      checkRun(toFile, info.size);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('through a fetch that decodes the body itself, still starts at (0, total) and ends at (total, total)', async () => {
    const alice = api.client('alice');
    const text = new Uint8Array(Buffer.from('x'.repeat(300_000)));
    const info = await alice.uploadWorkspace('progress', 'decoded', text);
    const withFetch = createHttpClient({
      baseUrl: api.baseUrl,
      token: () => hsToken({ sub: 'alice' }),
      fetch: (input, init) => fetch(input, init),
    });
    const down: Array<[number, number]> = [];
    const back = await withFetch.downloadWorkspace('progress', 'decoded', {
      onProgress: (done, total) => down.push([done, total]),
    });
    expect(sha(back as Uint8Array)).toBe(sha(text));
    expect(down).toEqual([
      [0, info.size],
      [info.size, info.size],
    ]);
  });
});
