/**
 * `npm run bench`'s store section at small history lengths (`SMOKE`: 20 and 200; the turn at 200), as CI's
 * smoke test: the s3 driver against the S3 front over s3rver, counted by the benchmark's proxy. It
 * asserts the issue's budget ceilings that apply at small N (docs/DESIGN.md, "Lists") and that ours
 * beats the reference pattern where the design says it must.
 */
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { classify } from '../bench/counting-proxy.js';
import { GROWTH_SMOKE, growthTable, runGrowthBench } from '../bench/growth-bench.js';
import {
  type BudgetRow,
  KEEP_ALIVE_CEILINGS,
  type RowId,
  readmeTables,
  runStoreBench,
  SMOKE,
  type StoreBenchResult,
  stackDollars,
  storeTable,
  TURN_API_CEILINGS,
  TURN_CEILINGS,
  turnTable,
} from '../bench/store-bench.js';
import {
  runSnapshotBench,
  SNAPSHOT_SMOKE_BYTES,
  snapshotTable,
  withinBound,
} from '../bench/workspace-bench.js';
import { createOssDriver } from '../lib/drivers/oss.js';
import { createS3Driver } from '../lib/drivers/s3.js';
import { OSS_CREDENTIALS } from './servers/global-setup.js';

const KIB = 1024;
const MIB = 1024 * KIB;
const port = (endpoint: string) => Number(new URL(endpoint).port);

describe('the counting proxy', () => {
  it('classifies S3 and OSS requests as they bill them, and DynamoDB requests by operation', () => {
    expect(classify('GET', '/b/k.json', {})).toBe('get');
    expect(classify('HEAD', '/b/k.json', {})).toBe('get');
    expect(classify('PUT', '/b/k.json', {})).toBe('put');
    expect(classify('PUT', '/b/k.json', { 'x-amz-copy-source': '/b/j' })).toBe('put');
    expect(classify('POST', '/b?delete', {})).toBe('put');
    expect(classify('GET', '/b?list-type=2&prefix=p', {})).toBe('list');
    expect(classify('GET', '/b/?prefix=p', {})).toBe('list');
    expect(classify('GET', '/b?uploads', {})).toBe('list');
    expect(classify('DELETE', '/b/k.json', {})).toBe('delete');
    // OSS (path-style, as the oss driver addresses a local endpoint): AppendObject is a write.
    expect(classify('POST', '/b/k.log?append&position=0', {})).toBe('put');
    expect(classify('GET', '/b/k.log', {})).toBe('get');
    expect(classify('HEAD', '/b/k.log', {})).toBe('get');
    expect(classify('GET', '/b/?prefix=p&max-keys=1000', {})).toBe('list');
    expect(classify('GET', '/b?list-type=2&prefix=p', {})).toBe('list');
    expect(classify('POST', '/', { 'x-amz-target': 'DynamoDB_20120810.UpdateItem' })).toBe('ddb-write');
    expect(classify('POST', '/', { 'x-amz-target': 'DynamoDB_20120810.GetItem' })).toBe('ddb-read');
  });
});

