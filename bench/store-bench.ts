/**
 * The store's budget rows (issue "Storage v2", "Budgets"), this store against the reference's request
 * pattern (bench/reference-store.ts), side by side in one run, on the s3 driver against the S3 front
 * over s3rver. Requests and bytes are counted OUTSIDE the code, by a counting proxy in front of the
 * S3 front and another in front of dynalite (bench/counting-proxy.ts): what a bill would count,
 * SDK retries included. Round trips are counted at the driver (`roundTrips` in
 * test/store/wrappers.ts: a call is in wave 1 + the highest wave of the calls that ended before it
 * began). Requests and bytes are exact; milliseconds are measured once (noisy).
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createHttpClient, type Turn } from '../lib/client/index.js';
import type { Lease } from '../lib/contract/lock.js';
import { createOssDriver } from '../lib/drivers/oss.js';
import { createS3Driver } from '../lib/drivers/s3.js';
import { createNodeServer } from '../lib/http/adapters/node.js';
import { bearerJwtAuth } from '../lib/http/auth.js';
import { createRouter } from '../lib/http/router.js';
import { createDynamoDbLock, createLockTable } from '../lib/lock/dynamodb.js';
import { createStateStore, type ListFormatName } from '../lib/store/store.js';
import { hsToken, SECRET } from '../test/http/harness.js';
import { seededRandom } from '../test/seeded-random.js';
import { roundTrips } from '../test/store/wrappers.js';
import {
  type CountingProxy,
  divide,
  minus,
  NO_TRAFFIC,
  plus,
  startCountingProxy,
  type Traffic,
} from './counting-proxy.js';
import { ReferenceStore } from './reference-store.js';

const KIB = 1024;
const MIB = 1024 * KIB;

/** S3 list prices (us-east-1): PUT/COPY/POST/LIST $0.005 per 1,000, GET/HEAD $0.0004 per 1,000; DELETE free. */
export const S3_PRICES = { putClass: 0.005 / 1000, getClass: 0.0004 / 1000 };
/**
 * OSS list prices, China (Hangzhou), in CNY: ¥0.01 per 10,000 requests, PUT-class and GET-class
 * alike (README.md, "Costs").
 */
export const OSS_PRICES = { putClass: 0.01 / 10_000, getClass: 0.01 / 10_000 };
/** DynamoDB on-demand as AWS lists it since November 2024: $0.625 per million writes, $0.125 per million reads. */
export const DYNAMO_PRICES = { write: 0.625 / 1e6, read: 0.125 / 1e6 };
/**
 * One HTTP call through the AWS stack, as the README assumes it: API Gateway HTTP API $1.00 per
 * million requests; Lambda $0.20 per million requests plus $0.0000133334 per GB-second (arm64),
 * 512 MB (serverless.yml) billed 100 ms a call.
 */
export const HTTP_CALL_DOLLARS = 1.0 / 1e6 + 0.2 / 1e6 + 0.0000133334 * 0.5 * 0.1;

/** The two-call turn's ceilings (CAS format on S3): PUT, GET with ifVersion, round trips. */
export const TURN_API_CEILINGS = {
  putClass: 2.05,
  getClass: 5.1,
  list: 0,
  ddbWrites: 2,
  ddbReads: 1,
  trips: 4.1,
};

/** The turn's ceilings for this store (append format, on OSS): writes and LIST. */
export const APPEND_TURN_CEILINGS = { putClass: 2.05, list: 0 };

/** The six-call turn with the keep-alive due: its extra over a turn, and the whole turn. */
export const KEEP_ALIVE_CEILINGS = {
  extraPutClass: 2,
  extraBytes: 256 * 1024,
  extraTrips: 1,
  putClass: 4.05,
};
/** Turns measured with the keep-alive due, per history length. */
const KEEP_ALIVE_TURNS = 4;
const HOUR = 60 * 60 * 1000;

/** The turn's ceilings for this store (CAS format). */
export const TURN_CEILINGS = { putClass: 2.05, getClass: 8.1, list: 0, dollars: 13.5 };

/** An item of about 1 KB (1,000 to 1,040 bytes of JSON), like an agent message. */
export function message(i: number) {
  return {
    role: i % 2 ? 'assistant' : 'user',
    content: `turn ${i}: ${'lorem ipsum dolor sit amet '.repeat(40)}`.slice(0, 1000),
  };
}

/** The agent's state object (`agent_state`), about 2 KB, changed every turn. */
function agentState(turn: number) {
  return {
    turn,
    plan: Array.from({ length: 12 }, (_, i) => ({
      step: i,
      done: i < turn % 12,
      what: `step ${i} of the plan ${'x'.repeat(120)}`,
    })),
  };
}

/** What one measured call (or the mean of several) cost. */
export interface Measured {
  traffic: Traffic;
  /** S3 round trips, counted at the driver. */
  trips: number;
  ms: number;
}

export type RowId =
  | 'last50'
  | 'whole'
  | 'page'
  | 'append-plain'
  | 'append-sealing'
  | 'append-mean'
  | 'save-unchanged'
  | 'save-grown'
  | 'value-save';

