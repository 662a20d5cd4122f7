/**
 * The append list format's budgets (issue "Storage v2", the append-format column), counted on the
 * memory driver with the default sizes (1 MiB logs): an existing session, steady state, 1 KB items.
 * GET-class = get + head; a write = put + append + copy; LIST counted apart (0 in every row).
 * Then the properties on the OSS front (ali-oss through the local front, 16 KiB logs): 500 appends
 * across rollovers read back exactly, a lost append answer applied once, 16 racing appenders.
 */
import { describe, expect, inject, it } from 'vitest';
import { AppendConflictError } from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { ObjectStoreError } from '../../lib/drivers/errors.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createOssDriver } from '../../lib/drivers/oss.js';
import type { AppendObjectOptions, ObjectStoreDriver } from '../../lib/drivers/types.js';
import { createStateStore, type StateStoreOptions } from '../../lib/store/store.js';
import { OSS_CREDENTIALS } from '../servers/global-setup.js';
import { counting, kbItem, kbItems, measurer, roundTrips } from './wrappers.js';

const KIB = 1024;
const MIB = 1024 * KIB;
const item = kbItem;
const items = kbItems;
const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

function setup(options: Partial<StateStoreOptions> = {}) {
  const memory = createMemoryDriver();
  const driver = roundTrips(memory);
  const user = createStateStore({ driver, listFormat: 'append', ...options }).forUser('budget');
  const measure = measurer(driver);
  /** Bytes of the list's logs and segments as stored. */
  const stored = async () =>
    (await memory.list({ prefix: 'agent-state/budget/s/l.list~l~' })).objects.reduce((n, o) => n + o.size, 0);
  return { driver, memory, user, measure, stored };
}