describe('store benchmark (smoke: history lengths 20 and 200, through the counting proxy on s3rver)', () => {
  let result: StoreBenchResult;
  const row = (n: number, id: RowId) => {
    const found = result.rows.find((r) => r.n === n && r.id === id);
    if (!found) throw new Error(`no row ${id} at ${n}`);
    return found;
  };
  const ref = (r: BudgetRow) => {
    if (!r.reference) throw new Error(`no reference in ${r.id}`);
    return r.reference.traffic;
  };

  beforeAll(async () => {
    const servers = inject('servers');
    result = await runStoreBench({
      s3Port: port(servers.s3),
      dynamoPort: port(servers.dynamodb),
      bucket: servers.bucket,
      ...SMOKE,
    });
  });

  it('measures every row and prints the tables', () => {
    expect(result.format).toBe('cas');
    expect(storeTable(result).split('\n')).toHaveLength(2 + result.rows.length);
    expect(turnTable(result).split('\n')).toHaveLength(2 + 5);
    expect(readmeTables(result)).toContain('| 200 |');
    for (const n of [20, 200])
      for (const id of [
        'last50',
        'whole',
        'page',
        'append-plain',
        'append-mean',
        'save-unchanged',
        'save-grown',
        'value-save',
      ] as const)
        expect(row(n, id).ours.traffic.requests, `${id} at ${n}`).toBeGreaterThan(0);
  });

  it('holds the ceilings that apply at small N, with no LIST in any row', () => {
    for (const n of [20, 200]) {
      const last = row(n, 'last50');
      expect(last.ours.traffic).toMatchObject({ getClass: 2, putClass: 0, list: 0 });
      expect(last.ours.trips).toBe(1);
      const whole = row(n, 'whole');
      expect(whole.ours.traffic.getClass).toBeLessThanOrEqual(5 + Math.ceil(whole.listBytes / (4 * MIB)));
      expect(whole.ours.trips).toBeLessThanOrEqual(2);
      expect(whole.ours.traffic.bytesDown).toBeLessThanOrEqual(1.1 * whole.listBytes + 128 * KIB);
      const page = row(n, 'page');
      expect(page.ours.traffic.getClass).toBeLessThanOrEqual(4);
      expect(page.ours.trips).toBeLessThanOrEqual(3);
      expect(page.beyondPage).toBeLessThanOrEqual(MIB);
      const plain = row(n, 'append-plain');
      expect(plain.ours.traffic).toMatchObject({ requests: 3, putClass: 1, list: 0 });
      expect(plain.ours.trips).toBe(2);
      const sealing = result.rows.find((r) => r.n === n && r.id === 'append-sealing');
      if (sealing) {
        expect(sealing.ours.traffic.requests).toBeLessThanOrEqual(6);
        expect(sealing.ours.traffic.putClass).toBeLessThanOrEqual(2);
        expect(sealing.ours.trips).toBeLessThanOrEqual(4);
        expect(sealing.sealing).toBeLessThanOrEqual(Math.ceil((sealing.window ?? 0) / 32));
      }
      expect(row(n, 'append-mean').ours.traffic.putClass).toBeLessThanOrEqual(1.05);
      expect(row(n, 'append-mean').ours.traffic.bytesUp).toBeLessThanOrEqual(112 * KIB);
      const unchanged = row(n, 'save-unchanged').ours.traffic;
      expect(unchanged).toMatchObject({ putClass: 0, deletes: 0, list: 0 });
      expect(unchanged.getClass).toBeLessThanOrEqual(2);
      expect(row(n, 'save-grown').ours.traffic).toMatchObject({ requests: 3, putClass: 1, list: 0 });
      // One HEAD more than the reference's PUT: the revision it writes (docs/DESIGN.md, "Revisions").
      const valueSave = row(n, 'value-save');
      expect(valueSave.ours.traffic).toMatchObject({ requests: 3, putClass: 1, list: 0 });
      expect(valueSave.ours.trips).toBe(2);
      expect(valueSave.reference?.traffic).toMatchObject({ requests: 1, putClass: 1 });
    }
    for (const r of result.rows) {
      expect(r.ours.traffic.list, `${r.id} at ${r.n}`).toBe(0);
      expect(r.holds, `${r.id} at ${r.n}: ${r.ceiling}`).toBe(true);
    }
    // A seal happens at 200 (100 appends of 1 KB onto a head at its low mark), so the sealing row is measured.
    expect(result.rows.some((r) => r.n === 200 && r.id === 'append-sealing')).toBe(true);
  });

  it('holds the turn ceilings; the reference pattern costs what the issue measured', () => {
    const ours = result.turns.find((t) => t.pattern === 'ours');
    const reference = result.turns.find((t) => t.pattern === 'reference');
    expect(ours?.turns).toBe(64);
    expect(ours?.mean.putClass).toBeLessThanOrEqual(TURN_CEILINGS.putClass);
    expect(ours?.mean.getClass).toBeLessThanOrEqual(TURN_CEILINGS.getClass);
    expect(ours?.mean.list).toBe(0);
    expect(ours?.dollars).toBeLessThanOrEqual(TURN_CEILINGS.dollars);
    expect(ours?.holds).toBe(true);
    // The reference: 3 PUT-class (list, hash, value) and 6 GET-class (HEAD + GET twice, the hash and the list), $17.4.
    expect(reference?.mean).toMatchObject({ putClass: 3, getClass: 6, list: 0, deletes: 0 });
    expect(reference?.dollars).toBeCloseTo(17.4, 5);
    // The lock: one DynamoDB write to acquire, one to release, for both; ours reads the lock item
    // (consistent GetItem) with each of its two fenced writes (docs/DESIGN.md, "The write path").
    expect(ours?.mean).toMatchObject({ ddbWrites: 2, ddbReads: 2 });
    expect(reference?.mean).toMatchObject({ ddbWrites: 2, ddbReads: 0 });
  });

  it('the turn in two calls (begin + commit): ≤ 2.05 PUT, ≤ 5.1 GET with ifVersion, 0 LIST, 2 DynamoDB writes, ≤ 4.1 round trips; the whole stack costs less than six calls', () => {
    const api = result.turns.find((t) => t.pattern === 'turn-api');
    const six = result.turns.find((t) => t.pattern === 'ours');
    if (!api || !six) throw new Error('no turns');
    expect(api.httpCalls).toBe(2);
    expect(api.mean.putClass).toBeLessThanOrEqual(TURN_API_CEILINGS.putClass);
    expect(api.mean.getClass).toBeLessThanOrEqual(TURN_API_CEILINGS.getClass);
    expect(api.mean.list).toBe(0);
    expect(api.mean.ddbWrites).toBe(2);
    // The commit's fencing check: one consistent read of the lock item, in parallel with its reads.
    expect(api.mean.ddbReads).toBe(1);
    // The same with the save unconditional: the snapshot's etag as a hint, no HEAD.
    const hint = result.turns.find((t) => t.pattern === 'turn-api-hint');
    expect(hint?.mean.getClass).toBeLessThanOrEqual(TURN_API_CEILINGS.getClass);
    expect(hint?.mean.putClass).toBeLessThanOrEqual(TURN_API_CEILINGS.putClass);
    expect(hint?.trips).toBeLessThanOrEqual(TURN_API_CEILINGS.trips);
    expect(hint?.mean).toMatchObject({ ddbWrites: 2, ddbReads: 1, list: 0 });
    expect(hint?.holds).toBe(true);
    expect(api.trips).toBeLessThanOrEqual(TURN_API_CEILINGS.trips);
    expect(api.holds).toBe(true);
    expect(stackDollars(api)).toBeLessThan(stackDollars(six));
  });

  it('the keep-alive turn: the marker and one LIST more, no list rewritten (≤ 2 PUT-class, ≤ 256 KiB extra; ≤ 4.05 PUT-class)', () => {
    const kept = result.turns.find((t) => t.pattern === 'keep-alive');
    const six = result.turns.find((t) => t.pattern === 'ours');
    if (!kept || !six) throw new Error('no turns');
    expect(kept.mean.putClass - six.mean.putClass).toBeLessThanOrEqual(KEEP_ALIVE_CEILINGS.extraPutClass);
    expect(kept.mean.list).toBe(1);
    // The marker's write goes beside the turn's first write, not before it: one round trip more (its LIST).
    expect(kept.trips - six.trips).toBeLessThanOrEqual(KEEP_ALIVE_CEILINGS.extraTrips);
    expect(
      kept.mean.bytesUp + kept.mean.bytesDown - six.mean.bytesUp - six.mean.bytesDown,
    ).toBeLessThanOrEqual(KEEP_ALIVE_CEILINGS.extraBytes);
    expect(kept.holds).toBe(true);
  });

  it('beats the reference pattern where the design says it must', () => {
    const ours = result.turns.find((t) => t.pattern === 'ours');
    const reference = result.turns.find((t) => t.pattern === 'reference');
    if (!ours || !reference) throw new Error('no turns');
    expect(ours.dollars).toBeLessThan(reference.dollars);
    expect(ours.mean.bytesUp + ours.mean.bytesDown).toBeLessThan(
      (reference.mean.bytesUp + reference.mean.bytesDown) / 2,
    );
    for (const n of [20, 200]) {
      // An unchanged save writes nothing (the reference always rewrites its hash).
      expect(row(n, 'save-unchanged').ours.traffic.putClass).toBeLessThan(
        ref(row(n, 'save-unchanged')).putClass,
      );
      // An append is one write, the reference's two (the whole list and the hash).
      expect(row(n, 'append-mean').ours.traffic.putClass).toBeLessThan(ref(row(n, 'append-mean')).putClass);
    }
    // At 20 the head holds the whole list, so ours moves about the reference's bytes; from 200 on,
    // bytes are independent of the history and the reference's grow with it.
    expect(row(200, 'append-mean').ours.traffic.bytesUp).toBeLessThan(
      ref(row(200, 'append-mean')).bytesUp / 2,
    );
    expect(row(200, 'save-grown').ours.traffic.bytesUp).toBeLessThan(ref(row(200, 'save-grown')).bytesUp / 2);
    expect(row(200, 'last50').ours.traffic.bytesDown).toBeLessThan(ref(row(200, 'last50')).bytesDown / 2);
    expect(row(200, 'save-unchanged').ours.traffic.bytesDown).toBeLessThan(
      ref(row(200, 'save-unchanged')).bytesDown / 2,
    );
  });
});