/** One budget row at one history length. */
export interface BudgetRow {
  n: number;
  id: RowId;
  operation: string;
  ours: Measured;
  /** Undefined where the reference has nothing to compare (it never seals). */
  reference?: Measured;
  /** Bytes of the whole list (its items as one JSON array): L. */
  listBytes: number;
  /** The ceiling ours must hold here, in words, and whether it holds; undefined: no ceiling. */
  ceiling?: string;
  holds?: boolean;
  /** Appends measured (append rows). */
  window?: number;
  referenceWindow?: number;
  /** Page rows: the most bytes read beyond the page's own items, over the offsets. */
  beyondPage?: number;
  /** Calls of the window that sealed, merged or dropped retired segments (append rows). */
  sealing?: number;
}

/** The locked agent turn at one history length, one pattern, mean over the turns. */
export interface TurnRow {
  n: number;
  /**
   * `ours`: six calls; `keep-alive`: the same with the session's keep-alive due; `turn-api`: begin
   * (lease + snapshot) and commit (changes + release).
   */
  pattern: 'ours' | 'keep-alive' | 'turn-api' | 'turn-api-hint' | 'reference';
  /** HTTP calls (API Gateway + Lambda invocations) the turn takes; 0 for the reference (in-process). */
  httpCalls: number;
  turns: number;
  mean: Traffic;
  trips: number;
  ms: number;
  /** Per million turns, the object store's requests only, in `currency` (S3: $; OSS: ¥, CNY). */
  dollars: number;
  currency: '$' | '¥';
  /** $ per million turns of the DynamoDB requests (apart). */
  dynamoDollars: number;
  ceiling?: string;
  holds?: boolean;
}

export interface StoreBenchResult {
  /** The list format ours ran. */
  format: string;
  /** The driver and server: the s3 driver on the S3 front, or the oss driver on the OSS front. */
  backend: 's3' | 'oss';
  rows: BudgetRow[];
  turns: TurnRow[];
}

export interface StoreBenchOptions {
  /** Port of the S3 front on 127.0.0.1 (the proxy goes in front of it). */
  s3Port: number;
  /** Port of dynalite on 127.0.0.1. */
  dynamoPort: number;
  /**
   * Runs on the oss driver against the OSS front at `port` on 127.0.0.1 (the proxy goes in front
   * of it, `s3Port` unused) instead of the s3 driver; priced at OSS's prices, in CNY.
   */
  oss?: { port: number; accessKeyId: string; accessKeySecret: string };
  bucket: string;
  /** History lengths. */
  sizes: number[];
  /** History lengths at which the turn is measured; default all of `sizes`. */
  turnSizes?: number[];
  /** Turns measured per history length and pattern; default 64. */
  turns?: number;
  /** Random page offsets measured per history length; default 16. */
  pages?: number;
  /** Appends measured at history length n; default n up to 2,000, else 1,000. */
  appendWindow?: (n: number) => number;
  /**
   * Runs ours' and the reference's appends and turns at the same time (each counted on its own
   * proxies: the counts are the same, the milliseconds are not comparable); default false.
   */
  parallel?: boolean;
  /** A list format for ours (default: the store's default for the driver). */
  listFormat?: ListFormatName;
  /** Progress lines. */
  log?: (line: string) => void;
}

/**
 * The smoke (`npm run bench -- --smoke` and test/bench-smoke.test.ts, CI): history lengths 20 and
 * 200, at most 100 appends (a seal included at 200), the turn at 200, ours and the reference at the
 * same time.
 */
export const SMOKE: Pick<StoreBenchOptions, 'sizes' | 'turnSizes' | 'parallel' | 'appendWindow'> = {
  sizes: [20, 200],
  turnSizes: [200],
  appendWindow: (n) => Math.min(n, 100),
  parallel: true,
};

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));
const sum = (ms: Measured[]): Measured =>
  ms.reduce((a, b) => ({ traffic: plus(a.traffic, b.traffic), trips: a.trips + b.trips, ms: a.ms + b.ms }), {
    traffic: NO_TRAFFIC,
    trips: 0,
    ms: 0,
  });
const mean = (ms: Measured[]): Measured => {
  const s = sum(ms);
  return { traffic: divide(s.traffic, ms.length), trips: s.trips / ms.length, ms: s.ms / ms.length };
};
/** Field-by-field maximum. */
const max = (ms: Measured[]): Measured => {
  const traffic = { ...NO_TRAFFIC };
  for (const m of ms)
    for (const k of Object.keys(traffic) as Array<keyof Traffic>)
      traffic[k] = Math.max(traffic[k], m.traffic[k]);
  return { traffic, trips: Math.max(0, ...ms.map((m) => m.trips)), ms: Math.max(0, ...ms.map((m) => m.ms)) };
};
const writes = (t: Traffic) => t.putClass;

/** $ per million turns for a turn's mean traffic (`prices`: the object store's; default S3's, in $). */
export function dollarsPerMillion(
  t: Traffic,
  prices: { putClass: number; getClass: number } = S3_PRICES,
): { s3: number; dynamo: number } {
  return {
    s3: (t.putClass * prices.putClass + t.getClass * prices.getClass) * 1e6,
    dynamo: (t.ddbWrites * DYNAMO_PRICES.write + t.ddbReads * DYNAMO_PRICES.read) * 1e6,
  };
}

