/**
 * Workspace transfer: time and bytes to upload and download workspaces of 1 MB, 100 MB and 1 GB
 * through the API on s3rver (the bytes go straight to the store; the function only signs), and the
 * compression ratio of gzip and brotli on a realistic agent transcript.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, open, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createHttpClient } from '../lib/client/node/index.js';
import { hasWorkspacePackSweep } from '../lib/contract/workspace-snapshots.js';
import type { ObjectStoreDriver } from '../lib/drivers/types.js';
import { createStateStore } from '../lib/store/store.js';
import { encodeBody } from '../lib/util/encoding.js';
import { chunkBoundaries } from '../lib/workspace-snapshots/chunker.js';
import { chunkHash } from '../lib/workspace-snapshots/packs.js';
import { hsToken } from '../test/http/harness.js';
import { BODY_LIMIT, startWorkspaceApi } from '../test/workspaces/api.js';

const MB = 1024 * 1024;

export interface TransferRow {
  size: number;
  /** Whether the client read and wrote files (a part at a time) instead of one buffer. */
  file: boolean;
  uploadMs: number;
  downloadMs: number;
  functionRequests: number;
  functionBytes: number;
  peakRssMb: number;
}

/**
 * Uploads and downloads one workspace per size (random bytes, stored as they are), from memory, and
 * for `fileSizes` from a file into a file (the client then holds a few parts at a time).
 */
export async function runTransferBench(
  driver: ObjectStoreDriver,
  sizes: number[],
  fileSizes: number[] = [],
): Promise<TransferRow[]> {
  const api = await startWorkspaceApi(driver);
  const client = api.client('bench');
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-ws-'));
  const rows: TransferRow[] = [];
  const measure = async (
    size: number,
    file: boolean,
    up: () => Promise<unknown>,
    down: () => Promise<number>,
  ) => {
    api.seen.length = 0;
    let peak = process.memoryUsage().rss;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 50);
    const t0 = performance.now();
    await up();
    const t1 = performance.now();
    const got = await down();
    const t2 = performance.now();
    clearInterval(sampler);
    if (got !== size) throw new Error(`download of ${size} bytes came back with ${got}`);
    rows.push({
      size,
      file,
      uploadMs: t1 - t0,
      downloadMs: t2 - t1,
      functionRequests: api.seen.length,
      functionBytes: api.seen.reduce((sum, s) => sum + s.requestBytes + s.answerBytes, 0),
      peakRssMb: peak / MB,
    });
  };
  try {
    // Files first: a process's RSS does not shrink after the in-memory rows.
    for (const size of fileSizes) {
      const source = path.join(dir, 'source');
      const out = await open(source, 'w');
      for (let at = 0; at < size; at += 64 * MB) await out.write(randomBytes(Math.min(64 * MB, size - at)));
      await out.close();
      await measure(
        size,
        true,
        () => client.uploadWorkspaceFile('bench', `f-${size}`, source, { encoding: 'identity' }),
        async () => {
          await client.downloadWorkspaceToFile('bench', `f-${size}`, path.join(dir, 'back'));
          return (await stat(path.join(dir, 'back'))).size;
        },
      );
      await client.deleteWorkspace('bench', `f-${size}`);
    }
    for (const size of sizes) {
      const data = new Uint8Array(randomBytes(size));
      await measure(
        size,
        false,
        () => client.uploadWorkspace('bench', `w-${size}`, data, { encoding: 'identity' }),
        async () => (await client.downloadWorkspace('bench', `w-${size}`))?.byteLength ?? -1,
      );
      await client.deleteWorkspace('bench', `w-${size}`);
    }
  } finally {
    await api.close();
    await rm(dir, { recursive: true, force: true });
  }
  return rows;
}

export function transferTable(rows: TransferRow[]): string {
  const mbps = (bytes: number, ms: number) => ((bytes / MB / ms) * 1000).toFixed(0);
  return [
    '| workspace | upload ms | MB/s | download ms | MB/s | requests to the function | bytes through the function | peak RSS (one process: client, API, s3rver and its front) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.size >= 1024 * MB ? `${r.size / 1024 / MB} GB` : `${r.size / MB} MB`}${r.file ? ', file to file' : ''} | ${r.uploadMs.toFixed(0)} | ${mbps(r.size, r.uploadMs)} | ${r.downloadMs.toFixed(0)} | ${mbps(r.size, r.downloadMs)} | ${r.functionRequests} | ${r.functionBytes.toLocaleString('en')} | ${r.peakRssMb.toFixed(0)} MB |`,
    ),
  ].join('\n');
}

