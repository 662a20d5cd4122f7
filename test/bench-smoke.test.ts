/** The store benchmark at its smallest size, as CI's smoke test of `npm run bench`. */
import { describe, expect, it } from 'vitest';
import { runStoreBench, storeTable } from '../bench/store-bench.js';
import { createMemoryDriver } from '../lib/drivers/memory.js';

describe('store benchmark (smoke, N = 10)', () => {
  it('measures every operation and beats the reference pattern where the design says it must', async () => {
    const rows = await runStoreBench(() => createMemoryDriver(), [10]);
    const table = storeTable(rows);
    expect(table.split('\n')).toHaveLength(2 + 5);
    const op = (name: string) => rows.find((r) => r.operation.startsWith(name));
    expect(op('save unchanged')?.ours.bytesUp).toBe(0);
    expect(op('save unchanged')?.ours.requests).toBeLessThanOrEqual(3);
    expect(op('append 1 (saveList)')?.ours.bytesUp).toBeLessThan(
      op('append 1 (saveList)')?.reference.bytesUp ?? 0,
    );
    // An unchanged save reads the manifest, not the whole list.
    expect(op('save unchanged')?.ours.bytesDown).toBeLessThan(op('save unchanged')?.reference.bytesDown ?? 0);
    // A compaction archives the old list, gzip-compressed: more than the new content alone, less than the old list raw.
    expect(op('compaction')?.ours.bytesUp).toBeGreaterThan(2 * 900);
    expect(op('compaction')?.ours.bytesUp).toBeLessThan(10 * 900);
  });
});