/** The CAS format's ceiling for a row, in words, and whether `m` holds it. */
function casCeiling(
  row: Omit<BudgetRow, 'ceiling' | 'holds'>,
): { ceiling: string; holds: boolean } | undefined {
  const t = row.ours.traffic;
  const noList = t.list === 0;
  switch (row.id) {
    case 'last50':
      return {
        ceiling: '2 GET, 1 trip',
        holds: t.getClass <= 2 && writes(t) === 0 && row.ours.trips <= 1 && noList,
      };
    case 'whole': {
      const gets = 5 + Math.ceil(row.listBytes / (4 * MIB));
      const bytes = 1.1 * row.listBytes + 128 * KIB;
      return {
        ceiling: `≤ ${gets} GET, ≤ 2 trips, ≤ 1.1 L + 128 KiB read`,
        holds: t.getClass <= gets && writes(t) === 0 && row.ours.trips <= 2 && t.bytesDown <= bytes && noList,
      };
    }
    case 'page':
      return {
        ceiling: '≤ 4 GET, ≤ 3 trips, ≤ page + 1 MiB read',
        holds:
          t.getClass <= 4 && writes(t) === 0 && row.ours.trips <= 3 && (row.beyondPage ?? 0) <= MIB && noList,
      };
    case 'append-plain':
      return {
        ceiling: '3 requests, 1 PUT, 2 trips',
        holds: t.requests <= 3 && t.putClass <= 1 && row.ours.trips <= 2 && noList,
      };
    case 'append-sealing':
      return {
        ceiling: '≤ 6 requests, ≤ 2 PUT, ≤ 4 trips, ≤ 1 per 32 appends',
        holds:
          t.requests <= 6 &&
          t.putClass <= 2 &&
          row.ours.trips <= 4 &&
          (row.sealing ?? 0) <= Math.ceil((row.window ?? 0) / 32) &&
          noList,
      };
    case 'append-mean':
      return {
        ceiling: '≤ 1.05 PUT, ≤ 112 KiB written',
        holds: t.putClass <= 1.05 && t.bytesUp <= 112 * KIB && noList,
      };
    case 'save-unchanged':
      return {
        ceiling: '≤ 2 GET, 0 writes',
        holds: t.getClass <= 2 && writes(t) === 0 && t.deletes === 0 && noList,
      };
    case 'save-grown':
      return {
        ceiling: 'as appendList: 3 requests, 1 PUT, 2 trips (≤ 6, ≤ 2, ≤ 4 sealing)',
        holds:
          noList &&
          ((t.requests <= 3 && t.putClass <= 1 && row.ours.trips <= 2) ||
            (t.requests <= 6 && t.putClass <= 2 && row.ours.trips <= 4)),
      };
    case 'value-save':
      return VALUE_SAVE_CEILING(t, row.ours.trips);
  }
}

/**
 * A plain save of a single value (no token, no condition): the marker and the value's HEAD beside
 * it, then the PUT of the next revision conditional on that head (docs/DESIGN.md, "Revisions") —
 * one HEAD more than before revisions; the reference's is one unconditional PUT.
 */
const VALUE_SAVE_CEILING = (t: Measured['traffic'], trips: number) => ({
  ceiling: '3 requests (marker GET, HEAD, PUT), 1 PUT, 2 trips, 0 LIST',
  holds: t.requests <= 3 && t.putClass <= 1 && trips <= 2 && t.list === 0,
});

/** The append format's ceiling for a row (on OSS), in words, and whether it holds; LIST 0 in every row. */
function appendCeiling(row: Omit<BudgetRow, 'ceiling' | 'holds'>): { ceiling: string; holds: boolean } {
  const t = row.ours.traffic;
  const noList = t.list === 0;
  switch (row.id) {
    case 'last50':
      return {
        ceiling: '≤ 3 GET, ≤ 2 trips, 0 LIST',
        holds: t.getClass <= 3 && writes(t) === 0 && row.ours.trips <= 2 && noList,
      };
    case 'append-plain':
      return {
        ceiling: '≤ 4 requests, 1 write, ≤ 3 trips, 0 LIST',
        holds: t.requests <= 4 && writes(t) === 1 && row.ours.trips <= 3 && noList,
      };
    // A rollover (the log is full: seal, successor, pointer) is the append format's sealing call;
    // the issue's append column has no row for it: its ceiling is the one the tests hold.
    case 'append-sealing':
      return {
        ceiling: 'a rollover: ≤ 7 requests, ≤ 3 writes, ≤ 6 trips, ≤ 1 per 850 appends, 0 LIST',
        holds:
          t.requests <= 7 &&
          writes(t) <= 3 &&
          row.ours.trips <= 6 &&
          (row.sealing ?? 0) <= Math.ceil((row.window ?? 0) / 850) &&
          noList,
      };
    case 'append-mean':
      return {
        ceiling: '≤ 1.01 writes, ≤ 4 KiB written, 0 LIST',
        holds: writes(t) <= 1.01 && t.bytesUp <= 4 * KIB && noList,
      };
    case 'save-unchanged':
      return {
        ceiling: '≤ 3 GET, 0 writes, 0 LIST',
        holds: t.getClass <= 3 && writes(t) === 0 && t.deletes === 0 && noList,
      };
    case 'value-save':
      return VALUE_SAVE_CEILING(t, row.ours.trips);
    default:
      return { ceiling: '0 LIST', holds: noList };
  }
}

/** One pattern's instruments: its own proxies (S3 and DynamoDB), driver and lock, so two can run at once. */
interface Side {
  driver: ReturnType<typeof roundTrips>;
  lock: ReturnType<typeof createDynamoDbLock>;
  /** Counts `fn` on the side's proxies, and its S3 round trips. */
  measure<T>(fn: () => Promise<T>): Promise<Measured & { result: T }>;
  /** Counts a sequence of steps, each its own round trips (summed). */
  measureSteps(steps: Array<() => Promise<unknown>>): Promise<Measured>;
  close(): Promise<void>;
}

