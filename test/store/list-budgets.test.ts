/**
 * The CAS list format's request and byte budgets (issue "Storage v2", the budget table), counted on
 * the memory driver with the default sizes: an existing session, steady state, 1 KB items.
 * GET-class = get + head; PUT-class = put + copy + list + deleteMany (S3 bills LIST and the
 * multi-object delete at the PUT rate); a single delete is free on S3 and counted as a request.
 */
import { describe, expect, it } from 'vitest';
import { growthTable, runGrowthBench } from '../../bench/growth-bench.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import type { SessionStore } from '../../lib/contract/types.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createStateStore } from '../../lib/store/store.js';
import { kbItem, kbItems, measurer, roundTrips } from './wrappers.js';

const KIB = 1024;
const MIB = 1024 * KIB;
const item = kbItem;
const items = kbItems;

function setup() {
  const driver = roundTrips(createMemoryDriver());
  const user = createStateStore({ driver }).forUser('budget');
  const measure = measurer(driver);
  return { driver, user, measure };
}

/** Appends `n` items one call at a time from `count`, measuring each call. */
async function appendEach(
  user: SessionStore,
  measure: ReturnType<typeof setup>['measure'],
  from: number,
  n: number,
) {
  const calls = [];
  let hash = (await user.getList('s', 'l', { limit: 0 })).hash;
  for (let i = from; i < from + n; i++) {
    const m = await measure(() =>
      user.appendList('s', 'l', [item(i)], { expectedCount: i, expectedHash: hash }),
    );
    hash = m.result.hash;
    calls.push(m);
  }
  return calls;
}

