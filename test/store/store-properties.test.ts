/**
 * Store properties on the memory driver: request budgets (counted, not timed), id encoding
 * (fast-check), crash safety at every request of multi-request operations, and expiry on a fake clock.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AppendConflictError, FencedError, PartialDeleteError } from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { decodeId, encodeId } from '../../lib/contract/ids.js';
import { LIMITS } from '../../lib/contract/limits.js';
import { MAX_KEY_BYTES } from '../../lib/drivers/common.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { layoutFor } from '../../lib/store/layout.js';
import { createStateStore, type StateStoreOptions } from '../../lib/store/store.js';
import { counting, faulty, roundTrips } from './wrappers.js';

const item = (i: number) => ({ role: 'user', content: `turn ${i} ${'x'.repeat(200)}` });
const items = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => item(from + i));

describe('request budgets (an existing session, no marker cache; the list budgets are in list-budgets.test.ts and append-budgets.test.ts)', () => {
  const driver = roundTrips(createMemoryDriver());
  const user = createStateStore({ driver }).forUser('budget');
  const measure = async (fn: () => Promise<unknown>) => {
    driver.reset();
    driver.resetWaves();
    await fn();
    return {
      requests: driver.total(),
      trips: driver.waves(),
      bytes: driver.bytesPut,
      calls: { ...driver.calls },
    };
  };

  it('get of a single value: at most 2 requests in 1 round trip', async () => {
    await user.save('s', 'plan', { a: 1 });
    const m = await measure(() => user.get('s', 'plan'));
    expect(m.requests).toBeLessThanOrEqual(2);
    expect(m.trips).toBe(1);
  });

  it('save of a single value: at most 3 requests (2 round trips: the marker and the head, then the PUT) with or without a token, +1 for a higher token', async () => {
    await user.save('s', 'plan', 1);
    const plain = await measure(() => user.save('s', 'plan', 2));
    expect(plain.requests).toBeLessThanOrEqual(3);
    expect(plain.trips).toBeLessThanOrEqual(2);
    const first = await measure(() => user.save('s', 'plan', 3, { token: 10 }));
    expect(first.requests).toBeLessThanOrEqual(4);
    const again = await measure(() => user.save('s', 'plan', 4, { token: 10 }));
    expect(again.requests).toBeLessThanOrEqual(3);
    expect(again.trips).toBeLessThanOrEqual(2);
  });

  it('saveList unchanged: at most 3 reads and no write', async () => {
    await user.saveList('s', 'same', items(0, 100));
    const m = await measure(() => user.saveList('s', 'same', items(0, 100)));
    expect(m.calls.put + m.calls.delete + m.calls.copy + m.calls.deleteMany).toBe(0);
    expect(m.requests).toBeLessThanOrEqual(3);
  });

  it('getList of the whole list of 60 items: 1 round trip, 2 requests (they are all in the head)', async () => {
    await user.saveList('s', 'read', items(0, 50));
    for (let i = 0; i < 10; i++)
      await user.appendList('s', 'read', [item(50 + i)], { expectedCount: 50 + i });
    const m = await measure(() => user.getList('s', 'read'));
    expect(m.trips).toBe(1);
    expect(m.requests).toBe(2);
  });

  it('listSessionIds: one list call for up to 1,000 sessions, whatever they hold', async () => {
    const lister = createStateStore({ driver }).forUser('many');
    for (let i = 0; i < 30; i++) {
      await lister.save(`s${i}`, 'a', 1);
      await lister.saveList(`s${i}`, 'l', [1, 2, 3]);
    }
    const m = await measure(() => lister.listSessionIds());
    expect(m.calls.list).toBe(1);
    expect(m.requests).toBe(1);
  });
});

// biome-ignore lint/suspicious/noControlCharactersInRegex: ids with control characters are refused, so not generated
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

describe('ids: encoding properties (fast-check)', () => {
  const special = fc.constantFrom(
    '/',
    '..',
    '.',
    '%',
    ' ',
    '~',
    '!',
    'anon',
    'a.list',
    'b.json',
    'ü',
    '😀',
    'sandbox/session/1',
  );
  const id = (max: number) =>
    fc
      .oneof(
        fc.string({ minLength: 1, maxLength: 24, unit: 'grapheme' }),
        special,
        fc.string({ unit: fc.constantFrom('a', '/', '.', '~') }),
      )
      .filter((s) => s.trim() !== '' && !CONTROL.test(s) && Buffer.byteLength(s) <= max);

  it('no two distinct (user, session, key) triples share an object; every id decodes exactly', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(id(128), id(180), id(128)), {
          minLength: 2,
          maxLength: 12,
          selector: (t) => t.join('\u0000'),
        }),
        (triples) => {
          const names = new Set<string>();
          for (const [user, session, key] of triples) {
            const layout = layoutFor('p/', user);
            for (const name of [
              layout.value(session, key),
              layout.listJson(session, key),
              layout.marker(session),
            ]) {
              if (name === layout.marker(session)) continue;
              expect(names.has(name)).toBe(false);
              names.add(name);
            }
            expect(decodeId('userId', encodeId('userId', user))).toBe(user);
            expect(decodeId('sessionId', encodeId('sessionId', session))).toBe(session);
            expect(decodeId('key', encodeId('key', key))).toBe(key);
            expect(encodeId('sessionId', session)).not.toMatch(/[~/]/);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('names built from maximum-length ids fit S3 and OSS (1,023 bytes)', () => {
    const worst = (bytes: number) => '\u{10FFFF}'.repeat(bytes / 4);
    const layout = layoutFor('p'.repeat(LIMITS.prefix - 1).concat('/'), worst(LIMITS.userId));
    const session = worst(LIMITS.sessionId);
    const key = worst(LIMITS.key);
    const names = [
      layout.value(session, key),
      layout.listJson(session, key),
      layout.listHash(session, key),
      layout.commitRecord(session, 'c'.repeat(64)),
      layout.segment(session, key, 'z'.repeat(24), 2 ** 53 - 1, 2 ** 53 - 1, 2 ** 53 - 1, 'f'.repeat(12)),
      layout.listItem(session, key, 'z'.repeat(24), 2 ** 53 - 1, 2 ** 53 - 1, 'f'.repeat(12)),
      layout.log(session, key, 'z'.repeat(24), 2 ** 53 - 1, 2 ** 53 - 1, 'f'.repeat(12)),
      `${layout.archive(session, key, 'z'.repeat(24), 2 ** 53 - 1)}~${'9'.repeat(16)}~${'f'.repeat(64)}`,
      layout.marker(session),
      layout.tombstone(session),
    ];
    for (const name of names) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(MAX_KEY_BYTES);
  });
});

describe('crash safety: a failure before, between and after every request', () => {
  /** Runs `op` with a fault at each request in turn; then checks the state and that a retry completes. */
  async function everyFault(
    setup: (store: ReturnType<typeof createStateStore>) => Promise<void>,
    op: (store: ReturnType<typeof createStateStore>) => Promise<unknown>,
    check: (store: ReturnType<typeof createStateStore>, acknowledged: boolean) => Promise<void>,
  ) {
    let faults = 0;
    for (const after of [false, true]) {
      for (let n = 1; n < 40; n++) {
        const driver = faulty(createMemoryDriver());
        // Small list caps: the operations seal and merge within the few items of a test.
        const store = createStateStore({ driver, listHeadBytes: 300, listSealBytes: 256 });
        await setup(store);
        driver.arm(n, after);
        const acknowledged = await op(store).then(
          () => true,
          () => false,
        );
        const fired = driver.fired;
        driver.disarm();
        await check(store, acknowledged);
        if (!fired) break;
        faults++;
        // A retry completes the operation, without duplicates.
        await op(store).catch((error: unknown) => {
          if (!(error instanceof AppendConflictError)) throw error;
        });
        await check(store, true);
      }
    }
    expect(faults).toBeGreaterThan(4);
  }

  it('appendList: the items are there exactly once, or (unacknowledged) not at all', async () => {
    const base = items(0, 5);
    await everyFault(
      async (store) => {
        await store.forUser('u').saveList('s', 'l', base);
      },
      (store) =>
        store
          .forUser('u')
          .appendList('s', 'l', items(5, 7), { expectedCount: 5, expectedHash: chainHash(EMPTY_HASH, base) }),
      async (store, acknowledged) => {
        const list = await store.forUser('u').getList('s', 'l');
        if (acknowledged) expect(list.items).toEqual(items(0, 7));
        else expect([5, 7]).toContain(list.count);
        expect(list.items).toEqual(items(0, list.count));
        expect(list.hash).toBe(chainHash(EMPTY_HASH, list.items));
      },
    );
  });

  it('saveList rewrite: the old list or the new one, never a mix; the old one archived when replaced', async () => {
    const old = items(0, 6);
    const compacted = [{ summary: 'turns 0-5' }];
    await everyFault(
      async (store) => {
        await store.forUser('u').saveList('s', 'l', old);
      },
      (store) => store.forUser('u').saveList('s', 'l', compacted),
      async (store, acknowledged) => {
        const u = store.forUser('u');
        const list = await u.getList('s', 'l');
        if (acknowledged) expect(list.items).toEqual(compacted);
        else expect([old, compacted]).toContainEqual(list.items);
        if (list.count === 1) {
          const archives = await u.listArchives('s', 'l');
          expect(archives.map((a) => a.count)).toContain(6);
        }
      },
    );
  });

  it('first write of a session and a fenced save: all or nothing', async () => {
    await everyFault(
      async () => {},
      (store) => store.forUser('u').save('new', 'k', { v: 1 }, { token: 3 }),
      async (store, acknowledged) => {
        const value = await store.forUser('u').get('new', 'k');
        if (acknowledged) expect(value).toEqual({ v: 1 });
        else expect([undefined, { v: 1 }]).toContainEqual(value);
      },
    );
  });
});

