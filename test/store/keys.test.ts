/**
 * `listKeys` on the memory driver, both list formats: 1,190 keys, odd ones
 * among them (encoded, unicode, keys whose names sort against their keys' order), read back in the
 * UTF-8 order of the key by every combination of limit, cursor, prefix and startAfter, checked
 * against a model; the same with LIST pages cut to 7 entries (so page ends fall between a key's
 * names and its extensions'); only keys, never internal objects; and its request counts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { encodeId } from '../../lib/contract/ids.js';
import type { ListKeysOptions, SessionStore } from '../../lib/contract/types.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import type { ListOptions, ObjectStoreDriver } from '../../lib/drivers/types.js';
import { boundAfter, compareUtf8 } from '../../lib/store/keys.js';
import { createStateStore } from '../../lib/store/store.js';
import { counting } from './wrappers.js';

const PREFIX = 'agent-state/';

/**
 * The model: `families` × 4 plain keys and `odd` × 7 encoded ones, values, lists and both (1,190
 * keys at the default sizes).
 */
function model(families = 180, odd = 60) {
  const values: string[] = [];
  const lists: string[] = [];
  for (let i = 0; i < families; i++) {
    // `k<i>` sorts before `k<i>-a`, `k<i>-x` and `k<i>.y`, but its names after theirs.
    values.push(`k${i}`, `k${i}-a`, `k${i}-x`, `k${i}.y`);
    if (i % 5 === 0) lists.push(`k${i}`);
    if (i % 7 === 0) lists.push(`k${i}-x-z`);
  }
  for (let i = 0; i < odd; i++) {
    values.push(`ü${i}`, `a b ${i}`, `../${i}`, `~${i}`, `x${i}.json`, `😀${i}`, `～${i}`);
    if (i % 4 === 0) lists.push(`a b ${i}`, `x${i}.list`);
  }
  values.push('.', '..', '-', '_', 'A', 'Z', 'z', '/', ' x');
  const keys = [...new Set([...values, ...lists])].sort(compareUtf8);
  return { values, lists, keys };
}

async function filled(
  listFormat: 'cas' | 'append',
  wrap?: (d: ObjectStoreDriver) => ObjectStoreDriver,
  size?: [number, number],
) {
  const memory = createMemoryDriver();
  const driver = counting(wrap ? wrap(memory) : memory);
  const user = createStateStore({ driver, listFormat }).forUser('keys');
  const m = model(...(size ?? []));
  for (const k of m.values) await user.save('s', k, { k });
  for (const k of m.lists) await user.saveList('s', k, [k, 1]);
  return { driver, memory, user, ...m };
}

/** Every key `listKeys` answers from `options` on, page after page; and the pages. */
async function walk(user: SessionStore, options: ListKeysOptions) {
  const keys: string[] = [];
  const pages = [];
  let cursor: string | undefined;
  do {
    const page = await user.listKeys('s', { ...options, ...(cursor ? { cursor } : {}) });
    pages.push(page);
    const seen = [...new Set([...page.values, ...page.lists].map((e) => e.key))];
    // Each kind in order; together one range of keys.
    expect(page.values.map((v) => v.key)).toEqual(page.values.map((v) => v.key).sort(compareUtf8));
    expect(page.lists.map((l) => l.key)).toEqual(page.lists.map((l) => l.key).sort(compareUtf8));
    expect(seen.length).toBeLessThanOrEqual(options.limit ?? 1000);
    keys.push(...seen.sort(compareUtf8));
    cursor = page.nextCursor;
  } while (cursor && pages.length < 2000);
  return { keys, pages };
}

const expected = (keys: readonly string[], options: ListKeysOptions) =>
  keys.filter(
    (k) =>
      k.startsWith(options.prefix ?? '') &&
      (options.startAfter === undefined || compareUtf8(k, options.startAfter) > 0),
  );

// (The memory driver sorts every key it holds for each LIST: pages of a few keys are asked only
// within a prefix, to keep the test fast.)
const QUERIES: ListKeysOptions[] = [
  {},
  { limit: 97 },
  { prefix: 'k1' },
  { prefix: 'k1', limit: 9 },
  { prefix: 'k12-' },
  { prefix: 'ü' },
  { prefix: 'a b 1', limit: 3 },
  { prefix: '.' },
  { prefix: 'x1', limit: 11 },
  { startAfter: 'k150' },
  { startAfter: 'k150', limit: 130 },
  { startAfter: 'k15', prefix: 'k1', limit: 6 },
  { startAfter: 'a b 50', limit: 170 },
  { startAfter: '😀', limit: 50 },
  { startAfter: '～' },
];

