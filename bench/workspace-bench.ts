/**
 * Workspace transfer: time and bytes to upload and download workspaces of 1 MB, 100 MB and 1 GB
 * through the API on s3rver (the bytes go straight to the store; the function only signs), and the
 * compression ratio of gzip and brotli on a realistic agent transcript.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { ObjectStoreDriver } from '../lib/drivers/types.js';
import { encodeBody } from '../lib/store/encoding.js';
import { startWorkspaceApi } from '../test/workspaces/api.js';

const MB = 1024 * 1024;

export interface TransferRow {
  size: number;
  uploadMs: number;
  downloadMs: number;
  functionRequests: number;
  functionBytes: number;
  peakRssMb: number;
}

/** Uploads and downloads one workspace per size (random bytes, stored as they are). */
export async function runTransferBench(driver: ObjectStoreDriver, sizes: number[]): Promise<TransferRow[]> {
  const api = await startWorkspaceApi(driver);
  const client = api.client('bench');
  const rows: TransferRow[] = [];
  try {
    for (const size of sizes) {
      const data = new Uint8Array(randomBytes(size));
      api.seen.length = 0;
      let peak = process.memoryUsage().rss;
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss);
      }, 50);
      const t0 = performance.now();
      await client.uploadWorkspace('bench', `w-${size}`, data, { encoding: 'identity' });
      const t1 = performance.now();
      const back = await client.downloadWorkspace('bench', `w-${size}`);
      const t2 = performance.now();
      clearInterval(sampler);
      if (back?.byteLength !== size) throw new Error(`download of ${size} bytes came back wrong`);
      rows.push({
        size,
        uploadMs: t1 - t0,
        downloadMs: t2 - t1,
        functionRequests: api.seen.length,
        functionBytes: api.seen.reduce((sum, s) => sum + s.requestBytes + s.answerBytes, 0),
        peakRssMb: peak / MB,
      });
      await client.deleteWorkspace('bench', `w-${size}`);
    }
  } finally {
    await api.close();
  }
  return rows;
}

export function transferTable(rows: TransferRow[]): string {
  const mbps = (bytes: number, ms: number) => ((bytes / MB / ms) * 1000).toFixed(0);
  return [
    '| workspace | upload ms | MB/s | download ms | MB/s | requests to the function | bytes through the function | peak RSS of the client process |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.size >= 1024 * MB ? `${r.size / 1024 / MB} GB` : `${r.size / MB} MB`} | ${r.uploadMs.toFixed(0)} | ${mbps(r.size, r.uploadMs)} | ${r.downloadMs.toFixed(0)} | ${mbps(r.size, r.downloadMs)} | ${r.functionRequests} | ${r.functionBytes.toLocaleString('en')} | ${r.peakRssMb.toFixed(0)} MB |`,
    ),
  ].join('\n');
}

/**
 * A realistic agent transcript: user turns, assistant turns with tool calls, tool results with
 * code, logs and file listings, as a JSON array (what a list archive or a workspace dump holds).
 */
export function agentTranscript(turns: number, seed = 7): Uint8Array {
  let state = seed;
  const rand = (n: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % n;
  };
  const words =
    'the a test file function error fix build module import value list session agent plan step run check result output return const async await type interface'.split(
      ' ',
    );
  const sentence = (n: number) => Array.from({ length: n }, () => words[rand(words.length)]).join(' ');
  const items: unknown[] = [];
  for (let i = 0; i < turns; i++) {
    items.push({ role: 'user', content: `${sentence(12 + rand(20))}?`, ts: 1_790_000_000_000 + i * 7_000 });
    const file = `src/${words[rand(words.length)]}/${words[rand(words.length)]}.ts`;
    items.push({
      role: 'assistant',
      content: sentence(30 + rand(60)),
      toolCalls: [
        { id: `call_${i}_${rand(1e6)}`, name: 'bash', arguments: { command: `npx vitest run ${file}` } },
      ],
    });
    items.push({
      role: 'tool',
      toolCallId: `call_${i}`,
      content: [
        ` RUN  v4.1.12 /work/project`,
        ...Array.from({ length: 3 + rand(8) }, (_, j) => ` ✓ ${file} > ${sentence(5)} ${rand(40)}ms (${j})`),
        `export async function ${words[rand(words.length)]}(${words[rand(words.length)]}: string): Promise<number> {`,
        `  return ${rand(1000)};`,
        '}',
        ` Test Files  1 passed (1)\n      Tests  ${rand(50)} passed`,
      ].join('\n'),
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
