/**
 * `npm run bench`: starts s3rver behind the S3 front on 127.0.0.1, runs every benchmark, prints the
 * tables and writes bench/REPORT.md and its charts. `npm run bench -- --smoke` runs the small sizes
 * (`SMOKE` in store-bench.ts, as CI's test/bench-smoke.test.ts does) and writes nothing; `-- --format <name>` runs ours with another list format.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createOssDriver } from '../lib/drivers/oss.js';
import { createS3Driver } from '../lib/drivers/s3.js';
import type { ListFormatName } from '../lib/store/store.js';
import { faultTable, runFaultScenario } from '../test/faults/scenario.js';
import { OSS_CREDENTIALS } from '../test/servers/global-setup.js';
import { startLocalBackends } from '../test/servers/local-backends.js';
import { startOssFront } from '../test/servers/oss-front.js';
import { lineChart } from './chart.js';
import { coldStartSection, coldStartTable, measureColdStarts } from './cold-start.js';
import { ENGINE_FULL, ENGINE_SMOKE, engineReport, runEngineBench } from './engine-bench.js';
import { frameworkTable, runFrameworkBench } from './framework-bench.js';
import { langgraphBench } from './frameworks/langgraph.js';
import { langgraphStoreBench } from './frameworks/langgraph-store.js';
import { openaiAgentsBench } from './frameworks/openai-agents.js';
import { strandsBench } from './frameworks/strands.js';
import { GROWTH_CASES, GROWTH_SMOKE, growthTable, runGrowthBench } from './growth-bench.js';
import { bundleTable, runHttpBench, sourceMapTable } from './http-bench.js';
import { lockTable, runLockBench } from './lock-bench.js';
import { readmeTables, runStoreBench, SMOKE, storeTable, turnTable } from './store-bench.js';
import {
  agentTranscript,
  compressionTable,
  runSnapshotBench,
  runTransferBench,
  SNAPSHOT_SMOKE_BYTES,
  snapshotTable,
  transferTable,
} from './workspace-bench.js';

const smoke = process.argv.includes('--smoke');
/** `--format <name>` (or `--format=<name>`): a list format for ours other than the driver's default. */
const formatArg =
  process.argv.find((a) => a.startsWith('--format='))?.slice('--format='.length) ??
  process.argv[process.argv.indexOf('--format') + 1];
const listFormat = process.argv.some((a) => a.startsWith('--format'))
  ? (formatArg as ListFormatName)
  : undefined;
const here = path.dirname(new URL(import.meta.url).pathname).replace(/\/\.bench-build\/bench$/, '/bench');

