/**
 * `npm run bench`: starts s3rver behind the S3 front on 127.0.0.1, runs every benchmark, prints the
 * tables and writes bench/REPORT.md and its charts. `npm run bench -- --smoke` runs the smallest size.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createS3Driver } from '../lib/drivers/s3.js';
import { faultTable, runFaultScenario } from '../test/faults/scenario.js';
import { startLocalBackends } from '../test/servers/local-backends.js';
import { lineChart } from './chart.js';
import { bundleTable, runHttpBench } from './http-bench.js';
import { lockTable, runLockBench } from './lock-bench.js';
import { runStoreBench, storeTable } from './store-bench.js';
import { agentTranscript, compressionTable, runTransferBench, transferTable } from './workspace-bench.js';

const smoke = process.argv.includes('--smoke');
const sizes = smoke ? [10] : [10, 100, 1000, 10_000];
const here = path.dirname(new URL(import.meta.url).pathname).replace(/\/\.bench-build\/bench$/, '/bench');

const local = await startLocalBackends('bench');
const front = local.s3Front;
const dynamoPort = local.dynamoPort;
try {
  const makeDriver = () =>
    createS3Driver({
      bucket: 'bench',
      endpoint: front.endpoint,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
  const rows = await runStoreBench(makeDriver, sizes);
  const table = storeTable(rows);
  console.log('\nList operations, this store against the reference request pattern (s3 driver, s3rver):\n');
  console.log(table);
  const locks = lockTable(await runLockBench(`http://127.0.0.1:${dynamoPort}`, smoke ? 20 : 400));
  console.log('\nLock throughput (dynalite on loopback):\n');
  console.log(locks);
  const http = await runHttpBench(smoke ? 20 : 500);
  console.log('\nHTTP through the local server (memory driver):\n');
  console.log(http);
  const transfers = transferTable(
    await runTransferBench(
      makeDriver(),
      smoke ? [1024 * 1024] : [1, 100, 1024].map((mb) => mb * 1024 * 1024),
      smoke ? [] : [1024 * 1024 * 1024],
    ),
  );
  console.log(
    '\nWorkspace transfer (s3 driver, s3rver behind the S3 front; bytes go straight to the store):\n',
  );
  console.log(transfers);
  const transcript = agentTranscript(smoke ? 50 : 2000);
  const compression = compressionTable(transcript);
  console.log(`\nCompression of a ${smoke ? 50 : 2000}-turn agent transcript:\n`);
  console.log(compression);
  const upstream = { s3rverPort: local.s3rverPort, dynamoPort, bucket: 'bench' };
  const faults = faultTable([
    await runFaultScenario('s3', upstream, smoke ? 5 : 40),
    await runFaultScenario('oss', upstream, smoke ? 5 : 40),
  ]);
  console.log("\nFaults injected at random into every request of an agent's turns:\n");
  console.log(faults);
  const bundles = smoke ? '' : bundleTable();
  if (bundles) console.log(`\nFunction bundles (esbuild, target node20):\n\n${bundles}`);
  if (!smoke) {
    const amortized = rows.filter((r) => r.operation.startsWith('append 1, amortized'));
    const svg = lineChart(
      'Bytes uploaded per appended message',
      'items in the list (N)',
      'bytes per append',
      [
        { name: 'this store', color: '#1f77b4', points: amortized.map((r) => [r.n, r.ours.bytesUp]) },
        { name: 'reference', color: '#d62728', points: amortized.map((r) => [r.n, r.reference.bytesUp]) },
      ],
    );
    await writeFile(path.join(here, 'append-bytes.svg'), svg);
    const report = [
      '# Benchmark report',
      '',
      `Written by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)} (2 cores, loopback; times are noisy, requests and bytes are exact).`,
      '',
      '## List operations: requests and bytes against the reference pattern',
      '',
      'Items of about 1 KB; each list written once, then one unchanged save, one append, one full read, one compaction, and 64 single appends (folding amortized). The reference pattern is re-implemented in `bench/reference-store.ts` on the same driver and server.',
      '',
      table,
      '',
      '![bytes per append](append-bytes.svg)',
      '',
      '## Lock throughput (DynamoDB lock on dynalite)',
      '',
      locks,
      '',
      '## HTTP through the local server',
      '',
      http,
      '',
      '## Faults',
      '',
      "An agent's turns (lock, read, conditional append, save, release) while the fronts inject, at random, 500, 503, connection resets and answers lost after the write into the object store's requests, and throttling, 500 and resets into DynamoDB's (`test/faults/scenario.ts`). The SDKs and the drivers retry; the agent retries what is still reported retryable.",
      '',
      faults,
      '',
      '## Workspace transfer',
      '',
      'Random (incompressible) bytes uploaded with the typed client (8 MiB parts, 4 at a time, above 16 MiB) and downloaded again, through the API on s3rver behind the S3 front, which checks every Content-MD5 (and buffers each part: its memory is in the figure, all in one process). The function signs and checks; the bytes never pass through it. "File to file": `uploadWorkspaceFile` and `downloadWorkspaceToFile`, which hold a few parts at a time.',
      '',
      transfers,
      '',
      `## Compression of a realistic agent transcript (${transcript.byteLength.toLocaleString('en')} bytes of JSON, 2,000 turns)`,
      '',
      "A coding agent's session over this repository (`agentTranscript` in bench/workspace-bench.ts): README sentences as user and assistant turns, tool calls that read the real source files and run tests, their output with timings, ids and token counts.",
      '',
      compression,
      '',
      '## Function bundles and cold start',
      '',
      'Minified esbuild bundles; import time in a fresh node process, median of 5, against importing the tsc output unbundled; cold start is from the process start (node boot included) to the first answer of a health event, median of 5.',
      '',
      bundles,
      '',
    ].join('\n');
    // The full soak takes most of an hour, so `npm run soak` runs it apart; its last figures are kept here.
    const soak = await readFile(path.join(here, 'SOAK.md'), 'utf8').catch(() => '');
    const soakSection = soak
      ? `## Concurrency soak (\`npm run soak\`, bench/SOAK.md)\n\n${soak.replace(/^# .*\n\n/, '')}`
      : '';
    await writeFile(path.join(here, 'REPORT.md'), `${report}\n${soakSection}`);
    console.log('\nwrote bench/REPORT.md and bench/append-bytes.svg');
  }
} finally {
  await local.stop();
}