async function startSide(options: StoreBenchOptions, tableName: string, create: boolean): Promise<Side> {
  const s3: CountingProxy = await startCountingProxy(options.oss?.port ?? options.s3Port);
  const ddb: CountingProxy = await startCountingProxy(options.dynamoPort);
  const driver = roundTrips(
    options.oss
      ? createOssDriver({
          bucket: options.bucket,
          // `localhost` (127.0.0.1), as the OSS front's own endpoint: ali-oss signs an IP host as a region's.
          endpoint: s3.endpoint.replace('//127.0.0.1:', '//localhost:'),
          accessKeyId: options.oss.accessKeyId,
          accessKeySecret: options.oss.accessKeySecret,
        })
      : createS3Driver({
          bucket: options.bucket,
          endpoint: s3.endpoint,
          credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
        }),
  );
  const client = new DynamoDBClient({
    endpoint: ddb.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
  });
  if (create) await createLockTable(client, tableName);
  const measure = async <T>(fn: () => Promise<T>): Promise<Measured & { result: T }> => {
    driver.resetWaves();
    const [s3Before, ddbBefore] = [s3.snapshot(), ddb.snapshot()];
    const started = performance.now();
    const result = await fn();
    const ms = performance.now() - started;
    // S3's requests and bytes; of DynamoDB's, only its writes and reads.
    const dynamo = minus(ddb.snapshot(), ddbBefore);
    const traffic = {
      ...minus(s3.snapshot(), s3Before),
      ddbWrites: dynamo.ddbWrites,
      ddbReads: dynamo.ddbReads,
    };
    return { result, traffic, trips: driver.waves(), ms };
  };
  return {
    driver,
    lock: createDynamoDbLock({ tableName, client }),
    measure,
    async measureSteps(steps) {
      const parts: Measured[] = [];
      for (const step of steps) parts.push(await measure(step));
      return sum(parts);
    },
    async close() {
      client.destroy();
      await driver.close();
      await s3.stop();
      await ddb.stop();
    },
  };
}

/**
 * The HTTP API over a side's driver and lock (the state under `prefix`), served in-process on
 * 127.0.0.1: what the typed client's turn calls reach.
 */
