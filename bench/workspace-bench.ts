/**
 * Workspace transfer: time and bytes to upload and download workspaces of 1 MB, 100 MB and 1 GB
 * through the API on s3rver (the bytes go straight to the store; the function only signs), and the
 * compression ratio of gzip and brotli on a realistic agent transcript.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ObjectStoreDriver } from '../lib/drivers/types.js';
import { encodeBody } from '../lib/util/encoding.js';
import { startWorkspaceApi } from '../test/workspaces/api.js';

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