describe('append list budgets (memory driver, default sizes, counted)', () => {
  const { user, measure, stored } = setup();
  const N = 10_000;
  const calls: Array<Awaited<ReturnType<typeof measure>>> = [];

  it('appendList of 1 KB, 10,000 times: ≤ 4 requests, exactly 1 write, ≤ 3 round trips (rollovers apart); mean ≤ 4 KiB written; no LIST; read back exactly', async () => {
    await user.save('s', 'other', 1); // the session exists: steady state
    let hash = EMPTY_HASH;
    for (let i = 0; i < N; i++) {
      const m = await measure(() =>
        user.appendList('s', 'l', [item(i)], { expectedCount: i, expectedHash: hash }),
      );
      hash = m.result.hash;
      calls.push(m);
    }
    const steady = calls.slice(1); // the first call creates the list
    const plain = steady.filter((c) => c.writes === 1);
    const rolling = steady.filter((c) => c.writes !== 1);
    for (const c of plain) {
      expect(c.requests).toBeLessThanOrEqual(4);
      expect(c.trips).toBeLessThanOrEqual(3);
    }
    // A rollover: the sealing append, the successor, the pointer (and the sealed log read once).
    expect(rolling.length).toBeGreaterThan(5);
    expect(rolling.length).toBeLessThanOrEqual(Math.ceil((N * 1025) / MIB));
    for (const c of rolling) {
      expect(c.writes).toBeLessThanOrEqual(3);
      expect(c.requests).toBeLessThanOrEqual(7);
    }
    expect(calls.reduce((n, c) => n + c.lists, 0)).toBe(0);
    const meanBytes = steady.reduce((n, c) => n + c.bytesPut, 0) / steady.length;
    expect(meanBytes).toBeLessThanOrEqual(4 * KIB);
    const meanWrites = steady.reduce((n, c) => n + c.writes, 0) / steady.length;
    expect(meanWrites).toBeLessThanOrEqual(1.01);
    console.log(
      `append format, 10,000 appends of 1 KB: ${plain.length} plain calls of ${Math.max(...plain.map((c) => c.requests))} requests, ` +
        `${rolling.length} rollovers; mean ${meanWrites.toFixed(4)} writes, ${meanBytes.toFixed(0)} bytes written`,
    );
    const all = await user.getList('s', 'l');
    expect(all.count).toBe(N);
    expect(all.items).toEqual(items(0, N));
    expect(all.hash).toBe(chainHash(EMPTY_HASH, items(0, N)));
  });

  it('reads: last 50 ≤ 3 GET in ≤ 2 round trips; the whole list ≤ 3 round trips, ≤ 3 + ⌈L / 1 MiB⌉ GET, ≤ 1.1 × stored + 64 KiB read; a page anywhere ≤ 3 round trips, ≤ 4 GET, ≤ page + 1 MiB read; no LIST', async () => {
    const last = await measure(() => user.getList('s', 'l', { last: 50 }));
    expect(last.result.items).toEqual(items(N - 50, N));
    expect(last.result.offset).toBe(N - 50);
    expect(last.result.baseHash).toBe(chainHash(EMPTY_HASH, items(0, N - 50)));
    expect(last.gets).toBeLessThanOrEqual(3);
    expect(last.trips).toBeLessThanOrEqual(2);
    expect(last.lists).toBe(0);

    const whole = await measure(() => user.getList('s', 'l'));
    const L = jsonBytes(whole.result.items);
    const logs = await stored();
    expect(whole.result.items.length).toBe(N);
    expect(whole.trips).toBeLessThanOrEqual(3);
    expect(whole.gets).toBeLessThanOrEqual(3 + Math.ceil(L / MIB));
    expect(whole.bytesGot).toBeLessThanOrEqual(1.1 * logs + 64 * KIB);
    expect(whole.lists).toBe(0);

    let worst = { trips: 0, gets: 0, over: -Infinity };
    for (let offset = 0; offset < N; offset += 97) {
      const page = await measure(() => user.getList('s', 'l', { offset, limit: 50 }));
      expect(page.result.offset).toBe(offset);
      expect(page.result.items.length).toBeGreaterThan(0);
      expect(page.result.items).toEqual(items(offset, offset + page.result.items.length));
      expect(page.result.baseHash).toBe(chainHash(EMPTY_HASH, items(0, offset)));
      expect(page.result.count).toBe(N);
      expect(page.trips).toBeLessThanOrEqual(3);
      expect(page.gets).toBeLessThanOrEqual(4);
      expect(page.bytesGot).toBeLessThanOrEqual(jsonBytes(page.result.items) + MIB);
      expect(page.lists).toBe(0);
      worst = {
        trips: Math.max(worst.trips, page.trips),
        gets: Math.max(worst.gets, page.gets),
        over: Math.max(worst.over, page.bytesGot - jsonBytes(page.result.items)),
      };
    }
    console.log(
      `append format reads at 10,000 items (${(L / MIB).toFixed(2)} MiB, ${(logs / MIB).toFixed(2)} MiB stored): ` +
        `last 50: ${last.gets} GET, ${last.trips} trips; whole: ${whole.gets} GET, ${whole.trips} trips, ${whole.bytesGot} bytes; ` +
        `pages: ≤ ${worst.gets} GET, ≤ ${worst.trips} trips, ≤ page + ${worst.over} bytes`,
    );
  });

  it('saveList unchanged: ≤ 3 GET, no write; grown by ≤ 16 KiB: as appendList', async () => {
    const same = await measure(() => user.saveList('s', 'l', items(0, N)));
    expect(same.result.action).toBe('unchanged');
    expect(same.gets).toBeLessThanOrEqual(3);
    expect(same.writes).toBe(0);
    expect(same.lists).toBe(0);
    const grown = await measure(() => user.saveList('s', 'l', items(0, N + 15)));
    expect(grown.result).toMatchObject({ action: 'appended', count: N + 15 });
    expect(grown.requests).toBeLessThanOrEqual(4);
    expect(grown.writes).toBe(1);
    expect(grown.trips).toBeLessThanOrEqual(3);
    expect(grown.lists).toBe(0);
  });

  it('a list one whole-list save created (20,000 items, 20 MiB) and one grown by a save of 10,000 more: last 50 ≤ 3 GET in ≤ 2 round trips; grown by 1 is an append; objects of about a log each', async () => {
    const big = setup();
    await big.user.save('s', 'other', 1); // the session exists
    const created = await big.measure(() => big.user.saveList('s', 'l', items(0, 20_000)));
    expect(created.result).toMatchObject({ action: 'created', count: 20_000 });
    expect(created.trips).toBeLessThanOrEqual(4);
    // Packed like a rewrite: segments of about a log, the newest half log in the first log.
    const objects = (await big.memory.list({ prefix: 'agent-state/budget/s/l.list~l~' })).objects;
    expect(objects.length).toBeGreaterThan(15);
    for (const o of objects) expect(o.size).toBeLessThanOrEqual(MIB + 64 * KIB);
    const check = async (n: number) => {
      const last = await big.measure(() => big.user.getList('s', 'l', { last: 50 }));
      expect(last.result.items).toEqual(items(n - 50, n));
      expect(last.result.baseHash).toBe(chainHash(EMPTY_HASH, items(0, n - 50)));
      expect(last.gets).toBeLessThanOrEqual(3);
      expect(last.trips).toBeLessThanOrEqual(2);
      expect(last.bytesGot).toBeLessThanOrEqual(128 * KIB);
      const page = await big.measure(() => big.user.getList('s', 'l', { offset: 7_777, limit: 50 }));
      expect(page.result.items).toEqual(items(7_777, 7_827));
      expect(page.gets).toBeLessThanOrEqual(4);
      expect(page.bytesGot).toBeLessThanOrEqual(jsonBytes(page.result.items) + MIB);
    };
    await check(20_000);
    const grown = await big.measure(() => big.user.saveList('s', 'l', items(0, 20_001)));
    expect(grown.result).toMatchObject({ action: 'appended', count: 20_001 });
    expect(grown.requests).toBeLessThanOrEqual(4);
    expect(grown.writes).toBe(1);
    expect(grown.trips).toBeLessThanOrEqual(3);
    expect(grown.bytesPut).toBeLessThanOrEqual(4 * KIB);
    // The first log holds at most half a log: the next 400 appends of 1 KB do not roll over.
    for (let n = 20_001; n < 20_401; n++) {
      const m = await big.measure(() => big.user.appendList('s', 'l', [item(n)], { expectedCount: n }));
      expect(m.writes).toBe(1);
      expect(m.requests).toBeLessThanOrEqual(4);
    }
    await check(20_401);
    // A save that grows the list by 10,000 items is one append (records of ≤ 16 KiB, the log
    // sealed and rolled over once); reads stay as cheap after it.
    const much = await big.measure(() => big.user.saveList('s', 'l', items(0, 30_401)));
    expect(much.result).toMatchObject({ action: 'appended', count: 30_401 });
    expect(much.writes).toBeLessThanOrEqual(3);
    await check(30_401);
    expect((await big.user.getList('s', 'l')).items).toEqual(items(0, 30_401));
  });

  it('the locked agent turn (get state, last 50, append 2, fenced save of state), mean over 64 turns: ≤ 2.05 writes, no LIST', async () => {
    const turn = setup();
    await turn.user.saveList('t', 'memory', items(0, 2_000));
    await turn.user.save('t', 'agent_state', { turn: 0 }, { token: 1 });
    let writes = 0;
    let lists = 0;
    for (let i = 0; i < 64; i++) {
      const m = await turn.measure(async () => {
        await turn.user.get('t', 'agent_state');
        const { count, hash } = await turn.user.getList('t', 'memory', { last: 50 });
        await turn.user.appendList('t', 'memory', items(count, count + 2), {
          expectedCount: count,
          expectedHash: hash,
          token: 1,
        });
        await turn.user.save('t', 'agent_state', { turn: i + 1 }, { token: 1 });
      });
      writes += m.writes;
      lists += m.lists;
    }
    expect(writes / 64).toBeLessThanOrEqual(2.05);
    expect(lists).toBe(0);
  });
});