async function serveApi(side: Side, prefix: string, listFormat: ListFormatName | undefined) {
  const handle = createRouter({
    store: createStateStore({ driver: side.driver, prefix, ...(listFormat ? { listFormat } : {}) }),
    lock: side.lock,
    auth: bearerJwtAuth({ secret: SECRET }),
  });
  const server = createNodeServer(handle, 8 * MIB);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Runs the store benchmark for each history length. */
export async function runStoreBench(options: StoreBenchOptions): Promise<StoreBenchResult> {
  const log = options.log ?? (() => {});
  const turnsPerSize = options.turns ?? 64;
  const pages = options.pages ?? 16;
  const windowOf = options.appendWindow ?? ((n: number) => (n <= 2000 ? n : 1000));
  /** Runs ours' and the reference's parts at once (each side counts its own), or one after the other. */
  const both = async <A, B>(a: () => Promise<A>, b: () => Promise<B>): Promise<[A, B]> =>
    options.parallel ? Promise.all([a(), b()]) : [await a(), await b()];
  const tableName = `bench-turns-${randomUUID()}`;
  const us = await startSide(options, tableName, true);
  const them = await startSide(options, tableName, false);
  const format = options.listFormat ?? (us.driver.capabilities.conditionalOverwrite ? 'cas' : 'append');
  const rows: BudgetRow[] = [];
  const turns: TurnRow[] = [];
  const backend = options.oss ? 'oss' : 's3';
  const prices = options.oss ? OSS_PRICES : S3_PRICES;
  const currency = options.oss ? '¥' : '$';
  const push = (row: Omit<BudgetRow, 'ceiling' | 'holds'>) =>
    rows.push({
      ...row,
      ...(format === 'cas' ? casCeiling(row) : format === 'append' ? appendCeiling(row) : {}),
    });
  try {
    for (const n of options.sizes) {
      const run = `bench-${n}-${Date.now()}`;
      // The lock is the store's authority over tokens, as in the HTTP server (docs/DESIGN.md, "The write path").
      const ours = createStateStore({
        driver: us.driver,
        prefix: `${run}/ours/`,
        authority: us.lock,
        ...(options.listFormat ? { listFormat: options.listFormat } : {}),
      }).forUser('bench');
      const reference = new ReferenceStore(them.driver, `${run}/ref/`);
      const list = Array.from({ length: n }, (_, i) => message(i));
      const listBytes = jsonBytes(list);
      const withTurns = !options.turnSizes || options.turnSizes.includes(n);
      log(`N = ${n}: writing the lists (${(listBytes / MIB).toFixed(1)} MiB)`);
      await both(
        async () => {
          for (const session of withTurns ? ['s', 't', 'u'] : ['s']) {
            await ours.saveList(session, 'memory', list);
            await ours.save(session, 'agent_state', agentState(0));
          }
        },
        async () => {
          for (const session of withTurns ? ['s', 't'] : ['s']) {
            await reference.saveList('bench', session, 'memory', list);
            await reference.save('bench', session, 'agent_state', agentState(0));
          }
        },
      );

      // Reads. The reference has no paging: every read is the whole list (HEAD + GET), sliced.
      const refRead = await them.measure(() => reference.getList('bench', 's', 'memory'));
      const last = await us.measure(() => ours.getList('s', 'memory', { last: 50 }));
      push({ n, id: 'last50', operation: 'getList `last: 50`', ours: last, reference: refRead, listBytes });
      const whole = await us.measure(() => ours.getList('s', 'memory'));
      if (whole.result.items.length !== n)
        throw new Error(`whole read: ${whole.result.items.length} of ${n}`);
      push({
        n,
        id: 'whole',
        operation: 'getList, the whole list',
        ours: whole,
        reference: refRead,
        listBytes,
      });
      const next = seededRandom(n);
      const offsets = Array.from({ length: pages }, () => Math.floor(next() * Math.max(1, n - 50)));
      const paged: Measured[] = [];
      let beyondPage = 0;
      for (const offset of offsets) {
        const m = await us.measure(() => ours.getList('s', 'memory', { offset, limit: 50 }));
        beyondPage = Math.max(beyondPage, m.traffic.bytesDown - jsonBytes(m.result.items));
        paged.push(m);
      }
      push({
        beyondPage,
        n,
        id: 'page',
        operation: `a page at a random offset, limit 50 (each count the most of ${pages} offsets)`,
        ours: max(paged),
        reference: refRead,
        listBytes,
      });

      // Saves of the whole list, as the reference's callers do.
      const unchanged = await us.measure(() => ours.saveList('s', 'memory', list));
      const refUnchanged = await them.measure(() => reference.saveList('bench', 's', 'memory', list));
      push({
        n,
        id: 'save-unchanged',
        operation: 'saveList unchanged',
        ours: unchanged,
        reference: refUnchanged,
        listBytes,
      });
      const grown = [...list, message(n)];
      const saveGrown = await us.measure(() => ours.saveList('s', 'memory', grown));
      const refGrown = await them.measure(() => reference.saveList('bench', 's', 'memory', grown));
      push({
        n,
        id: 'save-grown',
        operation: 'saveList grown by 1 item',
        ours: saveGrown,
        reference: refGrown,
        listBytes,
      });
      // A plain save of a single value, which reads its head for the revision it writes.
      const valueSave = await us.measure(() => ours.save('s', 'agent_state', agentState(1)));
      const refValueSave = await them.measure(() =>
        reference.save('bench', 's', 'agent_state', agentState(1)),
      );
      push({
        n,
        id: 'value-save',
        operation: 'save of a single value, no token (+1 HEAD for its revision)',
        ours: valueSave,
        reference: refValueSave,
        listBytes,
      });

      // Appends of one 1 KB item: every call measured. The reference's append is a save of the
      // whole list, the same requests on every call, so a shorter window shows its mean.
      const window = windowOf(n);
      const refWindow = Math.min(window, 20);
      log(`N = ${n}: ${window} appends (reference: ${refWindow})`);
      const [calls, refCalls] = await both(
        async () => {
          let state = { count: grown.length, hash: saveGrown.result.hash };
          const out: Measured[] = [];
          for (let i = 0; i < window; i++) {
            const m = await us.measure(() =>
              ours.appendList('s', 'memory', [message(grown.length + i)], {
                expectedCount: state.count,
                expectedHash: state.hash,
              }),
            );
            state = m.result;
            out.push(m);
          }
          return out;
        },
        async () => {
          let refList = grown;
          const out: Measured[] = [];
          for (let i = 0; i < refWindow; i++) {
            refList = [...refList, message(grown.length + i)];
            const items = refList;
            out.push(await them.measure(() => reference.saveList('bench', 's', 'memory', items)));
          }
          return out;
        },
      );
      const plain = calls.filter((c) => c.traffic.putClass <= 1 && c.traffic.deletes === 0);
      const sealing = calls.filter((c) => !plain.includes(c));
      const refMean = mean(refCalls);
      const common = { n, listBytes, window, referenceWindow: refWindow, sealing: sealing.length };
      push({
        ...common,
        id: 'append-plain',
        operation: `appendList 1 KB, a plain call (each count the most of ${plain.length} calls)`,
        ours: max(plain),
        reference: refMean,
      });
      if (sealing.length > 0)
        push({
          ...common,
          id: 'append-sealing',
          operation: `appendList 1 KB, a sealing or merging call (each count the most of ${sealing.length} calls)`,
          ours: max(sealing),
        });
      push({
        ...common,
        id: 'append-mean',
        operation: `appendList 1 KB, mean over ${window} appends (reference: ${refWindow})`,
        ours: mean(calls),
        reference: refMean,
      });

      // The locked agent turn, on a session of its own with a history of n.
      if (!withTurns) continue;
      log(`N = ${n}: ${turnsPerSize} turns each`);
      // The store's session: the lock is its authority (each size has its own prefix, the same session id).
      const turnKey = { userId: 'bench', sessionId: 't' };
      /**
       * Turn `i` in six calls on `store`: lease, value, last 50, append 2, save with the token,
       * release; the append (the turn's first write) on `first`.
       */
      const sixCalls = async (store: typeof ours, i: number, first = store) => {
        let lease: Lease | undefined;
        let page = { count: 0, hash: '' };
        return us.measureSteps([
          async () => {
            lease = await us.lock.acquire(turnKey, { leaseMs: 60_000 });
          },
          () => store.get('t', 'agent_state'),
          async () => {
            page = await store.getList('t', 'memory', { last: 50 });
          },
          () =>
            first.appendList('t', 'memory', [message(n + 2 * i), message(n + 2 * i + 1)], {
              expectedCount: page.count,
              expectedHash: page.hash,
              token: lease?.token,
            }),
          () => store.save('t', 'agent_state', agentState(i + 1), { token: lease?.token }),
          () => us.lock.release(turnKey, lease?.owner ?? '', lease?.token ?? 0),
        ]);
      };
      const [ourTurns, refTurns] = await both(
        async () => {
          const out: Measured[] = [];
          for (let i = 0; i < turnsPerSize; i++) out.push(await sixCalls(ours, i));
          return out;
        },
        async () => {
          const key = { userId: 'bench', sessionId: `${run}/ref-t` };
          const out: Measured[] = [];
          for (let i = 0; i < turnsPerSize; i++) {
            let lease: Lease | undefined;
            let history: unknown[] = [];
            out.push(
              await them.measureSteps([
                async () => {
                  lease = await them.lock.acquire(key, { leaseMs: 60_000 });
                },
                () => reference.get('bench', 't', 'agent_state'),
                // The agent shows it the last 50, but keeps the whole list: the reference saves whole lists.
                async () => {
                  history = await reference.getList('bench', 't', 'memory');
                },
                () =>
                  reference.saveList('bench', 't', 'memory', [
                    ...history,
                    message(n + 2 * i),
                    message(n + 2 * i + 1),
                  ]),
                () => reference.save('bench', 't', 'agent_state', agentState(i + 1)),
                () => them.lock.release(key, lease?.owner ?? '', lease?.token ?? 0),
              ]),
            );
          }
          return out;
        },
      );
      // The same turn in two HTTP calls through the typed client and the HTTP API
      // served in-process over the same store and lock: begin = lease + snapshot, commit =
      // changes + release. The client's calls are counted at its fetch.
      // Twice: the save with the snapshot's etag as `ifVersion`, and without a condition (the
      // client then sends the etag as `seenVersion`, a hint the server tries as If-Match).
      const apiTurns: Measured[] = [];
      const hintTurns: Measured[] = [];
      let apiCalls = 0;
      for (const conditional of [true, false]) {
        const api = await serveApi(us, `${run}/ours/`, options.listFormat);
        const client = createHttpClient({
          baseUrl: api.baseUrl,
          token: () => hsToken({ sub: 'bench' }),
          fetch: (input, init) => {
            if (conditional) apiCalls++;
            return fetch(input, init);
          },
        });
        try {
          for (let i = 0; i < turnsPerSize; i++) {
            let turn: Turn | undefined;
            (conditional ? apiTurns : hintTurns).push(
              await us.measureSteps([
                async () => {
                  turn = await client.beginTurn('u', {
                    leaseMs: 60_000,
                    values: ['agent_state'],
                    lists: [{ key: 'memory', last: 50 }],
                  });
                },
                async () => {
                  if (!turn) throw new Error('no turn');
                  // OSS has no conditional overwrite: the lease's token fences the save there.
                  const etag = options.oss || !conditional ? undefined : turn.version('agent_state');
                  turn
                    .save('agent_state', agentState(i + 1), etag ? { ifVersion: etag } : {})
                    .append('memory', [message(n + 2 * i), message(n + 2 * i + 1)]);
                  await turn.commit({ release: true });
                },
              ]),
            );
          }
        } finally {
          await api.close();
        }
      }
      // The same six-call turn when the session's keep-alive is due: its first write on a store
      // whose clock is 2 hours further ahead each turn (the objects' times are the backend's, so
      // only that write sees the marker stale): the marker's rewrite and one LIST of the session,
      // nothing else (no `.list.json`).
      const keepAliveTurns: Measured[] = [];
      {
        let ahead = 0;
        const later = createStateStore({
          driver: us.driver,
          prefix: `${run}/ours/`,
          authority: us.lock,
          now: () => Date.now() + ahead,
          ...(options.listFormat ? { listFormat: options.listFormat } : {}),
        }).forUser('bench');
        for (let i = 0; i < KEEP_ALIVE_TURNS; i++) {
          ahead += 2 * HOUR;
          keepAliveTurns.push(await sixCalls(ours, turnsPerSize + i, later));
        }
      }
      for (const [pattern, measured, httpCalls] of [
        ['ours', ourTurns, 6],
        ['keep-alive', keepAliveTurns, 6],
        ['turn-api', apiTurns, apiCalls / turnsPerSize],
        ['turn-api-hint', hintTurns, apiCalls / turnsPerSize],
        ['reference', refTurns, 0],
      ] as const) {
        const m = mean(measured);
        const price = dollarsPerMillion(m.traffic, prices);
        const row: TurnRow = {
          n,
          pattern,
          turns: pattern === 'keep-alive' ? KEEP_ALIVE_TURNS : turnsPerSize,
          mean: m.traffic,
          trips: m.trips,
          ms: m.ms,
          dollars: price.s3,
          currency,
          dynamoDollars: price.dynamo,
          httpCalls,
        };
        if ((pattern === 'turn-api' || pattern === 'turn-api-hint') && format === 'cas') {
          const c = TURN_API_CEILINGS;
          row.ceiling = `2 calls, ≤ ${c.putClass} PUT, ≤ ${c.getClass} GET, 0 LIST, ${c.ddbWrites} DynamoDB writes + ${c.ddbReads} read, ≤ ${c.trips} trips`;
          row.holds =
            m.traffic.putClass <= c.putClass &&
            m.traffic.getClass <= c.getClass &&
            m.traffic.list === c.list &&
            m.traffic.ddbWrites <= c.ddbWrites &&
            m.traffic.ddbReads <= c.ddbReads &&
            m.trips <= c.trips;
        }
        if (pattern === 'ours' && format === 'cas') {
          row.ceiling = `≤ ${TURN_CEILINGS.putClass} PUT, ≤ ${TURN_CEILINGS.getClass} GET, 0 LIST, ≤ $${TURN_CEILINGS.dollars}`;
          row.holds =
            m.traffic.putClass <= TURN_CEILINGS.putClass &&
            m.traffic.getClass <= TURN_CEILINGS.getClass &&
            m.traffic.list === 0 &&
            price.s3 <= TURN_CEILINGS.dollars;
        }
        if (pattern === 'keep-alive') {
          // Its extra over the turn's mean (the `ours` row, pushed just before this one).
          const base = turns.at(-1) as TurnRow;
          const extra = minus(m.traffic, base.mean);
          const c = KEEP_ALIVE_CEILINGS;
          row.ceiling = `extra ≤ ${c.extraPutClass} PUT-class, ≤ ${bytes(c.extraBytes)} moved, ≤ ${c.extraTrips} trip (beside the writes); the turn ≤ ${c.putClass} PUT-class`;
          row.holds =
            extra.putClass <= c.extraPutClass &&
            extra.bytesUp + extra.bytesDown <= c.extraBytes &&
            m.trips - base.trips <= c.extraTrips &&
            m.traffic.putClass <= c.putClass;
        }
        if (pattern === 'ours' && format === 'append') {
          row.ceiling = `≤ ${APPEND_TURN_CEILINGS.putClass} writes, 0 LIST`;
          row.holds =
            m.traffic.putClass <= APPEND_TURN_CEILINGS.putClass &&
            m.traffic.list === APPEND_TURN_CEILINGS.list;
        }
        turns.push(row);
      }
    }
  } finally {
    await us.close();
    await them.close();
  }
  return { format, backend, rows, turns };
}

// ---- tables ------------------------------------------------------------------------------------

/** Bytes, readably. */
export function bytes(b: number): string {
  if (b < 10 * KIB) return `${Math.round(b)} B`;
  if (b < 10 * MIB) return `${(b / KIB).toFixed(0)} KiB`;
  return `${(b / MIB).toFixed(1)} MiB`;
}
const num = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(2));
const reqs = (t: Traffic) => `${num(t.requests)} (${num(t.putClass)} / ${num(t.getClass)} / ${num(t.list)})`;
const mark = (holds: boolean | undefined) => (holds === undefined ? '' : holds ? ' ✓' : ' **✗**');

