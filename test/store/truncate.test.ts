/**
 * `truncateList` on the memory driver, counted: truncating a 20,000-item list of 1 KB
 * items to 19,000 reads and writes a small part of the list (the object the cut falls in, those
 * after it, the archive of the removed 1,000 items), where a whole-list save of the kept items
 * reads and writes all of it; in both formats, for a list made by one whole-list save and one grown
 * by appends. Then items stored as objects of their own across a truncate, and a truncated list in
 * a session kept active on a fake clock for 40 days, under the lifecycle rules: it reads back whole.
 */
import { describe, expect, it } from 'vitest';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import type { SessionStore } from '../../lib/contract/types.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createStateStore, type ListFormatName } from '../../lib/store/store.js';
import { seededRandom } from '../seeded-random.js';
import { kbItems, measurer, roundTrips } from './wrappers.js';

const KIB = 1024;
const MIB = 1024 * KIB;
const N = 20_000;
const KEEP = 19_000;

function setup(listFormat: ListFormatName) {
  const driver = roundTrips(createMemoryDriver());
  const user = createStateStore({ driver, listFormat }).forUser('t');
  const measure = measurer(driver);
  return { driver, user, measure };
}

/** 20,000 items: one whole-list save, or 10,000 and then appends of 10. */
async function build(user: SessionStore, session: string, how: 'save' | 'appends') {
  if (how === 'save') return (await user.saveList(session, 'l', kbItems(0, N))).hash;
  let { hash } = await user.saveList(session, 'l', kbItems(0, N / 2));
  for (let i = N / 2; i < N; i += 10)
    ({ hash } = await user.appendList(session, 'l', kbItems(i, i + 10), {
      expectedCount: i,
      expectedHash: hash,
    }));
  return hash;
}

const listBytes = Buffer.byteLength(JSON.stringify(kbItems(0, N)));