const local = await startLocalBackends('bench');
const front = local.s3Front;
const dynamoPort = local.dynamoPort;
const ossFront = await startOssFront(front.port, OSS_CREDENTIALS);
try {
  const makeDriver = () =>
    createS3Driver({
      bucket: 'bench',
      endpoint: front.endpoint,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
  const storeStarted = performance.now();
  const result = await runStoreBench({
    s3Port: front.port,
    dynamoPort,
    bucket: 'bench',
    ...(smoke ? SMOKE : { sizes: [20, 200, 2000, 20_000] }),
    ...(listFormat ? { listFormat } : {}),
    log: (line) => console.log(`  ${line}`),
  });
  const storeSeconds = (performance.now() - storeStarted) / 1000;
  const table = storeTable(result);
  const turns = turnTable(result);
  const readme = readmeTables(result);
  console.log(
    `\nThe budget rows, this store against the reference pattern (s3 driver, S3 front over s3rver, counted by a proxy; ${storeSeconds.toFixed(0)} s):\n`,
  );
  console.log(table);
  console.log(`\nThe locked agent turn, mean over ${result.turns[0]?.turns ?? 0} turns:\n`);
  console.log(turns);
  console.log('\nFor the README (requests per operation, cost per million turns as measured):\n');
  console.log(readme);
  // The same rows for the append list format: the oss driver on the OSS front (over the S3 front).
  const ossStarted = performance.now();
  const oss = await runStoreBench({
    s3Port: front.port,
    oss: { port: ossFront.port, ...OSS_CREDENTIALS },
    dynamoPort,
    bucket: 'bench',
    ...(smoke ? SMOKE : { sizes: [20, 200, 2000, 20_000] }),
    log: (line) => console.log(`  oss: ${line}`),
  });
  const ossSeconds = (performance.now() - ossStarted) / 1000;
  const ossTable = storeTable(oss);
  const ossTurns = turnTable(oss);
  console.log(
    `\nThe budget rows on OSS, this store (${oss.format} lists) against the reference pattern (oss driver, OSS front over the S3 front, counted by a proxy; ${ossSeconds.toFixed(0)} s):\n`,
  );
  console.log(ossTable);
  console.log(
    `\nThe locked agent turn on OSS, mean over ${oss.turns[0]?.turns ?? 0} turns (¥ = CNY, OSS China (Hangzhou) list price ¥0.01 per 10,000 requests, PUT-class and GET alike):\n`,
  );
  console.log(ossTurns);
  // Bytes written while a list grows (no merge cascade): CAS on the S3 front, the append format on OSS.
  const growthCases = smoke ? GROWTH_SMOKE : GROWTH_CASES;
  const growthRun = `growth-${Date.now()}`;
  const growth = growthTable([
    ...(await runGrowthBench(makeDriver(), `${growthRun}/cas/`, growthCases)),
    ...(await runGrowthBench(
      createOssDriver({ bucket: 'bench', endpoint: ossFront.endpoint, ...OSS_CREDENTIALS }),
      `${growthRun}/append/`,
      growthCases,
    )),
  ]);
  console.log('\nBytes written while a list grows by appends (segments or logs over L, the list):\n');
  console.log(growth);
  // The Redis and MySQL engines beside the seed's patterns, on servers of their own.
  const enginesStarted = performance.now();
  const engines = engineReport(
    await runEngineBench({
      ...(smoke ? ENGINE_SMOKE : ENGINE_FULL),
      log: (line) => console.log(`  engines: ${line}`),
    }),
  );
  const engineSeconds = (performance.now() - enginesStarted) / 1000;
  console.log(`\nRedis and MySQL engines against the seed's patterns (${engineSeconds.toFixed(0)} s):\n`);
  console.log(engines);
  const locks = lockTable(await runLockBench(`http://127.0.0.1:${dynamoPort}`, smoke ? 20 : 400));
  console.log('\nLock throughput (dynalite on loopback):\n');
  console.log(locks);
  const http = await runHttpBench(smoke ? 20 : 500);
  console.log('\nHTTP through the local server (memory driver):\n');
  console.log(http);
  const frameworkRepeat = smoke ? 3 : 20;
  const frameworks = frameworkTable(
    await runFrameworkBench({
      s3Port: front.port,
      bucket: 'bench',
      benches: [langgraphBench, langgraphStoreBench, openaiAgentsBench, strandsBench],
      repeat: frameworkRepeat,
    }),
  );
  console.log(
    `\nFramework adapters through the typed client and the HTTP API (s3 driver, S3 front over s3rver, counted by a proxy; means over ${frameworkRepeat} calls):\n`,
  );
  console.log(frameworks);
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
  const snapshotBytes = smoke ? SNAPSHOT_SMOKE_BYTES : 1024 * 1024 * 1024;
  const snapshots = snapshotTable(await runSnapshotBench(makeDriver(), snapshotBytes));
  console.log(`\nWorkspace snapshots (${snapshotBytes / 1024 / 1024} MiB tree, s3 driver on s3rver):\n`);
  console.log(snapshots);
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
  const sourceMaps = smoke ? '' : sourceMapTable();
  if (sourceMaps)
    console.log(`\nSource maps (--enable-source-maps) on cold start and warm p50:\n\n${sourceMaps}`);
  const previousReport = await readFile(path.join(here, 'REPORT.md'), 'utf8').catch(() => '');
  const coldStarts = smoke ? '' : coldStartTable(measureColdStarts(), previousReport);
  if (coldStarts) console.log(`\nPackaged cold start, beside the previous run's:\n\n${coldStarts}`);
  if (!smoke) {
    const perTurn = (pattern: 'ours' | 'reference') =>
      result.turns
        .filter((t) => t.pattern === pattern)
        .map((t): [number, number] => [t.n, t.mean.bytesUp + t.mean.bytesDown]);
    await writeFile(
      path.join(here, 'turn-bytes.svg'),
      lineChart('Bytes per locked agent turn (up + down)', 'items in the history (N)', 'bytes per turn', [
        { name: 'this store', color: '#1f77b4', points: perTurn('ours') },
        { name: 'reference', color: '#d62728', points: perTurn('reference') },
      ]),
    );
    const appended = result.rows.filter((r) => r.id === 'append-mean');
    await writeFile(
      path.join(here, 'append-bytes.svg'),
      lineChart(
        'Bytes uploaded per appended 1 KB message (mean)',
        'items in the list (N)',
        'bytes per append',
        [
          {
            name: 'this store',
            color: '#1f77b4',
            points: appended.map((r) => [r.n, r.ours.traffic.bytesUp]),
          },
          {
            name: 'reference',
            color: '#d62728',
            points: appended.map((r) => [r.n, r.reference?.traffic.bytesUp ?? 0]),
          },
        ],
      ),
    );
    const report = [
      '# Benchmark report',
      '',
      `Written by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)} (2 cores, loopback; times are noisy, requests and bytes are exact).`,
      '',
      '## Lists: the budget rows against the reference pattern',
      '',
      `Through a counting proxy on the local S3 server: the s3 driver against the S3 front over s3rver, as in production but on loopback, with a node:http proxy on 127.0.0.1 in front of the S3 front and another in front of dynalite (\`bench/counting-proxy.ts\`). The proxy classifies every request on the wire, SDK retries included: GET and HEAD of an object are GET-class; PUT, COPY, POST and LIST (a GET of the bucket, \`list-type\`, \`?uploads\`) are PUT-class; DELETE is free and counted apart; bytes are request and answer bodies. Round trips are counted at the driver (\`roundTrips\` in test/store/wrappers.ts). Ours: \`createStateStore\` with the ${result.format} list format; the reference: its OSS store's request pattern re-implemented in \`bench/reference-store.ts\` on the same driver and server (reads are HEAD + GET of the whole list; a list save GETs the hash and the whole list, PUTs the whole list and the hash; a value is one PUT). Items of about 1 KB; each history length N on fresh sessions, the list written once by saveList. A page row gives each count (requests, round trips, bytes) at its most over 16 random offsets (seeded), and the plain and sealing append rows at their most over those calls; a plain call writes one PUT and deletes nothing, the others seal, merge or delete retired segments. Appends: every call measured, over N appends at N ≤ 2,000 and 1,000 at 20,000; the reference's append is a save of the grown list, the same requests on every call, measured over 20 (its bytes grow by 1 KB a call). ✓ / ✗: the issue's ceiling for ours holds / does not. Store section: ${storeSeconds.toFixed(0)} s.`,
      '',
      table,
      '',
      '## The locked agent turn',
      '',
      `Acquire the DynamoDB lock (dynalite), get \`agent_state\` (about 2 KB), getList \`last: 50\`, append 2 messages (ours: appendList at the count read, with the token; the reference: a save of the whole list grown by 2), save \`agent_state\` (ours with the lease's fencing token), release; mean over ${result.turns[0]?.turns ?? 0} turns at each history length, on a session of its own. As six calls on the store and the lock; as begin + commit through the typed client and the HTTP API served in-process over the same store and lock (\`beginTurn\`, then \`commit\` with release; its HTTP calls counted at the client's fetch). $ per million turns at S3 list prices (PUT/COPY/POST/LIST $0.005 per 1,000, GET/HEAD $0.0004 per 1,000; DELETE free); DynamoDB requests counted apart and priced apart at on-demand $0.625 per million writes and $0.125 per million reads, not in the S3 $; the whole stack adds $1.87 per million HTTP calls (API Gateway and Lambda). The issue measured the reference at $17.4 and the slot store at $35.4.`,
      '',
      turns,
      '',
      '## Lists on OSS: the append format',
      '',
      `The same rows and turn for the ${oss.format} list format: the oss driver (\`createOssDriver\`) against the OSS front (test/servers/oss-front.ts, over the S3 front and s3rver), with the counting proxy in front of the OSS front. The proxy classifies as OSS bills: \`POST ?append\` and every other PUT or POST are PUT-class (writes); GET and HEAD of an object are GET-class; a GET of the bucket (a listing) is LIST, also PUT-class; DELETE is counted apart. The reference is the same pattern on the same driver. Prices are in CNY (¥): OSS China (Hangzhou) list prices, ¥0.01 per 10,000 requests, PUT-class and GET alike; DynamoDB still in $. ✓ / ✗: the issue's ceilings for the append format (getList \`last: 50\` ≤ 3 GET, ≤ 2 trips; an append ≤ 4 requests, exactly 1 write, ≤ 3 trips; saveList unchanged ≤ 3 GET, 0 writes; the turn ≤ 2.05 writes; LIST 0 in every row), and the ones the tests hold where the issue's append column has no row: a rollover (the full log sealed, its successor created, the pointer written; once per ~850 appends of 1 KB) ≤ 7 requests, ≤ 3 writes, ≤ 6 trips; the mean append ≤ 1.01 writes and ≤ 4 KiB written (the issue's bytes row). Store section on OSS: ${ossSeconds.toFixed(0)} s.`,
      '',
      ossTable,
      '',
      ossTurns,
      '',
      '![bytes per turn against history length](turn-bytes.svg)',
      '',
      '![bytes per append](append-bytes.svg)',
      '',
      '## Lists: bytes written while a list grows',
      '',
      'A list built by appends of 1, 50 or 1,000 items of 1 KB (the last case then takes 200 single appends, which once folded every older segment into the newest: 11.4 L), on fresh sessions: the bytes written into its segments (CAS, the s3 driver on the S3 front) or its logs and sealed segments (the append format, the oss driver on the OSS front), over the bytes of the list itself (L), counted at the driver by object name; and the largest head write (CAS). ✓ / ✗: the ceiling holds / does not.',
      '',
      growth,
      '',
      '### For the README',
      '',
      readme,
      '',
      "## Redis and MySQL engines: the budgets against the seed's patterns",
      '',
      `${engines}\n\nEngine section: ${engineSeconds.toFixed(0)} s.`,
      '',
      '## Lock throughput (DynamoDB lock on dynalite)',
      '',
      locks,
      '',
      '## HTTP through the local server',
      '',
      http,
      '',
      '## Framework adapters',
      '',
      `Each framework adapter (\`agent-state-store/langgraph\`, \`/openai-agents\`, \`/strands\`) on the typed client, against the HTTP API served in-process over the s3 driver (S3 front over s3rver, a counting proxy in front; the memory lock): a steady state prepared first (\`bench/frameworks/\`), then each operation called ${frameworkRepeat} times. HTTP calls are counted at the client's fetch, S3 requests at the proxy; means per call. $ per million calls: S3 at list prices plus $1.87 per HTTP call per million (API Gateway and Lambda, as the turn's).`,
      '',
      frameworks,
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
      `## Workspace snapshots: the budget rows (${snapshotBytes / 1024 / 1024} MiB tree)`,
      '',
      "A generated tree (text files of 1–64 KiB, ~16 % of the bytes, and binaries), then 1 % of it changed per push (in-place edits of 200 KiB in the binaries, text files edited, added, deleted), pushed with `client.workspaces.push` beside `uploadWorkspaceFile` of a tar of the same tree, through the API on s3rver behind the S3 front; every request of the client counted (`runSnapshotBench` in bench/workspace-bench.ts). The sweep runs with the store's clock moved past its age rule and grace. The chunking rate is the cut search and SHA-256 of random data on the main thread alone.",
      '',
      snapshots,
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
      '## Source maps: cold start and p50',
      '',
      'Each function bundle ships its source map (`<bundle>.map`, mappings only) and runs with `NODE_OPTIONS=--enable-source-maps`, so logged stack traces name the files under lib/. Cold start is from the process start to the first answer of a health event; p50 is over 200 more health events in the same process; medians of 5 processes, with source maps off and enabled.',
      '',
      sourceMaps,
      '',
      coldStartSection(coldStarts),
      '',
    ].join('\n');
    // The full soak takes most of an hour, so `npm run soak` runs it apart; its last figures are kept here.
    const soak = await readFile(path.join(here, 'SOAK.md'), 'utf8').catch(() => '');
    const soakSection = soak
      ? `## Concurrency soak (\`npm run soak\`, bench/SOAK.md)\n\n${soak.replace(/^# .*\n\n/, '')}`
      : '';
    await writeFile(path.join(here, 'REPORT.md'), `${report}\n${soakSection}`);
    console.log('\nwrote bench/REPORT.md, bench/turn-bytes.svg and bench/append-bytes.svg');
  }
} finally {
  await ossFront.stop();
  await local.stop();
}