/** The budget rows as one Markdown table, ours and the reference side by side. */
export function storeTable(result: StoreBenchResult): string {
  const lines = [
    `| N | operation | ours (${result.format}): requests (PUT-class / GET-class / LIST) | trips | bytes up / down | reference: requests (PUT-class / GET-class / LIST) | trips | bytes up / down | ceiling for ours |`,
    '|---:|---|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of result.rows) {
    const down =
      r.id === 'whole'
        ? `${bytes(r.ours.traffic.bytesDown)} (${(r.ours.traffic.bytesDown / r.listBytes).toFixed(2)} L, L = ${bytes(r.listBytes)})`
        : bytes(r.ours.traffic.bytesDown);
    const ref = r.reference;
    lines.push(
      [
        '',
        r.n.toLocaleString('en'),
        r.operation,
        reqs(r.ours.traffic),
        num(r.ours.trips),
        `${bytes(r.ours.traffic.bytesUp)} / ${down}`,
        ref ? reqs(ref.traffic) : '—',
        ref ? num(ref.trips) : '—',
        ref ? `${bytes(ref.traffic.bytesUp)} / ${bytes(ref.traffic.bytesDown)}` : '—',
        r.ceiling ? `${r.ceiling}${mark(r.holds)}` : '—',
        '',
      ]
        .join(' | ')
        .trim(),
    );
  }
  return lines.join('\n');
}