describe('truncateList budgets (memory driver, counted, default sizes)', () => {
  // Measured (bytes read / written; requests): CAS, saved whole: 3.5 MiB / 2.5 MiB (the cut
  // falls in a 3.5 MiB top segment: its 2,600 kept items are packed again), 3 GET, 3 PUT, 4 round
  // trips; CAS, grown by appends: 2.8 MiB / 1.8 MiB, 5 GET, 3 PUT (the cut falls in a merged
  // segment of up to 4 MiB: merges no longer fold every older segment into the newest, which
  // rewrote the list on every call, so the newest segments are not the smallest). Append format: 1.6 MiB /
  // 553 KiB and 1.5 MiB / 265 KiB, 5 GET, 4-5 writes, 6 round trips. A whole-list save of the 19,000
  // kept items (what a client does without truncate) reads 19 MiB and writes 18 MiB.
  const ceilings: Record<string, { got: number; put: number; gets: number; writes: number; trips: number }> =
    {
      'cas save': { got: 4 * MIB, put: 3 * MIB, gets: 3, writes: 3, trips: 4 },
      'cas appends': { got: 4 * MIB, put: 3 * MIB, gets: 5, writes: 3, trips: 4 },
      'append save': { got: 2 * MIB, put: 768 * KIB, gets: 5, writes: 5, trips: 6 },
      'append appends': { got: 2 * MIB, put: 384 * KIB, gets: 5, writes: 5, trips: 6 },
    };
  for (const listFormat of ['cas', 'append'] as const) {
    for (const how of ['save', 'appends'] as const) {
      it(`${listFormat} format, a list ${how === 'save' ? 'saved whole' : 'grown by appends'}: 20,000 → 19,000 items reads and writes a small part of the list; no LIST; the list reads back and goes on`, async () => {
        const { user, measure } = setup(listFormat);
        const hash = await build(user, 's', how);
        const cut = await measure(() => user.truncateList('s', 'l', { count: KEEP, expectedHash: hash }));
        const ceiling = ceilings[`${listFormat} ${how}`] as (typeof ceilings)[string];
        console.log(
          `truncate 20,000 → 19,000 (${listFormat}, ${how}): read ${(cut.bytesGot / MIB).toFixed(2)} MiB, wrote ${(cut.bytesPut / KIB).toFixed(0)} KiB of a ${(listBytes / MIB).toFixed(1)} MiB list; ${cut.gets} GET, ${cut.writes} writes, ${cut.trips} round trips`,
        );
        expect(cut.result).toEqual({
          action: 'truncated',
          count: KEEP,
          hash: chainHash(EMPTY_HASH, kbItems(0, KEEP)),
        });
        expect(cut.bytesGot).toBeLessThanOrEqual(ceiling.got);
        expect(cut.bytesPut).toBeLessThanOrEqual(ceiling.put);
        expect(cut.bytesGot).toBeLessThan(listBytes / 5);
        expect(cut.bytesPut).toBeLessThan(listBytes / 6);
        expect(cut.gets).toBeLessThanOrEqual(ceiling.gets);
        expect(cut.writes).toBeLessThanOrEqual(ceiling.writes);
        expect(cut.trips).toBeLessThanOrEqual(ceiling.trips);
        expect(cut.lists).toBe(0);

        expect((await user.getList('s', 'l', { last: 50 })).items).toEqual(kbItems(KEEP - 50, KEEP));
        const page = await user.getList('s', 'l', { offset: 18_990, limit: 20 });
        expect(page).toMatchObject({ items: kbItems(18_990, KEEP), count: KEEP, offset: 18_990 });
        const [archive] = await user.listArchives('s', 'l');
        expect(archive).toMatchObject({
          offset: KEEP,
          count: N - KEEP,
          hash: chainHash(EMPTY_HASH, kbItems(KEEP, N)),
        });
        expect((await user.getArchive('s', 'l', archive?.archiveId ?? ''))?.items).toEqual(kbItems(KEEP, N));
        const next = await measure(() =>
          user.appendList('s', 'l', kbItems(N, N + 1), {
            expectedCount: KEEP,
            expectedHash: cut.result.hash,
          }),
        );
        expect(next.result.count).toBe(KEEP + 1);
        expect(next.writes).toBe(1);
        const whole = await user.getList('s', 'l');
        expect(whole.hash).toBe(chainHash(EMPTY_HASH, [...kbItems(0, KEEP), ...kbItems(N, N + 1)]));

        if (listFormat === 'cas' && how === 'save') {
          // What a client does without truncate: a whole-list save of the kept items.
          const other = await build(user, 'o', 'save');
          expect(other).toBe(hash);
          const rewrite = await measure(() => user.saveList('o', 'l', kbItems(0, KEEP)));
          console.log(
            `the same by a whole-list save: read ${(rewrite.bytesGot / MIB).toFixed(2)} MiB, wrote ${(rewrite.bytesPut / MIB).toFixed(2)} MiB`,
          );
          expect(rewrite.bytesGot).toBeGreaterThan(4 * cut.bytesGot);
          expect(rewrite.bytesPut).toBeGreaterThan(4 * cut.bytesPut);
        }
      });
    }
  }
});