for (const listFormat of ['cas', 'append'] as const) {
  describe(`listKeys on memory, ${listFormat} lists`, () => {
    it('1,190 keys read back in UTF-8 order by limit, cursor, prefix and startAfter, as the model says; values with their versions, lists with their count and hash', async () => {
      const { user, keys, values, lists } = await filled(listFormat);
      expect(keys.length).toBeGreaterThan(1000);
      for (const query of QUERIES) {
        const got = await walk(user, query);
        expect(got.keys, JSON.stringify(query)).toEqual(expected(keys, query));
      }
      const { pages } = await walk(user, {});
      expect(pages.length).toBe(2);
      const all = pages.flatMap((p) => p.values);
      expect(all.map((v) => v.key)).toEqual([...new Set(values)].sort(compareUtf8));
      const some = all.filter((_, i) => i % 97 === 0);
      for (const v of some) expect(v.etag).toBe((await user.getVersioned('s', v.key))?.version);
      const shown = pages.flatMap((p) => p.lists);
      expect(shown.map((l) => l.key)).toEqual([...new Set(lists)].sort(compareUtf8));
      for (const l of shown) expect(l).toMatchObject({ count: 2, hash: chainHash(EMPTY_HASH, [l.key, 1]) });
    });

    it('the same with LIST pages of 7 entries: page ends fall between a key and its extensions', async () => {
      const small = (inner: ObjectStoreDriver): ObjectStoreDriver =>
        new Proxy(inner, {
          get(target, name, receiver) {
            if (name === 'list')
              return (o: ListOptions = {}) => target.list({ ...o, limit: Math.min(o.limit ?? 1000, 7) });
            const value = Reflect.get(target, name, receiver);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
      const { user, keys } = await filled(listFormat, small, [60, 6]);
      for (const query of [{}, { limit: 5 }, { prefix: 'k2', limit: 4 }, { startAfter: 'k20', limit: 8 }]) {
        const got = await walk(user, query);
        expect(got.keys, JSON.stringify(query)).toEqual(expected(keys, query));
      }
    });

    it('costs one LIST per 1,000 entries, one HEAD per value and (CAS) one GET per list; no internal object is a key', async () => {
      const { driver, memory, user, keys, values, lists } = await filled(listFormat);
      const folder = `${PREFIX}keys/s/`;
      // Objects the system adds (and a rewrite's archive and materialization): never keys.
      await user.saveList('s', 'k0', ['rewritten']);
      await user.deleteList('s', 'k5');
      for (const name of [
        '~ws~x/file',
        '~wsu~x/file',
        '~vu/k1~abc',
        'k1.list~a~zzz',
        'k1.list~g~zzz',
        'k1.list.json',
      ])
        await memory.put(`${folder}${name}`, '{}');
      await memory.put(`${folder}${encodeId('key', 'x0.list')}.list~i~zzz`, '{}');
      const listed = new Set(lists.filter((k) => k !== 'k5'));
      driver.reset();
      const { keys: got, pages } = await walk(user, {});
      expect(got).toEqual(keys.filter((k) => k !== 'k5' || values.includes(k)));
      expect(pages.flatMap((p) => p.lists).map((l) => l.key)).toEqual([...listed].sort(compareUtf8));
      expect(pages.flatMap((p) => p.lists).find((l) => l.key === 'k0')).toMatchObject({ count: 1 });
      const entries = new Set(values).size + 2 * listed.size + 20;
      // Page 1 lists the folder from its start; page 2 also lists the encoded names (whole).
      expect(driver.calls.list).toBeLessThanOrEqual(Math.ceil(entries / 1000) + 2 * pages.length);
      expect(driver.calls.head).toBe(new Set(values).size);
      // The marker per page, and the heads of the lists (the deleted one's too).
      const heads = listed.size + 1;
      if (listFormat === 'cas') expect(driver.calls.get).toBe(pages.length + heads);
      else expect(driver.calls.get).toBeLessThanOrEqual(pages.length + 2 * heads + 2);
      expect(driver.calls.put + driver.calls.delete + driver.calls.copy).toBe(0);
      console.log(
        `listKeys (${listFormat}) of ${got.length} keys in ${pages.length} pages: ${driver.calls.list} LIST, ${driver.calls.head} HEAD, ${driver.calls.get} GET`,
      );
    });
  });
}

describe('listKeys refuses bad options before any request', () => {
  it('names the bad option, and reads neither the marker nor any listing', async () => {
    const driver = counting(createMemoryDriver());
    const user = createStateStore({ driver }).forUser('keys');
    await user.save('s', 'a', { a: 1 });
    driver.reset();
    const bad: Array<[ListKeysOptions, string]> = [
      [{ limit: 0 }, 'limit'],
      [{ limit: 1.5 }, 'limit'],
      [{ cursor: 'not a cursor' }, 'cursor'],
      [{ prefix: 'x'.repeat(5000) }, 'prefix'],
    ];
    for (const [options, field] of bad) {
      await expect(user.listKeys('s', options), field).rejects.toMatchObject({ field });
      expect(driver.total(), field).toBe(0);
    }
    // A good page still reads.
    await expect(user.listKeys('s', { limit: 1 })).resolves.toMatchObject({ values: [{ key: 'a' }] });
    expect(driver.total()).toBeGreaterThan(0);
  });
});

describe('boundAfter (the end of what a listing has answered)', () => {
  const plain = fc.string({ minLength: 1, maxLength: 6, unit: fc.constantFrom(...'-.09AZ_az') });
  const name = fc.oneof(
    plain.map((k) => `${k}.json`),
    plain.map((k) => `${k}.list.hash`),
    plain.map((k) => `${k}.list~`),
    plain,
    fc.constantFrom('~', '!abc.json', '~ws~1/'),
  );
  it('is the least plain key whose list head sorts after the name; every key below it has both names at or before it', () => {
    fc.assert(
      fc.property(name, fc.array(plain, { maxLength: 40 }), (t, keys) => {
        const b = boundAfter(t);
        const headAfter = (k: string) => compareUtf8(`${k}.list.hash`, t) > 0;
        if (b === undefined) {
          for (const k of keys) expect(headAfter(k)).toBe(false);
          return;
        }
        expect(headAfter(b)).toBe(true);
        for (const k of keys) {
          if (compareUtf8(k, b) < 0) {
            expect(headAfter(k)).toBe(false);
            expect(compareUtf8(`${k}.json`, t)).toBeLessThanOrEqual(0);
          }
        }
      }),
      { numRuns: 3000 },
    );
  });
});