/** A turn pattern's name in the tables. */
const PATTERN_NAMES: Record<TurnRow['pattern'], (format: string) => string> = {
  ours: (format) => `ours (${format}), six calls`,
  'keep-alive': (format) => `ours (${format}), six calls, the keep-alive due`,
  'turn-api': (format) => `ours (${format}), begin + commit`,
  'turn-api-hint': (format) => `ours (${format}), begin + commit, the save without ifVersion`,
  reference: () => 'reference',
};
const patternName = (t: TurnRow, format: string) => PATTERN_NAMES[t.pattern](format);

/** $ per million turns of the whole AWS stack: S3, DynamoDB, and API Gateway + Lambda per HTTP call. */
export const stackDollars = (t: TurnRow) =>
  t.dollars + t.dynamoDollars + t.httpCalls * HTTP_CALL_DOLLARS * 1e6;

/** The locked agent turns as a Markdown table. */
export function turnTable(result: StoreBenchResult): string {
  const store = result.backend === 'oss' ? 'OSS' : 'S3';
  const price = result.backend === 'oss' ? '¥ (CNY) per million turns (OSS)' : '$ per million turns (S3)';
  const lines = [
    `| N | pattern | HTTP calls | ${store} requests per turn (PUT-class / GET-class / LIST) | DELETE | ${store} round trips | DynamoDB writes / reads | bytes up / down | ${price} | DynamoDB $ per million | whole stack $ per million (AWS) | ms per turn | ceiling |`,
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const t of result.turns) {
    const s3Requests = { ...t.mean, requests: t.mean.putClass + t.mean.getClass + t.mean.deletes };
    lines.push(
      `| ${t.n.toLocaleString('en')} | ${patternName(t, result.format)} | ${t.httpCalls || '— (in-process)'} | ${reqs(s3Requests)} | ${num(t.mean.deletes)} | ${num(t.trips)} | ${num(t.mean.ddbWrites)} / ${num(t.mean.ddbReads)} | ${bytes(t.mean.bytesUp)} / ${bytes(t.mean.bytesDown)} | ${t.currency}${t.dollars.toFixed(2)} | $${t.dynamoDollars.toFixed(2)} | ${t.currency === '$' ? `$${stackDollars(t).toFixed(2)}` : '—'} | ${t.ms.toFixed(1)} | ${t.ceiling ? `${t.ceiling}${mark(t.holds)}` : '—'} |`,
    );
  }
  return lines.join('\n');
}