for (const listFormat of ['cas', 'append'] as const) {
  describe(`truncate at any position (${listFormat} format, small segments and logs)`, () => {
    it('300 truncates to seeded positions between seeded appends and whole-list saves: the list, its pages, its last items and each archive are exactly the model', async () => {
      const random = seededRandom(16);
      const user = createStateStore({
        driver: createMemoryDriver(),
        listFormat,
        listHeadBytes: 2048,
        listSealBytes: 512,
        listLogBytes: 2048,
      }).forUser('p');
      const item = (n: number) => ({ n, pad: 'q'.repeat(Math.floor(random() * 120)) });
      let model: unknown[] = [];
      let next = 0;
      let hash = EMPTY_HASH;
      let archives = 0;
      for (let step = 0; step < 300; step++) {
        // Grow: appends of 1 to 12 items (seals, merges, rollovers), now and then a whole-list save.
        const grow = Math.floor(random() * 4);
        for (let i = 0; i < grow; i++) {
          const more = Array.from({ length: 1 + Math.floor(random() * 12) }, () => item(next++));
          ({ hash } = await user.appendList('s', 'l', more, {
            expectedCount: model.length,
            expectedHash: hash,
          }));
          model = [...model, ...more];
        }
        if (random() < 0.03) {
          model = Array.from({ length: Math.floor(random() * 80) }, () => item(next++));
          const saved = await user.saveList('s', 'l', model);
          hash = saved.hash;
          if (saved.action === 'rewritten') archives++;
        }
        const keep = Math.floor(random() * (model.length + 1));
        const result = await user.truncateList('s', 'l', { count: keep, expectedHash: hash });
        const removed = model.slice(keep);
        model = model.slice(0, keep);
        hash = chainHash(EMPTY_HASH, model);
        expect(result).toEqual({ action: removed.length > 0 ? 'truncated' : 'unchanged', count: keep, hash });
        if (removed.length > 0) {
          archives++;
          const all = await user.listArchives('s', 'l');
          expect(all).toHaveLength(archives);
          const last = all.at(-1);
          expect(last).toMatchObject({
            offset: keep,
            count: removed.length,
            hash: chainHash(EMPTY_HASH, removed),
          });
          expect((await user.getArchive('s', 'l', last?.archiveId ?? ''))?.items).toEqual(removed);
        }
        if (step % 3 === 0) expect((await user.getList('s', 'l')).items).toEqual(model);
        const offset = Math.floor(random() * (model.length + 1));
        const page = await user.getList('s', 'l', { offset, limit: 5 });
        expect(page.offset).toBe(offset);
        expect(page.items).toEqual(model.slice(offset, offset + page.items.length));
        expect(page.baseHash).toBe(chainHash(EMPTY_HASH, model.slice(0, offset)));
        expect(page.hash).toBe(hash);
        // `last` may be cut at the old end of what the current log (CAS: the head) holds; never empty.
        const tail = await user.getList('s', 'l', { last: 3 });
        expect(tail.offset).toBeGreaterThanOrEqual(Math.max(0, model.length - 3));
        expect(tail.items).toEqual(model.slice(tail.offset));
        if (model.length > 0) expect(tail.items.length).toBeGreaterThan(0);
      }
      expect((await user.getList('s', 'l')).items).toEqual(model);
    });
  });
}

describe('append format: a generation whose first log holds no item', () => {
  // Its newest items all went into its segments (one over half a log; a truncate cut at an
  // object's end): `last` is answered from the newest segment (it was damage before).
  it('answers last: n after a whole-list save whose newest item is over half a log, and after a truncate at a segment end', async () => {
    const user = createStateStore({ driver: createMemoryDriver(), listFormat: 'append' }).forUser('a');
    const large = { content: 'b'.repeat(600 * KIB) };
    const { hash } = await user.saveList('s', 'l', [{ a: 1 }, large]);
    expect((await user.getList('s', 'l', { last: 1 })).items).toEqual([large]);
    expect((await user.getList('s', 'l', { last: 2 })).items).toEqual([{ a: 1 }, large]);
    const small = createStateStore({
      driver: createMemoryDriver(),
      listFormat: 'append',
      listLogBytes: 2048,
    }).forUser('a');
    const items = Array.from({ length: 40 }, (_, n) => ({ n, pad: 'p'.repeat(100) }));
    const saved = await small.saveList('s', 'l', items);
    // The first segment of a packed generation ends where the next one's first item is.
    const cut = await small.getList('s', 'l', { offset: 0, limit: 40 });
    const boundary = cut.items.length;
    expect(boundary).toBeLessThan(40);
    const done = await small.truncateList('s', 'l', { count: boundary, expectedHash: saved.hash });
    expect(done.count).toBe(boundary);
    const last = await small.getList('s', 'l', { last: 2 });
    expect(last.items).toEqual(items.slice(boundary - 2, boundary));
    expect(hash).not.toBe(saved.hash);
  });
});

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;
const big = (tag: string) => ({ role: 'tool', tag, content: 'b'.repeat(1536 * KIB) });
const msg = (i: number) => ({
  role: i % 2 ? 'assistant' : 'user',
  n: i,
  content: `turn ${i} ${'z'.repeat(150)}`,
});