/** The OSS front (ali-oss against the local OSS emulation), a fresh prefix per store. */
function ossDriver(): ObjectStoreDriver {
  return createOssDriver({
    bucket: inject('servers').bucket,
    endpoint: inject('servers').oss,
    ...OSS_CREDENTIALS,
  });
}

const msg = (i: number) => ({ role: 'user', n: i, content: `turn ${i} ${'y'.repeat(400 + (i % 5) * 150)}` });

describe('append list format on the OSS front (16 KiB logs)', () => {
  it('is the default there; 500 appends roll over more than 10 times and read back exactly: whole, by pages at many offsets, by last', async () => {
    const driver = counting(ossDriver());
    const prefix = `append-${Date.now()}-${Math.random().toString(36).slice(2)}/`;
    const user = createStateStore({ driver, prefix, listLogBytes: 16 * KIB }).forUser('u');
    const all = Array.from({ length: 500 }, (_, i) => msg(i));
    let hash = EMPTY_HASH;
    for (let i = 0; i < all.length; i++)
      ({ hash } = await user.appendList('s', 'l', [all[i]], { expectedCount: i, expectedHash: hash }));
    expect(hash).toBe(chainHash(EMPTY_HASH, all));
    const logs = (await driver.list({ prefix: `${prefix}u/s/l.list~l~` })).objects;
    expect(logs.length).toBeGreaterThan(10);
    expect(driver.calls.copy).toBe(0);
    const whole = await user.getList('s', 'l');
    expect(whole.items).toEqual(all);
    for (let offset = 0; offset < all.length; offset += 23) {
      const page = await user.getList('s', 'l', { offset, limit: 40 });
      expect(page.offset).toBe(offset);
      expect(page.baseHash).toBe(chainHash(EMPTY_HASH, all.slice(0, offset)));
      expect(page.items.length).toBeGreaterThan(0);
      expect(page.items).toEqual(all.slice(offset, offset + page.items.length));
    }
    // `last` is served from the current log (which carries a quarter log of its predecessor's
    // newest records): with 16 KiB logs a long `last` is cut from its old end.
    for (const last of [1, 5, 30]) {
      const page = await user.getList('s', 'l', { last });
      expect(page.offset).toBeGreaterThanOrEqual(all.length - last);
      expect(page.items).toEqual(all.slice(page.offset));
      expect(page.items.length).toBeGreaterThanOrEqual(Math.min(last, 5));
    }
    // A rewrite keeps the history in the archive and starts a new generation; a delete too.
    expect((await user.saveList('s', 'l', all.slice(450))).action).toBe('rewritten');
    expect((await user.getList('s', 'l')).items).toEqual(all.slice(450));
    await user.deleteList('s', 'l');
    expect((await user.getList('s', 'l')).count).toBe(0);
    const archives = await user.listArchives('s', 'l');
    expect(archives.map((a) => a.count)).toEqual([500, 50]);
    await driver.close();
  });

  it('a retried append whose first attempt landed (its answer lost) is applied once', async () => {
    const inner = ossDriver();
    let lose = 0;
    const lossy: ObjectStoreDriver = Object.assign(Object.create(inner) as ObjectStoreDriver, {
      append: async (key: string, body: Uint8Array | string, options: AppendObjectOptions) => {
        const done = await inner.append(key, body, options);
        if (lose > 0) {
          lose--;
          throw new ObjectStoreError('answer lost after the append', inner.name, { retryable: true });
        }
        return done;
      },
    });
    const prefix = `append-lost-${Date.now()}/`;
    const user = createStateStore({ driver: lossy, prefix, listLogBytes: 16 * KIB }).forUser('u');
    const all: unknown[] = [];
    let hash = EMPTY_HASH;
    for (let i = 0; i < 60; i++) {
      // Every third append loses its answer, the first one included (the list's creation).
      lose = i % 3 === 0 ? 1 : 0;
      const result = await user.appendList('s', 'l', [msg(i)], {
        expectedCount: i,
        expectedHash: hash,
        writeId: `turn-${i}`,
      });
      all.push(msg(i));
      expect(result).toMatchObject({ count: i + 1, hash: chainHash(EMPTY_HASH, all) });
      ({ hash } = result);
      // The caller retrying the same write id gets the same answer and writes nothing more.
      if (i % 10 === 0)
        expect(
          await user.appendList('s', 'l', [msg(i)], {
            expectedCount: i,
            expectedHash: chainHash(EMPTY_HASH, all.slice(0, i)),
            writeId: `turn-${i}`,
          }),
        ).toMatchObject({ count: i + 1 });
    }
    expect((await user.getList('s', 'l')).items).toEqual(all);
    await inner.close();
  });

  it('a first save of a long list (packed, committed by creating the first log) racing 5 others: one creates, the others rewrite; a lost answer is still "created"', async () => {
    const driver = counting(ossDriver());
    const prefix = `append-packed-${Date.now()}/`;
    const user = createStateStore({ driver, prefix, listLogBytes: 16 * KIB }).forUser('u');
    const contents = Array.from({ length: 6 }, (_, w) =>
      Array.from({ length: 120 + w }, (_, i) => msg(i * 7 + w)),
    );
    const answers = await Promise.all(contents.map((c) => user.saveList('s', 'race', c)));
    expect(answers.filter((a) => a.action === 'created').length).toBe(1);
    expect(answers.filter((a) => a.action === 'rewritten').length).toBe(5);
    const final = await user.getList('s', 'race');
    const winner = contents.findIndex((c) => chainHash(EMPTY_HASH, c) === final.hash);
    expect(winner).toBeGreaterThanOrEqual(0);
    expect(final.items).toEqual(contents[winner]);
    // Every other content was archived by the rewrite that replaced it.
    const archived = await user.listArchives('s', 'race');
    expect(archived.length).toBe(5);
    // Losers leave nothing behind: the objects are the chain the pointer leads to and the
    // superseded generations (left to the keep-alive), each a whole generation.
    expect((await user.getList('s', 'race', { last: 10 })).items).toEqual(contents[winner]?.slice(-10));

    const inner = ossDriver();
    let lose = 1;
    const lossy: ObjectStoreDriver = Object.assign(Object.create(inner) as ObjectStoreDriver, {
      append: async (key: string, body: Uint8Array | string, options: AppendObjectOptions) => {
        const done = await inner.append(key, body, options);
        if (lose > 0 && options.position === 0 && key.endsWith('~0000000000000000~0000000000000000~0')) {
          lose--;
          throw new ObjectStoreError('answer lost after the append', inner.name, { retryable: true });
        }
        return done;
      },
    });
    const other = createStateStore({ driver: lossy, prefix, listLogBytes: 16 * KIB }).forUser('v');
    const long = contents[0] as unknown[];
    expect(await other.saveList('s', 'lost', long)).toMatchObject({ action: 'created', count: long.length });
    expect(lose).toBe(0);
    expect((await other.getList('s', 'lost')).items).toEqual(long);
    await driver.close();
    await inner.close();
  });

  it('16 appenders racing: exactly one winner per position, nothing lost or doubled', async () => {
    const driver = ossDriver();
    const prefix = `append-race-${Date.now()}/`;
    const user = createStateStore({ driver, prefix, listLogBytes: 16 * KIB }).forUser('u');
    await user.appendList('s', 'r', [{ seed: true }], { expectedCount: 0 });
    const acked: string[] = [];
    const winners = new Map<number, string>();
    await Promise.all(
      Array.from({ length: 16 }, async (_, w) => {
        for (let n = 0; n < 8; n++) {
          const id = `${w}.${n}`;
          for (let attempt = 0; attempt < 200; attempt++) {
            const { count, hash } = await user.getList('s', 'r', { limit: 0 });
            try {
              const r = await user.appendList('s', 'r', [{ id, pad: 'p'.repeat(300) }], {
                expectedCount: count,
                expectedHash: hash,
              });
              // Exactly one winner per position.
              expect(winners.has(count)).toBe(false);
              winners.set(count, id);
              expect(r.count).toBe(count + 1);
              acked.push(id);
              break;
            } catch (error) {
              if (!(error instanceof AppendConflictError)) throw error;
            }
          }
        }
      }),
    );
    expect(acked.length).toBe(16 * 8);
    const ids = (await user.getList('s', 'r')).items.slice(1).map((x) => (x as { id: string }).id);
    expect(ids.length).toBe(16 * 8);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual([...acked].sort());
    expect(ids).toEqual([...winners.entries()].sort((a, b) => a[0] - b[0]).map(([, id]) => id));
    await driver.close();
  });
});