describe('CAS list budgets (memory driver, counted)', () => {
  it('item size: 1 KB', () => {
    expect(Buffer.byteLength(JSON.stringify(item(7)))).toBe(1024);
    expect(Buffer.byteLength(JSON.stringify(item(12_345)))).toBe(1024);
  });

  it('appendList of 1 KB: exactly 3 requests, 1 PUT, 2 round trips; a sealing call ≤ 6, ≤ 2 PUT, ≤ 4 round trips, at most once per 32; mean ≤ 1.05 PUT; bytes ≤ 112 KiB, within 15 % from N = 1,000 to N = 100,000; no LIST', async () => {
    const means = [];
    for (const start of [1_000, 100_000]) {
      const { user, measure } = setup();
      await user.saveList('s', 'l', items(0, start));
      const calls = await appendEach(user, measure, start, 10_000);
      const plain = calls.filter((c) => c.putClass === 1 && c.requests === 3);
      const sealing = calls.filter((c) => !(c.putClass === 1 && c.requests === 3));
      for (const c of plain) expect([c.gets, c.trips]).toEqual([2, 2]);
      for (const c of sealing) {
        expect(c.requests).toBeLessThanOrEqual(6);
        expect(c.putClass).toBeLessThanOrEqual(2);
        expect(c.trips).toBeLessThanOrEqual(4);
      }
      expect(sealing.length).toBeGreaterThan(10);
      expect(sealing.length).toBeLessThanOrEqual(calls.length / 32);
      expect(calls.reduce((sum, c) => sum + c.lists, 0)).toBe(0);
      const meanPuts = calls.reduce((sum, c) => sum + c.putClass, 0) / calls.length;
      expect(meanPuts).toBeLessThanOrEqual(1.05);
      const meanBytes = calls.reduce((sum, c) => sum + c.bytesPut, 0) / calls.length;
      expect(meanBytes).toBeLessThanOrEqual(112 * KIB);
      means.push(meanBytes);
      // Read back exactly, in order.
      const all = await user.getList('s', 'l');
      expect(all.count).toBe(start + 10_000);
      expect(all.hash).toBe(chainHash(EMPTY_HASH, items(0, start + 10_000)));
    }
    const [small, large] = means as [number, number];
    expect(Math.abs(large - small) / small).toBeLessThanOrEqual(0.15);
  });

  it('reads: last 50 in 1 round trip of 2 GET; the whole list ≤ 2 round trips, ≤ 5 + ⌈L / 4 MiB⌉ GET, ≤ 1.1 L + 128 KiB read; a page anywhere ≤ 3 round trips, ≤ 4 GET, ≤ page + 1 MiB read; no LIST', async () => {
    const { user, measure } = setup();
    await user.saveList('s', 'l', items(0, 6_000));
    // Appended one at a time: the segments seals and merges leave, not only those a rewrite packs.
    await appendEach(user, measure, 6_000, 3_000);
    const count = 9_000;
    const last = await measure(() => user.getList('s', 'l', { last: 50 }));
    expect(last.result.items).toEqual(items(count - 50, count));
    expect([last.gets, last.trips, last.lists]).toEqual([2, 1, 0]);

    const whole = await measure(() => user.getList('s', 'l'));
    const bytes = Buffer.byteLength(JSON.stringify(whole.result.items));
    expect(whole.result.items.length).toBe(count);
    expect(whole.trips).toBeLessThanOrEqual(2);
    expect(whole.gets).toBeLessThanOrEqual(5 + Math.ceil(bytes / (4 * MIB)));
    expect(whole.bytesGot).toBeLessThanOrEqual(1.1 * bytes + 128 * KIB);
    expect(whole.lists).toBe(0);

    for (let offset = 0; offset < count; offset += 331) {
      const page = await measure(() => user.getList('s', 'l', { offset, limit: 50 }));
      expect(page.result.offset).toBe(offset);
      expect(page.result.items.length).toBeGreaterThan(0);
      expect(page.result.items).toEqual(items(offset, offset + page.result.items.length));
      expect(page.result.baseHash).toBe(chainHash(EMPTY_HASH, items(0, offset)));
      expect(page.trips).toBeLessThanOrEqual(3);
      expect(page.gets).toBeLessThanOrEqual(4);
      expect(page.bytesGot).toBeLessThanOrEqual(Buffer.byteLength(JSON.stringify(page.result.items)) + MIB);
      expect(page.lists).toBe(0);
    }
  });

  it('saveList unchanged: 2 GET, no write; grown by ≤ 16 KiB: as appendList', async () => {
    const { user, measure } = setup();
    await user.saveList('s', 'l', items(0, 2_000));
    const same = await measure(() => user.saveList('s', 'l', items(0, 2_000)));
    expect(same.result.action).toBe('unchanged');
    expect([same.gets, same.putClass, same.requests]).toEqual([2, 0, 2]);
    const grown = await measure(() => user.saveList('s', 'l', items(0, 2_015)));
    expect(grown.result.action).toBe('appended');
    expect([grown.requests, grown.putClass, grown.trips, grown.lists]).toEqual([3, 1, 2, 0]);
  });
});

describe('bytes written while a list grows (no merge cascade; bench/growth-bench.ts on memory)', () => {
  const cases = [
    { batch: 1, items: 1500 },
    { batch: 50, items: 3000 },
    { batch: 1000, items: 10_000, singles: 200 },
  ];
  for (const listFormat of ['cas', 'append'] as const)
    it(`${listFormat}: ${listFormat === 'cas' ? 'segment bytes ≤ 7 L for appends of 1 and 50 items, ≤ 1.5 L built by 1,000-item appends (then single ones); a head write ≤ listHeadBytes + the batch' : 'log and segment bytes ≤ 1.5 L in all'}`, async () => {
      const rows = await runGrowthBench(createMemoryDriver(), 'p/', cases, listFormat);
      console.log(growthTable(rows));
      expect(rows.map((r) => r.format)).toEqual([listFormat, listFormat, listFormat]);
      for (const r of rows) expect(r.holds, `appends of ${r.batch}: ${r.ratio.toFixed(2)} L`).toBe(true);
      if (listFormat === 'cas') expect(rows[2]?.ratio).toBeLessThanOrEqual(1.5);
    });
});