describe('expiry on a fake clock', () => {
  const DAY = 24 * 60 * 60 * 1000;

  const HOUR = 60 * 60 * 1000;
  /** A store of user `u` under `p/` on a counted memory driver, both on a clock `advance` moves; keep-alive 1 hour. */
  function onFakeClock(options: Partial<StateStoreOptions> = {}) {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const clock = () => now;
    const driver = counting(createMemoryDriver({ now: clock }));
    const user = createStateStore({
      driver,
      now: clock,
      keepAliveMs: HOUR,
      prefix: 'p/',
      ...options,
    }).forUser('u');
    return { driver, user, advance: (ms: number) => (now += ms) };
  }

  it('by default no .list.json is written: not by rewrites, not by the keep-alive (which then costs the marker and a LIST)', async () => {
    for (const listFormat of ['cas', 'append'] as const) {
      const { driver, user, advance } = onFakeClock({ listFormat });
      await user.appendList('s', 'l', [1, 2], { expectedCount: 0 });
      await user.saveList('s', 'l', [9]); // a rewrite
      advance(HOUR + 1);
      driver.reset();
      await user.save('s', 'tick', 1); // the marker's keep-alive
      expect(driver.puts.filter((name) => name.endsWith('.list.json'))).toEqual([]);
      await expect(driver.head('p/u/s/l.list.json')).rejects.toThrow();
      // The keep-alive's extra: the marker's rewrite and one LIST (fresh objects are not refreshed).
      expect(driver.puts.filter((name) => name.includes('~sessions/'))).toHaveLength(1);
      expect(driver.calls.list).toBe(1);
    }
  });

  it('.list.json (the reference materialization, LIST_JSON=reference) is brought up to date at most once per keep-alive interval when it lags (CAS)', async () => {
    const { driver, user, advance } = onFakeClock({ listJson: 'reference' });
    const json = 'p/u/s/l.list.json';
    const materialized = async () =>
      JSON.parse(Buffer.from((await driver.get(json)).body).toString()) as unknown[];
    await user.appendList('s', 'l', [1, 2], { expectedCount: 0 });
    await expect(driver.head(json)).rejects.toThrow(); // appends do not write it
    advance(HOUR + 1);
    await user.save('s', 'tick', 1); // the marker's keep-alive: .list.json follows the head
    expect(await materialized()).toEqual([1, 2]);
    await user.appendList('s', 'l', [3], { expectedCount: 2 });
    driver.reset();
    advance(HOUR / 2);
    await user.save('s', 'tick', 2); // within the interval: nothing more
    expect(driver.puts.filter((name) => name === json)).toEqual([]);
    expect(await materialized()).toEqual([1, 2]);
    advance(HOUR);
    await user.save('s', 'tick', 3);
    expect(await materialized()).toEqual([1, 2, 3]);
    expect((await driver.head(json)).metadata).toMatchObject({
      count: '3',
      hash: chainHash(EMPTY_HASH, [1, 2, 3]),
    });
    // Up to date: the next keep-alive reads its stamp and writes nothing.
    driver.reset();
    advance(HOUR + 1);
    await user.save('s', 'tick', 4);
    expect(driver.puts.filter((name) => name === json)).toEqual([]);
  });

  it('an over-age marker makes the whole session absent; writing again starts empty; activity keeps it alive', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const clock = () => now;
    const driver = createMemoryDriver({ now: clock });
    const user = createStateStore({ driver, now: clock, retentionDays: 30 }).forUser('u');
    await user.save('idle', 'a', 'old');
    await user.saveList('idle', 'l', ['old']);
    await user.save('active', 'a', 'kept');
    for (let day = 0; day < 40; day++) {
      now += DAY;
      await user.appendList('active', 'turns', [day], { expectedCount: day });
    }
    expect(await user.exists('idle')).toBe(false);
    expect(await user.get('idle', 'a')).toBeUndefined();
    expect((await user.getList('idle', 'l')).items).toEqual([]);
    expect((await user.listSessionIds()).sessions.map((s) => s.sessionId)).toEqual(['active']);
    await user.save('idle', 'b', 'new');
    expect(await user.get('idle', 'a')).toBeUndefined();
    expect((await user.getList('idle', 'l')).items).toEqual([]);
    expect(await user.exists('active')).toBe(true);
    expect(await user.get('active', 'a')).toBe('kept');
  });

  it('a stale token holder cannot write into a session that a newer holder re-created', async () => {
    const user = createStateStore({ driver: createMemoryDriver() }).forUser('u');
    await user.save('s', 'k', 1, { token: 1 });
    await user.delete('s', { token: 2 });
    await user.save('s', 'k', 2, { token: 3 });
    await expect(user.appendList('s', 'l', [1], { expectedCount: 0, token: 2 })).rejects.toBeInstanceOf(
      FencedError,
    );
  });
});

describe('failures are reported, never swallowed (reference fault 8)', () => {
  it('deleting a session whose objects cannot all be deleted lists every one left behind, and the session is gone', async () => {
    const failing = new Set<string>();
    const driver = createMemoryDriver({
      deleteFault: (key) => (failing.has(key) ? 'AccessDenied' : undefined),
    });
    const user = createStateStore({ driver, prefix: 'p/' }).forUser('u');
    await user.save('s', 'a', 1);
    await user.save('s', 'b', 2);
    failing.add('p/u/s/b.json');
    const error = await user.delete('s').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PartialDeleteError);
    expect((error as PartialDeleteError).failures).toEqual([
      { key: 'p/u/s/b.json', code: 'AccessDenied', message: 'injected fault' },
    ]);
    expect(await user.exists('s')).toBe(false);
    expect(await user.get('s', 'b')).toBeUndefined();
  });
});