/**
 * The README's tables: requests per operation (at the largest history length run) and the cost
 * per million turns as measured, at every history length.
 */
export function readmeTables(result: StoreBenchResult): string {
  const n = Math.max(...result.rows.map((r) => r.n));
  const at = result.rows.filter((r) => r.n === n);
  const short = (t: Traffic) =>
    `${num(t.putClass)} PUT + ${num(t.getClass)} GET${t.list ? ` (${num(t.list)} LIST)` : ''}${t.deletes ? ` + ${num(t.deletes)} DELETE` : ''}`;
  const label: Record<RowId, string> = {
    last50: 'getList `last: 50`',
    whole: `getList, the whole list (${bytes(at[0]?.listBytes ?? 0)})`,
    page: 'getList, a page at any offset (limit 50; each count the most over 16 random offsets)',
    'append-plain': 'appendList of one 1 KB item',
    'append-sealing': 'appendList that seals or merges (each count the most over those calls)',
    'append-mean': 'appendList of one 1 KB item, mean over the window (seals and merges included)',
    'save-unchanged': 'saveList unchanged',
    'save-grown': 'saveList grown by 1 item',
    'value-save': 'save of a single value, no token (the HEAD reads its revision)',
  };
  const lines = [
    `Requests per operation, measured by \`npm run bench\` through a counting proxy on the local S3 server (s3 driver, ${result.format} lists, history of ${n.toLocaleString('en')} items of 1 KB; bytes are request and answer bodies):`,
    '',
    '| operation | this store: requests | round trips | bytes up / down | reference pattern: requests | bytes up / down |',
    '|---|---|---:|---:|---|---:|',
  ];
  for (const r of at) {
    const ref = r.reference;
    lines.push(
      `| ${label[r.id]} | ${short(r.ours.traffic)} | ${num(r.ours.trips)} | ${bytes(r.ours.traffic.bytesUp)} / ${bytes(r.ours.traffic.bytesDown)} | ${ref ? short(ref.traffic) : '—'} | ${ref ? `${bytes(ref.traffic.bytesUp)} / ${bytes(ref.traffic.bytesDown)}` : '—'} |`,
    );
  }
  lines.push(
    '',
    "Cost per million turns as measured (the locked agent turn: acquire the DynamoDB lock, get `agent_state`, getList `last: 50`, append 2 messages, save `agent_state` with the fencing token, release; mean over the turns), as six calls and as two (`beginTurn`: the lease and a snapshot; `commit`: the changes and the release). S3 at list prices: PUT/COPY/POST/LIST $0.005 per 1,000, GET/HEAD $0.0004 per 1,000, DELETE free. DynamoDB on-demand $0.625 per million writes, $0.125 per million reads (the lock: one write to acquire, one to release). The whole stack adds, per HTTP call, API Gateway HTTP API ($1.00 per million requests) and Lambda ($0.20 per million requests + $0.0000133334 per GB-second, arm64, 512 MB billed 100 ms): $1.87 per million calls. The reference runs in the agent's process (no HTTP calls).",
    '',
    '| history (items) | six calls: S3 requests per turn | S3 $ | whole stack $ | begin + commit: S3 requests per turn | S3 $ | whole stack $ | reference: S3 requests per turn | S3 $ | bytes per turn, ours / reference | DynamoDB $: six calls / two / reference |',
    '|---:|---|---:|---:|---|---:|---:|---|---:|---:|---:|',
  );
  for (const size of [...new Set(result.turns.map((t) => t.n))]) {
    const o = result.turns.find((t) => t.n === size && t.pattern === 'ours');
    const a = result.turns.find((t) => t.n === size && t.pattern === 'turn-api');
    const r = result.turns.find((t) => t.n === size && t.pattern === 'reference');
    if (!o || !a || !r) continue;
    lines.push(
      `| ${size.toLocaleString('en')} | ${short(o.mean)} | $${o.dollars.toFixed(1)} | $${stackDollars(o).toFixed(1)} | ${short(a.mean)} | $${a.dollars.toFixed(1)} | $${stackDollars(a).toFixed(1)} | ${short(r.mean)} | $${r.dollars.toFixed(1)} | ${bytes(a.mean.bytesUp + a.mean.bytesDown)} / ${bytes(r.mean.bytesUp + r.mean.bytesDown)} | $${o.dynamoDollars.toFixed(2)} / $${a.dynamoDollars.toFixed(2)} / $${r.dynamoDollars.toFixed(2)} |`,
    );
  }
  return lines.join('\n');
}