/**
 * A realistic agent transcript: a coding agent's session over this repository. User turns and
 * assistant turns are sentences of the README; tool calls read real source files, run commands and
 * return their output (the files' lines, test logs with timings, ids and hashes), as a JSON array
 * (what a list archive or a workspace dump holds). Deterministic for a given seed.
 */
export function agentTranscript(turns: number, seed = 7): Uint8Array {
  let state = seed;
  const rand = (n: number) => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return state % n;
  };
  const sources = readdirSync('lib', { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts'))
    .sort()
    .map((f) => ({ file: `lib/${f}`, lines: readFileSync(path.join('lib', f), 'utf8').split('\n') }));
  const sentences = readFileSync('README.md', 'utf8')
    .split(/(?<=[.?!])\s+/)
    .filter((x) => x.length > 20 && x.length < 400);
  const pick = <T>(list: readonly T[]) => list[rand(list.length)] as T;
  const hex = (n: number) => Array.from({ length: n }, () => rand(16).toString(16)).join('');
  const items: unknown[] = [];
  for (let i = 0; i < turns; i++) {
    const source = pick(sources);
    const from = rand(Math.max(1, source.lines.length - 40));
    const id = `call_${hex(24)}`;
    items.push({
      role: 'user',
      content: pick(sentences),
      ts: 1_790_000_000_000 + i * (3_000 + rand(60_000)),
    });
    items.push({
      role: 'assistant',
      content: `${pick(sentences)} ${pick(sentences)}`,
      toolCalls: [
        rand(2)
          ? { id, name: 'read_file', arguments: { path: source.file, from, to: from + 40 } }
          : {
              id,
              name: 'bash',
              arguments: { command: `npx vitest run test/${pick(['store', 'http', 'drivers', 'lock'])}` },
            },
      ],
    });
    items.push({
      role: 'tool',
      toolCallId: id,
      content: rand(2)
        ? source.lines.slice(from, from + 10 + rand(30)).join('\n')
        : Array.from(
            { length: 3 + rand(12) },
            () => ` ✓ ${pick(sources).file} > ${pick(sentences).slice(0, 60)} ${rand(900)}ms [${hex(8)}]`,
          ).join('\n'),
      usage: { inputTokens: 1_000 + rand(90_000), outputTokens: rand(4_000) },
    });
  }
  return new Uint8Array(Buffer.from(JSON.stringify(items)));
}

export function compressionTable(data: Uint8Array): string {
  const lines = [
    '| encoding | bytes | ratio | encode ms |',
    '|---|---:|---:|---:|',
    `| identity | ${data.byteLength.toLocaleString('en')} | 1.00 | 0 |`,
  ];
  for (const encoding of ['gzip', 'br'] as const) {
    const t0 = performance.now();
    const out = encodeBody(data, encoding);
    const ms = performance.now() - t0;
    lines.push(
      `| ${encoding} | ${out.byteLength.toLocaleString('en')} | ${(data.byteLength / out.byteLength).toFixed(2)} | ${ms.toFixed(0)} |`,
    );
  }
  return lines.join('\n');
}

/** The tree of the CI smoke (test/bench-smoke.test.ts); `npm run bench` uses 1 GiB. */
export const SNAPSHOT_SMOKE_BYTES = 64 * MB;

/** One budget row of the workspace snapshots (docs/workspaces.md, "Workspace snapshots"). */
export interface SnapshotBudgetRow {
  readonly figure: string;
  readonly value: number;
  readonly ceiling: number;
  readonly unit: 'bytes' | 'requests' | 'calls' | 'ms' | 'MB/s';
  /** What the ceiling is, in words. */
  readonly rule: string;
  /** The ceiling is a floor: the figure must be at least that. */
  readonly atLeast?: true;
}

/** Whether a row is within its bound. */
export function withinBound(r: SnapshotBudgetRow): boolean {
  return r.atLeast ? r.value >= r.ceiling : r.value <= r.ceiling;
}

/**
 * Content-defined cuts and the SHA-256 of every chunk, on the main thread alone (one core), over
 * `bytes` of incompressible data: MB/s.
 */
function chunkingThroughput(bytes: number): number {
  const data = noiseBytes(bytes, 7);
  chunkBoundaries(data.subarray(0, 4 * MB)); // compiled before it is timed
  const t = performance.now();
  for (const [at, length] of chunkBoundaries(data)) chunkHash(data.subarray(at, at + length));
  return bytes / 1e6 / ((performance.now() - t) / 1000);
}

/** Deterministic incompressible bytes (xorshift32). */
function noiseBytes(n: number, seed: number): Buffer {
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

/** Deterministic text (words of a small vocabulary, lines of source-like length). */
function textBytes(n: number, seed: number): Buffer {
  const words = [
    'const',
    'return',
    'await',
    'session',
    'state',
    'export',
    'function',
    'value',
    'list',
    '{',
    '}',
  ];
  let x = seed >>> 0 || 1;
  const parts: string[] = [];
  let size = 0;
  while (size < n) {
    x = (Math.imul(x, 1_103_515_245) + 12_345) >>> 0;
    const w = `${words[x % words.length]}${x % 7 === 0 ? '\n' : ' '}`;
    parts.push(w);
    size += w.length;
  }
  return Buffer.from(parts.join('').slice(0, n));
}

/**
 * The issue's tree scaled to `total` bytes (1 GiB: 5,000 text files of 1–64 KiB, 20 binaries of
 * 10–60 MiB): text files ~16 % of the bytes, at least two binaries.
 */
async function writeTree(dir: string, total: number): Promise<{ text: string[]; binaries: string[] }> {
  const scale = total / (1024 * MB);
  const textCount = Math.max(20, Math.round(5000 * scale));
  const text: string[] = [];
  let textBytesTotal = 0;
  for (let i = 0; i < textCount; i++) {
    const size = 1024 + ((i * 7919) % (63 * 1024));
    const name = `src/d${i % 20}/f${i}.txt`;
    await mkdir(path.join(dir, path.dirname(name)), { recursive: true });
    await writeFile(path.join(dir, name), textBytes(size, i + 1));
    text.push(name);
    textBytesTotal += size;
  }
  const binCount = Math.max(2, Math.round(20 * scale));
  const each = Math.floor((total - textBytesTotal) / binCount);
  const binaries: string[] = [];
  await mkdir(path.join(dir, 'bin'), { recursive: true });
  for (let i = 0; i < binCount; i++) {
    const name = `bin/b${i}.dat`;
    await writeFile(path.join(dir, name), noiseBytes(each, 1000 + i));
    binaries.push(name);
  }
  return { text, binaries };
}

/** Changes ~1 % of the tree: in-place edits of ~200 KiB in the binaries, text files edited, added, deleted. */
async function changeTree(
  dir: string,
  tree: { text: string[]; binaries: string[] },
  total: number,
  round: number,
): Promise<void> {
  const scale = total / (1024 * MB);
  const edits = Math.max(1, Math.round(50 * scale));
  for (let i = 0; i < edits; i++) {
    const file = tree.binaries[(i + round) % tree.binaries.length] as string;
    const handle = await open(path.join(dir, file), 'r+');
    const size = (await handle.stat()).size;
    const at = ((i * 2_654_435_761 + round * 97_531) >>> 0) % Math.max(1, size - 200 * 1024);
    await handle.write(noiseBytes(200 * 1024, 50_000 + round * 1000 + i), 0, 200 * 1024, at);
    await handle.close();
  }
  for (let i = 0; i < Math.max(1, Math.round(100 * scale)); i++) {
    const file = tree.text[(i * 31 + round * 7) % tree.text.length] as string;
    await writeFile(path.join(dir, file), textBytes(2048 + i, 90_000 + round * 1000 + i), { flag: 'a' });
  }
  for (let i = 0; i < Math.max(1, Math.round(20 * scale)); i++) {
    const name = `src/new/r${round}-${i}.txt`;
    await mkdir(path.join(dir, 'src/new'), { recursive: true });
    await writeFile(path.join(dir, name), textBytes(4096, 70_000 + round * 1000 + i));
    tree.text.push(name);
  }
  for (let i = 0; i < Math.max(1, Math.round(10 * scale)); i++) {
    const [gone] = tree.text.splice((i * 13 + round) % tree.text.length, 1);
    if (gone) await rm(path.join(dir, gone), { force: true });
  }
}

/**
 * The workspace snapshot budgets at `total` bytes, beside `uploadWorkspaceFile` of a tar of the
 * same tree, through the API on one driver: every request of the client is counted (API calls and
 * the presigned transfers), stored bytes are listed. The sweep runs with a clock moved past its
 * age rule and grace (`deleteTaggedAfterMs`: no lifecycle rules on the local servers).
 */
export async function runSnapshotBench(
  driver: ObjectStoreDriver,
  total: number,
): Promise<SnapshotBudgetRow[]> {
  let offset = 0; // moved past the sweep's age rule and grace at the end
  const now = () => Date.now() + offset;
  const api = await startWorkspaceApi(driver, { now });
  const store = createStateStore({ driver, prefix: api.prefix, now }).forUser('bench');
  if (!hasWorkspacePackSweep(store)) throw new Error('the store has no sweep');
  const traffic = { requests: 0, calls: 0, sent: 0, received: 0, packGets: 0 };
  const reset = () => Object.assign(traffic, { requests: 0, calls: 0, sent: 0, received: 0, packGets: 0 });
  const client = createHttpClient({
    baseUrl: api.baseUrl,
    token: () => hsToken({ sub: 'bench' }),
    bodyLimitBytes: BODY_LIMIT,
    fetch: async (input, init) => {
      const url = String(input);
      traffic.requests++;
      if (url.startsWith(api.baseUrl) && url.includes('/v1/')) traffic.calls++;
      else {
        const body = init?.body;
        if (body instanceof Uint8Array) traffic.sent += body.byteLength;
        else if (typeof body === 'string') traffic.sent += Buffer.byteLength(body);
        if (/\/p\/[0-9a-f]{64}/.test(decodeURIComponent(url)))
          traffic.packGets += init?.method === 'PUT' ? 0 : 1;
      }
      const response = await fetch(input, init);
      const length = Number(response.headers.get('content-length') ?? 0);
      if (!url.startsWith(api.baseUrl) || !url.includes('/v1/')) traffic.received += length;
      return response;
    },
  });
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-snap-'));
  const src = path.join(dir, 'tree');
  const s = 'bench-snapshots';
  const rows: SnapshotBudgetRow[] = [];
  const row = (r: SnapshotBudgetRow) => rows.push(r);
  const stored = async () =>
    (await listAllKeys(driver, `${api.prefix}bench/${s}/`))
      .filter((o) => o.key.includes('~wss~'))
      .reduce((n, o) => n + o.size, 0);
  try {
    row({
      figure: 'chunking + hashing, one core',
      value: chunkingThroughput(Math.min(128 * MB, total / 8)),
      ceiling: 150,
      unit: 'MB/s',
      rule: '≥ 150 MB/s (cuts and SHA-256 of random data on the main thread)',
      atLeast: true,
    });
    const tree = await writeTree(src, total);
    // Today: a tar of the tree, uploaded with uploadWorkspaceFile.
    const tarFile = path.join(dir, 'tree.tar');
    execFileSync('tar', ['-cf', tarFile, '-C', src, '.']);
    const t0 = performance.now();
    await client.uploadWorkspaceFile(s, 'tar', tarFile, { encoding: 'identity' });
    const tarMs = performance.now() - t0;
    const treeBytes = (await stat(tarFile)).size;

    reset();
    const t1 = performance.now();
    const first = await client.workspaces.push(s, 'w', src);
    const firstMs = performance.now() - t1;
    const firstStored = await stored();
    const packBytes = firstStored; // the tree compressed chunk by chunk, in packs (manifest included)
    row({
      figure: 'first push: bytes sent',
      value: traffic.sent,
      ceiling: 1.05 * packBytes,
      unit: 'bytes',
      rule: '≤ 1.05 × the tree compressed chunk by chunk',
    });
    row({
      figure: 'first push: requests',
      value: traffic.requests,
      ceiling: Math.ceil(traffic.sent / (16 * MB)) * 1.2 + 10,
      unit: 'requests',
      rule: '≤ ⌈bytes / 16 MiB⌉ × 1.2 + 10',
    });
    row({
      figure: 'first push: time',
      value: firstMs,
      ceiling: 1.5 * tarMs,
      unit: 'ms',
      rule: `≤ 1.5 × the tar upload (${tarMs.toFixed(0)} ms)`,
    });

    await changeTree(src, tree, total, 1);
    reset();
    const t2 = performance.now();
    const second = await client.workspaces.push(s, 'w', src);
    const secondMs = performance.now() - t2;
    row({
      figure: 'second push (1 % changed): bytes sent',
      value: traffic.sent,
      ceiling: 0.03 * treeBytes,
      unit: 'bytes',
      rule: '≤ 3 % of the tree',
    });
    row({
      figure: 'second push: requests',
      value: traffic.requests,
      ceiling: 12,
      unit: 'requests',
      rule: '≤ 12',
    });
    row({
      figure: 'second push: calls to the functions',
      value: traffic.calls,
      ceiling: 3,
      unit: 'calls',
      rule: '≤ 3',
    });
    row({
      figure: 'second push: time',
      value: secondMs,
      ceiling: 0.15 * firstMs,
      unit: 'ms',
      rule: '≤ 15 % of the first push',
    });

    const manifest = await client.workspaces.manifest(s, 'w', second.snapshotId);
    const largest = manifest?.entries.filter((e) => e.type === 'file').sort((a, b) => b.size - a.size)[0];
    const chunkBytes = (largest?.chunks ?? []).reduce((n, c) => n + c.length, 0);
    reset();
    await client.workspaces.readFile(s, 'w', second.snapshotId, largest?.path as string);
    row({
      figure: `read one file (${((largest?.size ?? 0) / MB).toFixed(0)} MiB): bytes downloaded`,
      value: traffic.received,
      ceiling: chunkBytes + MB,
      unit: 'bytes',
      rule: '≤ its chunks + 1 MiB',
    });
    reset();
    await client.workspaces.diff(s, 'w', first.snapshotId, second.snapshotId);
    row({
      figure: 'diff of the two snapshots: pack GETs',
      value: traffic.packGets,
      ceiling: 0,
      unit: 'requests',
      rule: '0 pack bytes downloaded',
    });

    for (let round = 2; round <= 10; round++) {
      await changeTree(src, tree, total, round);
      await client.workspaces.push(s, 'w', src);
    }
    const after10 = await stored();
    row({
      figure: 'stored after 10 successive snapshots',
      value: after10,
      ceiling: 1.15 * (firstStored + 10 * 0.01 * treeBytes),
      unit: 'bytes',
      rule: '≤ 1.15 × (first + 10 × 1 % of the tree)',
    });

    const all = await client.workspaces.list(s, 'w');
    for (const old of all.slice(1)) await client.workspaces.delete(s, 'w', old.snapshotId);
    await store.sweepWorkspacePacks({ sessionId: s });
    await client.workspaces.gc(s, 'w');
    offset += 2 * 3_600_000;
    await store.sweepWorkspacePacks({ sessionId: s });
    await store.sweepWorkspacePacks({ sessionId: s });
    offset += 8 * 86_400_000;
    await store.sweepWorkspacePacks({ sessionId: s, deleteTaggedAfterMs: 7 * 86_400_000 });
    const last = await client.workspaces.manifest(s, 'w', 'latest');
    const liveChunks = new Map<string, number>();
    for (const e of last?.entries ?? [])
      for (const c of e.chunks ?? []) liveChunks.set(`${c.pack}:${c.offset}`, c.length);
    const live = [...liveChunks.values()].reduce((n, l) => n + l, 0);
    row({
      figure: 'stored after deleting all but the last, a sweep and gc',
      value: await stored(),
      ceiling: 1.45 * live,
      unit: 'bytes',
      rule: "≤ 1.45 × the last snapshot's live chunk bytes",
    });
  } finally {
    await api.close();
    await rm(dir, { recursive: true, force: true });
  }
  return rows;
}

async function listAllKeys(driver: ObjectStoreDriver, prefix: string) {
  const out: Array<{ key: string; size: number }> = [];
  let cursor: string | undefined;
  do {
    const page = await driver.list({ prefix, cursor });
    out.push(...page.objects);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/** The budget rows as a table, each with ✓ or ✗. */
export function snapshotTable(rows: readonly SnapshotBudgetRow[]): string {
  const fmt = (v: number, unit: SnapshotBudgetRow['unit']) =>
    unit === 'bytes'
      ? `${(v / MB).toFixed(2)} MiB`
      : unit === 'ms' || unit === 'MB/s'
        ? `${v.toFixed(0)} ${unit}`
        : String(Math.round(v * 10) / 10);
  return [
    '| figure | measured | ceiling | rule | |',
    '|---|---:|---:|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.figure} | ${fmt(r.value, r.unit)} | ${fmt(r.ceiling, r.unit)} | ${r.rule} | ${withinBound(r) ? '✓' : '✗'} |`,
    ),
  ].join('\n');
}