describe('list growth (smoke): bytes written by appends of 1, 50 and 1,000 items', () => {
  it('holds every row: CAS ≤ 7 L (≤ 1.5 L by 1,000-item appends), a head write ≤ listHeadBytes + the batch; the append format ≤ 1.5 L', async () => {
    const servers = inject('servers');
    const run = `growth-${Date.now()}`;
    const s3 = createS3Driver({
      bucket: servers.bucket,
      endpoint: servers.s3,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    const oss = createOssDriver({ bucket: servers.bucket, endpoint: servers.oss, ...OSS_CREDENTIALS });
    const rows = [
      ...(await runGrowthBench(s3, `${run}/cas/`, GROWTH_SMOKE)),
      ...(await runGrowthBench(oss, `${run}/append/`, GROWTH_SMOKE)),
    ];
    console.log(growthTable(rows));
    expect(rows.map((r) => r.format)).toEqual(['cas', 'cas', 'cas', 'append', 'append', 'append']);
    for (const r of rows)
      expect(r.holds, `${r.format}, appends of ${r.batch}: ${r.ratio.toFixed(2)} L`).toBe(true);
  });
});

describe('workspace snapshot budgets (smoke: a 64 MiB tree, s3 driver on s3rver behind the S3 front)', () => {
  it('prints the budget rows beside a tar upload of the same tree, each within its ceiling', async () => {
    const servers = inject('servers');
    const s3 = createS3Driver({
      bucket: servers.bucket,
      endpoint: servers.s3,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    const rows = await runSnapshotBench(s3, SNAPSHOT_SMOKE_BYTES);
    console.log(snapshotTable(rows));
    expect(rows.map((r) => r.figure)).toHaveLength(12);
    // Times and the chunking rate are shown, not asserted: the runner's load decides them.
    const asserted = rows.filter((x) => x.unit !== 'ms' && x.unit !== 'MB/s');
    expect(asserted).toHaveLength(9);
    for (const r of asserted)
      expect(withinBound(r), `${r.figure}: ${r.value} against ${r.ceiling}`).toBe(true);
  });
});
