/**
 * Bytes written while a list grows by appends of 1, 50 or 1,000 items (docs/DESIGN.md, "CAS format": levels):
 * the bytes of its segments or logs over the list's own bytes (L), and its largest head write, each
 * against its ceiling. Counted at the driver by object name (segments `.list~g~`, logs `.list~l~`,
 * heads `.list.hash`), on the s3 driver (CAS) and the oss driver (the append format).
 */
import type { ObjectStoreDriver } from '../lib/drivers/types.js';
import { createStateStore, type ListFormatName } from '../lib/store/store.js';
import { message } from './store-bench.js';

/** How a list is built: appends of `batch` items up to `items`, then `singles` appends of one. */
export interface GrowthCase {
  readonly batch: number;
  readonly items: number;
  readonly singles?: number;
}

export interface GrowthRow extends GrowthCase {
  readonly format: ListFormatName;
  /** The list's bytes (its items as one JSON array). */
  readonly listBytes: number;
  /** Bytes written into segments (CAS) or logs and segments (append format), over `listBytes`. */
  readonly ratio: number;
  /** The largest head write, and the largest batch's bytes (CAS). */
  readonly maxHead: number;
  readonly maxBatch: number;
  readonly ceiling: string;
  readonly holds: boolean;
}

/** The CAS format's head cap (`listHeadBytes`, the store's default). */
const HEAD_BYTES = 116 * 1024;

/** The rows' cases: the full run, and the smoke (CI). */
export const GROWTH_CASES: readonly GrowthCase[] = [
  { batch: 1, items: 2000 },
  { batch: 50, items: 5000 },
  { batch: 1000, items: 20_000, singles: 200 },
];
export const GROWTH_SMOKE: readonly GrowthCase[] = [
  { batch: 1, items: 300 },
  { batch: 50, items: 1000 },
  { batch: 1000, items: 3000, singles: 50 },
];

/** The ceiling of a row: ≤ 7 L (CAS), ≤ 1.5 L built by 1,000-item appends and in the append format; a head write ≤ listHeadBytes + the batch. */
function ceilingOf(format: ListFormatName, c: GrowthCase, ratio: number, maxHead: number, maxBatch: number) {
  if (format === 'append') return { ceiling: '≤ 1.5 L', holds: ratio <= 1.5 };
  const most = c.batch >= 1000 ? 1.5 : 7;
  return {
    ceiling: `≤ ${most} L, a head write ≤ listHeadBytes + the batch`,
    holds: ratio <= most && maxHead <= HEAD_BYTES + maxBatch,
  };
}

/** Builds one list per case on `driver` (under `prefix`) and measures it. */
export async function runGrowthBench(
  driver: ObjectStoreDriver,
  prefix: string,
  cases: readonly GrowthCase[],
  /** Default: the driver's (CAS where it has conditional overwrite). */
  listFormat?: ListFormatName,
): Promise<GrowthRow[]> {
  const rows: GrowthRow[] = [];
  for (const [i, c] of cases.entries()) {
    const written = { segments: 0, maxHead: 0 };
    const size = (body: string | Uint8Array) =>
      typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    const counted: ObjectStoreDriver = Object.create(driver);
    counted.put = (name, body, options) => {
      if (name.includes('.list~g~') || name.includes('.list~l~')) written.segments += size(body);
      if (name.endsWith('.list.hash')) written.maxHead = Math.max(written.maxHead, size(body));
      return driver.put(name, body, options);
    };
    counted.append = (name, body, options) => {
      if (name.includes('.list~l~')) written.segments += size(body);
      return driver.append(name, body, options);
    };
    const format: ListFormatName =
      listFormat ?? (driver.capabilities.conditionalOverwrite ? 'cas' : 'append');
    const store = createStateStore({ driver: counted, prefix: `${prefix}${i}/`, listFormat: format });
    const user = store.forUser('bench');
    let count = 0;
    let listBytes = 0;
    let maxBatch = 0;
    const append = async (n: number) => {
      const items = Array.from({ length: n }, (_, j) => message(count + j));
      const bytes = Buffer.byteLength(JSON.stringify(items));
      listBytes += bytes;
      maxBatch = Math.max(maxBatch, bytes);
      await user.appendList('s', 'l', items, { expectedCount: count });
      count += n;
    };
    while (count < c.items) await append(Math.min(c.batch, c.items - count));
    for (let k = 0; k < (c.singles ?? 0); k++) await append(1);
    const ratio = written.segments / listBytes;
    rows.push({
      ...c,
      format,
      listBytes,
      ratio,
      maxHead: written.maxHead,
      maxBatch,
      ...ceilingOf(format, c, ratio, written.maxHead, maxBatch),
    });
  }
  return rows;
}

/** The rows as a Markdown table. */
export function growthTable(rows: readonly GrowthRow[]): string {
  const kib = (b: number) => `${(b / 1024).toFixed(0)} KiB`;
  const lines = [
    '| format | built by | items | L | segment / log bytes written | largest head write | ceiling |',
    '|---|---|---:|---:|---:|---:|---|',
  ];
  for (const r of rows)
    lines.push(
      `| ${r.format} | appends of ${r.batch.toLocaleString('en')}${r.singles ? `, then ${r.singles} of 1` : ''} | ${(r.items + (r.singles ?? 0)).toLocaleString('en')} | ${(r.listBytes / 1024 / 1024).toFixed(1)} MiB | ${r.ratio.toFixed(2)} L | ${r.format === 'cas' ? kib(r.maxHead) : '—'} | ${r.ceiling}${r.holds ? ' ✓' : ' **✗**'} |`,
    );
  return lines.join('\n');
}
