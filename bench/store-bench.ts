/**
 * Requests and bytes per list operation, this store against the reference's request pattern, on the
 * same driver. Requests and bytes are counted (exact); milliseconds are measured once (noisy).
 */
import type { ObjectStoreDriver } from '../lib/drivers/types.js';
import { createStateStore } from '../lib/store/store.js';
import { counting } from '../test/store/wrappers.js';
import { ReferenceStore } from './reference-store.js';

/** One measured operation. */
export interface StoreBenchRow {
  n: number;
  operation: string;
  ours: { requests: number; bytesUp: number; bytesDown: number; ms: number };
  reference: { requests: number; bytesUp: number; bytesDown: number; ms: number };
}

/** An item of about 1 KB, like an agent message. */
export function message(i: number) {
  return {
    role: i % 2 ? 'assistant' : 'user',
    content: `turn ${i}: ${'lorem ipsum dolor sit amet '.repeat(36)}`.slice(0, 1000),
  };
}

/** Runs the store benchmark for each size on drivers made by `makeDriver`. */
export async function runStoreBench(
  makeDriver: () => ObjectStoreDriver,
  sizes: number[],
): Promise<StoreBenchRow[]> {
  const rows: StoreBenchRow[] = [];
  for (const n of sizes) {
    const driver = measuring(makeDriver());
    const run = `bench-${n}-${Date.now()}`;
    const ours = createStateStore({ driver, prefix: `${run}/ours/` }).forUser('bench');
    const reference = new ReferenceStore(driver, `${run}/ref/`);
    const list = Array.from({ length: n }, (_, i) => message(i));
    await ours.saveList('s', 'memory', list);
    await reference.saveList('bench', 's', 'memory', list);
    const grown = [...list, message(n)];
    const compacted = [
      { role: 'system', content: `summary of ${n} turns` },
      ...list.slice(-Math.ceil(n / 10)),
    ];
    const ops: Array<[string, () => Promise<unknown>, () => Promise<unknown>]> = [
      [
        'save unchanged',
        () => ours.saveList('s', 'memory', list),
        () => reference.saveList('bench', 's', 'memory', list),
      ],
      [
        'append 1 (saveList)',
        () => ours.saveList('s', 'memory', grown),
        () => reference.saveList('bench', 's', 'memory', grown),
      ],
      ['read whole list', () => ours.getList('s', 'memory'), () => reference.getList('bench', 's', 'memory')],
    ];
    for (const [operation, a, b] of ops) {
      rows.push({ n, operation, ours: await driver.measure(a), reference: await driver.measure(b) });
    }
    // Folding is amortized: 64 single appends, folds included, per append.
    const appends = 64;
    let state: { count: number; hash: string } = await ours.getList('s', 'memory', { limit: 0 });
    let refList = grown;
    const ourTotal = await driver.measure(async () => {
      for (let i = 0; i < appends; i++) {
        state = await ours.appendList('s', 'memory', [message(n + 1 + i)], {
          expectedCount: state.count,
          expectedHash: state.hash,
        });
      }
    });
    const refTotal = await driver.measure(async () => {
      for (let i = 0; i < appends; i++) {
        refList = [...refList, message(n + 1 + i)];
        await reference.saveList('bench', 's', 'memory', refList);
      }
    });
    const per = (m: StoreBenchRow['ours']) => ({
      requests: m.requests / appends,
      bytesUp: Math.round(m.bytesUp / appends),
      bytesDown: Math.round(m.bytesDown / appends),
      ms: m.ms / appends,
    });
    rows.push({
      n,
      operation: `append 1, amortized over ${appends} (folds included)`,
      ours: per(ourTotal),
      reference: per(refTotal),
    });
    rows.push({
      n,
      operation: 'compaction (ours archives the old list)',
      ours: await driver.measure(() => ours.saveList('s', 'memory', compacted)),
      reference: await driver.measure(() => reference.saveList('bench', 's', 'memory', compacted)),
    });
    await driver.close();
  }
  return rows;
}

/** A counting driver that also counts bytes downloaded, with a `measure` helper. */
function measuring(inner: ObjectStoreDriver) {
  const driver = counting(inner);
  let bytesDown = 0;
  const get = driver.get;
  driver.get = async (...args) => {
    const object = await get(...args);
    bytesDown += object.body.byteLength;
    return object;
  };
  return Object.assign(driver, {
    async measure(fn: () => Promise<unknown>) {
      driver.reset();
      bytesDown = 0;
      const started = performance.now();
      await fn();
      return {
        requests: driver.total(),
        bytesUp: driver.bytesPut,
        bytesDown,
        ms: performance.now() - started,
      };
    },
  });
}

/** The rows as a Markdown table. */
export function storeTable(rows: StoreBenchRow[]): string {
  const kb = (b: number) => (b < 10_240 ? `${b} B` : `${(b / 1024).toFixed(0)} KB`);
  const lines = [
    '| N | operation | requests (ours / ref) | bytes up (ours / ref) | bytes down (ours / ref) | ms (ours / ref) |',
    '|---:|---|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const req = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(2));
    lines.push(
      `| ${r.n} | ${r.operation} | ${req(r.ours.requests)} / ${req(r.reference.requests)} | ${kb(r.ours.bytesUp)} / ${kb(r.reference.bytesUp)} | ${kb(r.ours.bytesDown)} / ${kb(r.reference.bytesDown)} | ${r.ours.ms.toFixed(1)} / ${r.reference.ms.toFixed(1)} |`,
    );
  }
  return lines.join('\n');
}