for (const listFormat of ['cas', 'append'] as const) {
  describe(`a truncated list over time (${listFormat} format, fake clock)`, () => {
    it('keeps its items stored as objects of their own inside the kept prefix, archives those it removes, and reads back after 40 days of keep-alive under the lifecycle rules', async () => {
      let now = Date.parse('2026-01-01T00:00:00Z');
      const clock = () => now;
      const driver = createMemoryDriver({ now: clock });
      const retentionDays = 30;
      const graceDays = 2;
      const user = createStateStore({
        driver,
        now: clock,
        listFormat,
        listHeadBytes: 2048,
        listSealBytes: 1024,
        listLogBytes: 2048,
        retentionDays,
        stateGraceDays: graceDays,
      }).forUser('u');
      const session = 'agent-state/u/s/';
      const marker = 'agent-state/u/~sessions/s';
      // A list across several segments or logs, two items of its own among them.
      const items: unknown[] = [];
      let hash = EMPTY_HASH;
      for (let i = 0; i < 60; i++) {
        now += 60_000;
        const item = i === 5 ? big('kept') : i === 50 ? big('removed') : msg(i);
        ({ hash } = await user.appendList('s', 'l', [item], { expectedCount: i, expectedHash: hash }));
        items.push(item);
      }
      const cut = await user.truncateList('s', 'l', { count: 40, expectedHash: hash });
      expect(cut).toEqual({
        action: 'truncated',
        count: 40,
        hash: chainHash(EMPTY_HASH, items.slice(0, 40)),
      });
      const expected = items.slice(0, 40);
      hash = cut.hash;
      for (let i = 40; i < 55; i++) {
        now += 60_000;
        ({ hash } = await user.appendList('s', 'l', [msg(1000 + i)], {
          expectedCount: i,
          expectedHash: hash,
        }));
        expected.push(msg(1000 + i));
      }
      expect((await user.getList('s', 'l')).items).toEqual(expected);
      const [archive] = await user.listArchives('s', 'l');
      expect(archive).toMatchObject({ offset: 40, count: 20 });
      expect((await user.getArchive('s', 'l', archive?.archiveId ?? ''))?.items).toEqual(items.slice(40));

      // 40 days: the list is never touched; another key is written every 6 hours (keep-alive).
      let expired = 0;
      for (let t = 0; t < 40 * DAY; t += 6 * HOUR) {
        now += 6 * HOUR;
        await user.save('s', 'state', { t });
        const markerAge = now - (await driver.head(marker)).lastModified.getTime();
        for (const object of (await driver.list({ prefix: 'agent-state/u/' })).objects) {
          const age = now - object.lastModified.getTime();
          const isState = object.key.startsWith(session) && !object.key.includes('.list~a~');
          if (isState && age > (retentionDays + graceDays) * DAY) {
            await driver.delete(object.key);
            expired++;
          }
          if (isState) expect(age).toBeLessThanOrEqual(markerAge + graceDays * DAY);
        }
      }
      expect(expired).toBe(0);
      const whole = await user.getList('s', 'l');
      expect(whole.items).toEqual(expected);
      expect(whole.hash).toBe(hash);
      expect((await user.getList('s', 'l', { offset: 5, limit: 1 })).items).toEqual([big('kept')]);
      expect((await user.getList('s', 'l', { last: 4 })).items).toEqual(expected.slice(-4));
      // The removed item lives on in the archive only; the kept one is still an object of its own.
      const objects = (await driver.list({ prefix: `${session}l.list~i~` })).objects;
      expect(objects.length).toBeGreaterThanOrEqual(1);
      expect((await user.getArchive('s', 'l', archive?.archiveId ?? ''))?.items[10]).toEqual(big('removed'));
    });
  });
}
