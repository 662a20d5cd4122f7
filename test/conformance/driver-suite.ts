/**
 * The driver conformance suite: every `ObjectStoreDriver` runs it. A case is skipped only when the
 * driver's capabilities say it lacks what the case needs, and the skip names the capability.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  InvalidArgumentError,
  ObjectConditionFailedError,
  ObjectNotAppendableError,
  ObjectNotFoundError,
  RangeNotSatisfiableError,
  UnsupportedError,
} from '../../lib/drivers/errors.js';
import type { DriverCapabilities, ObjectStoreDriver } from '../../lib/drivers/types.js';

/** What a driver's test file hands the suite. */
export interface DriverHarness {
  readonly driver: ObjectStoreDriver;
  /** Makes the backend fail to delete exactly these keys (a real failure where the backend allows). */
  failDeletes(keys: string[]): Promise<void>;
  /** Undoes `failDeletes` and anything else the harness changed. */
  reset(): Promise<void>;
  close?(): Promise<void>;
}

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

/** Runs the conformance suite against the harness `make` returns. */
export function describeDriverConformance(label: string, make: () => Promise<DriverHarness>): void {
  describe(`driver conformance: ${label}`, () => {
    let h: DriverHarness;
    let d: ObjectStoreDriver;
    let caps: DriverCapabilities;
    let prefix: string;
    const k = (name: string) => `${prefix}${name}`;

    beforeAll(async () => {
      h = await make();
      d = h.driver;
      caps = d.capabilities;
      // One folder per run, so suites sharing a bucket never see each other's keys.
      prefix = `conf-${randomUUID()}/`;
    });
    afterAll(async () => {
      await h.reset();
      await h.close?.();
      await d.close();
    });

    /** Declares a case that needs a capability; the skip message names it. */
    function needs(capability: keyof DriverCapabilities, name: string, fn: () => Promise<void>) {
      it(name, async (ctx) => {
        const value = caps[capability];
        if (value === false || (Array.isArray(value) && value.length < 2)) {
          ctx.skip(`${label} lacks capability ${capability}`);
        }
        await fn();
      });
    }

    describe('round trips', () => {
      it('stores and returns a JSON document with its content type', async () => {
        const body = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] });
        const { etag } = await d.put(k('doc.json'), body, { contentType: 'application/json' });
        const got = await d.get(k('doc.json'));
        expect(text(got.body)).toBe(body);
        expect(got.etag).toBe(etag);
        expect(got.etag).not.toMatch(/"/);
        expect(got.contentType).toBe('application/json');
        expect(got.size).toBe(Buffer.byteLength(body));
      });

      it('stores every byte value unchanged', async () => {
        const body = new Uint8Array(512).map((_, i) => i % 256);
        await d.put(k('bytes'), body);
        expect(Buffer.from((await d.get(k('bytes'))).body).equals(Buffer.from(body))).toBe(true);
      });

      it('keeps non-ASCII keys and bodies apart and intact', async () => {
        const keys = ['ключ', '日本語/ファイル', 'emoji 😀 key', 'a b%20c', 'x~y!z'].map(k);
        await Promise.all(keys.map((key) => d.put(key, `body of ${key} — ünïcödé`)));
        for (const key of keys) expect(text((await d.get(key)).body)).toBe(`body of ${key} — ünïcödé`);
        const listed = (await d.list({ prefix })).objects.map((o) => o.key);
        for (const key of keys) expect(listed).toContain(key);
      });

      it('stores an empty body', async () => {
        await d.put(k('empty'), new Uint8Array(0));
        const got = await d.get(k('empty'));
        expect(got.body.byteLength).toBe(0);
        expect((await d.head(k('empty'))).size).toBe(0);
      });

      it('stores a 10 MB body', async () => {
        const body = randomBytes(10 * 1024 * 1024);
        await d.put(k('big'), body);
        const got = await d.get(k('big'));
        expect(got.size).toBe(body.length);
        expect(Buffer.from(got.body).equals(body)).toBe(true);
        await d.delete(k('big'));
      });

      it('returns metadata from get and head', async () => {
        await d.put(k('meta'), 'x', { metadata: { 'fencing-token': '42', kind: 'state' } });
        expect((await d.get(k('meta'))).metadata).toMatchObject({ 'fencing-token': '42', kind: 'state' });
        const head = await d.head(k('meta'));
        expect(head.metadata).toMatchObject({ 'fencing-token': '42', kind: 'state' });
        expect(head.lastModified.getTime()).toBeGreaterThan(Date.now() - 600_000);
      });

      needs('tags', 'stores tags and reads them with head', async () => {
        await d.put(k('tagged'), 'x', { tags: { kind: 'state', owner: 'a b' } });
        expect((await d.head(k('tagged'), { tags: true })).tags).toEqual({ kind: 'state', owner: 'a b' });
      });

      needs('storageClasses', 'stores the storage class asked for', async () => {
        const cls = caps.storageClasses[1] as string;
        await d.put(k('classy'), 'x', { storageClass: cls });
        expect((await d.head(k('classy'))).storageClass).toBe(cls);
      });

      it('changes the etag when the content changes', async () => {
        const a = await d.put(k('etag'), 'one');
        const b = await d.put(k('etag'), 'two');
        expect(a.etag).not.toBe(b.etag);
        expect((await d.head(k('etag'))).etag).toBe(b.etag);
      });
    });

    describe('missing objects', () => {
      it('get of a missing key is ObjectNotFoundError', async () => {
        await expect(d.get(k('nope'))).rejects.toBeInstanceOf(ObjectNotFoundError);
      });
      it('head of a missing key is ObjectNotFoundError', async () => {
        await expect(d.head(k('nope'))).rejects.toBeInstanceOf(ObjectNotFoundError);
      });
      it('delete of a missing key succeeds, and delete removes', async () => {
        await d.delete(k('never'));
        await d.put(k('gone'), 'x');
        await d.delete(k('gone'));
        await expect(d.get(k('gone'))).rejects.toBeInstanceOf(ObjectNotFoundError);
      });
    });

    describe('conditional writes', () => {
      it('create-only refuses an existing key and changes nothing', async () => {
        await d.put(k('once'), 'first', { ifNoneMatch: '*' });
        await expect(d.put(k('once'), 'second', { ifNoneMatch: '*' })).rejects.toBeInstanceOf(
          ObjectConditionFailedError,
        );
        expect(text((await d.get(k('once'))).body)).toBe('first');
      });

      it('create-only: of 8 concurrent creators exactly one wins', async () => {
        const results = await Promise.allSettled(
          Array.from({ length: 8 }, (_, i) => d.put(k('race'), `writer ${i}`, { ifNoneMatch: '*' })),
        );
        const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
        expect(won).toHaveLength(1);
        for (const r of results) {
          if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(ObjectConditionFailedError);
        }
        expect(text((await d.get(k('race'))).body)).toBe(`writer ${won[0]}`);
      });

      needs('conditionalOverwrite', 'if-match with the current etag overwrites', async () => {
        const { etag } = await d.put(k('cas'), 'v1');
        const next = await d.put(k('cas'), 'v2', { ifMatch: etag });
        expect(text((await d.get(k('cas'))).body)).toBe('v2');
        expect(next.etag).not.toBe(etag);
      });

      needs('conditionalOverwrite', 'if-match with a stale etag is refused and changes nothing', async () => {
        const { etag } = await d.put(k('cas2'), 'v1');
        await d.put(k('cas2'), 'v2');
        await expect(d.put(k('cas2'), 'v3', { ifMatch: etag })).rejects.toBeInstanceOf(
          ObjectConditionFailedError,
        );
        expect(text((await d.get(k('cas2'))).body)).toBe('v2');
      });

      needs('conditionalOverwrite', 'if-match on a missing key is refused', async () => {
        await expect(d.put(k('cas-missing'), 'v', { ifMatch: 'abc' })).rejects.toBeInstanceOf(
          ObjectConditionFailedError,
        );
        await expect(d.get(k('cas-missing'))).rejects.toBeInstanceOf(ObjectNotFoundError);
      });

      needs(
        'conditionalOverwrite',
        'if-match: of 8 concurrent writers with the same etag exactly one wins',
        async () => {
          const { etag } = await d.put(k('cas-race'), 'base');
          const results = await Promise.allSettled(
            Array.from({ length: 8 }, (_, i) => d.put(k('cas-race'), `w${i}`, { ifMatch: etag })),
          );
          expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        },
      );

      it('a conditional overwrite the backend cannot evaluate is refused, never applied', async (ctx) => {
        if (caps.conditionalOverwrite) ctx.skip(`${label} has capability conditionalOverwrite`);
        const { etag } = await d.put(k('no-cas'), 'v1');
        await expect(d.put(k('no-cas'), 'v2', { ifMatch: etag })).rejects.toBeInstanceOf(UnsupportedError);
        expect(text((await d.get(k('no-cas'))).body)).toBe('v1');
      });

      needs(
        'conditionalGet',
        'get with if-match reads the current version and refuses a stale one',
        async () => {
          const { etag } = await d.put(k('cget'), 'v1');
          expect(text((await d.get(k('cget'), { ifMatch: etag })).body)).toBe('v1');
          await d.put(k('cget'), 'v2');
          await expect(d.get(k('cget'), { ifMatch: etag })).rejects.toBeInstanceOf(
            ObjectConditionFailedError,
          );
        },
      );

      needs('conditionalDelete', 'delete with a stale etag is refused and keeps the object', async () => {
        const { etag } = await d.put(k('cdel'), 'v1');
        await d.put(k('cdel'), 'v2');
        await expect(d.delete(k('cdel'), { ifMatch: etag })).rejects.toBeInstanceOf(
          ObjectConditionFailedError,
        );
        const current = await d.head(k('cdel'));
        await d.delete(k('cdel'), { ifMatch: current.etag });
        await expect(d.head(k('cdel'))).rejects.toBeInstanceOf(ObjectNotFoundError);
      });
    });

    describe('ranged reads', () => {
      /** A 100-byte object whose byte i is i, so a slice shows where it came from. */
      const hundred = Uint8Array.from({ length: 100 }, (_, i) => i);
      const bytes = (from: number, to: number) => [...hundred.subarray(from, to + 1)];
      let etag: string;
      beforeAll(async () => {
        if (caps.ranges) ({ etag } = await d.put(k('range/100'), hundred));
      });

      needs('ranges', 'start-end: exactly those bytes, the whole size, the range returned', async () => {
        const got = await d.get(k('range/100'), { range: { start: 10, end: 19 } });
        expect([...got.body]).toEqual(bytes(10, 19));
        expect(got.size).toBe(100);
        expect(got.range).toEqual({ start: 10, end: 19 });
        expect(got.etag).toBe(etag);
      });

      needs('ranges', 'suffix: the last n bytes', async () => {
        const got = await d.get(k('range/100'), { range: { suffix: 10 } });
        expect([...got.body]).toEqual(bytes(90, 99));
        expect(got.size).toBe(100);
        expect(got.range).toEqual({ start: 90, end: 99 });
      });

      needs('ranges', '0-0: exactly one byte', async () => {
        const got = await d.get(k('range/100'), { range: { start: 0, end: 0 } });
        expect([...got.body]).toEqual([0]);
        expect(got.size).toBe(100);
        expect(got.range).toEqual({ start: 0, end: 0 });
      });

      needs('ranges', 'start without end: to the end of the object', async () => {
        const got = await d.get(k('range/100'), { range: { start: 95 } });
        expect([...got.body]).toEqual(bytes(95, 99));
        expect(got.range).toEqual({ start: 95, end: 99 });
      });

      needs('ranges', 'an end past the object is clipped', async () => {
        const got = await d.get(k('range/100'), { range: { start: 90, end: 500 } });
        expect([...got.body]).toEqual(bytes(90, 99));
        expect(got.size).toBe(100);
        expect(got.range).toEqual({ start: 90, end: 99 });
      });

      needs('ranges', 'a suffix longer than the object reads all of it', async () => {
        const got = await d.get(k('range/100'), { range: { suffix: 500 } });
        expect([...got.body]).toEqual(bytes(0, 99));
        expect(got.size).toBe(100);
        expect(got.range).toEqual({ start: 0, end: 99 });
      });

      needs('ranges', 'a start at or past the size is RangeNotSatisfiableError', async () => {
        await expect(d.get(k('range/100'), { range: { start: 100 } })).rejects.toBeInstanceOf(
          RangeNotSatisfiableError,
        );
        await expect(d.get(k('range/100'), { range: { start: 150, end: 200 } })).rejects.toBeInstanceOf(
          RangeNotSatisfiableError,
        );
      });

      needs('ranges', 'any range of an empty object is RangeNotSatisfiableError', async () => {
        await d.put(k('range/empty'), '');
        for (const range of [{ start: 0 }, { suffix: 10 }]) {
          await expect(d.get(k('range/empty'), { range })).rejects.toBeInstanceOf(RangeNotSatisfiableError);
        }
        expect((await d.get(k('range/empty'))).body.byteLength).toBe(0);
      });

      needs('ranges', 'a range of a missing key is ObjectNotFoundError', async () => {
        await expect(d.get(k('range/nope'), { range: { start: 0, end: 9 } })).rejects.toBeInstanceOf(
          ObjectNotFoundError,
        );
      });

      needs('ranges', 'a malformed range is InvalidArgumentError before any request', async () => {
        const bad = [{ start: -1 }, { start: 5, end: 4 }, { suffix: 0 }, { start: 1.5 }];
        for (const range of bad) {
          await expect(d.get(k('range/100'), { range })).rejects.toBeInstanceOf(InvalidArgumentError);
        }
      });

      it('if-match with a range: the current etag reads the bytes, a stale one is refused', async (ctx) => {
        for (const capability of ['ranges', 'conditionalGet'] as const)
          if (!caps[capability]) ctx.skip(`${label} lacks capability ${capability}`);
        const { etag: first } = await d.put(k('range/cas'), hundred);
        const got = await d.get(k('range/cas'), { ifMatch: first, range: { suffix: 5 } });
        expect([...got.body]).toEqual(bytes(95, 99));
        expect(got.etag).toBe(first);
        await d.put(k('range/cas'), hundred.subarray(0, 50));
        await expect(
          d.get(k('range/cas'), { ifMatch: first, range: { start: 0, end: 9 } }),
        ).rejects.toBeInstanceOf(ObjectConditionFailedError);
      });
    });

    describe('position append', () => {
      /** The error an append was refused with. */
      const refusal = (p: Promise<unknown>) =>
        p.then(
          () => {
            throw new Error('the append was acknowledged');
          },
          (e: unknown) => e as ObjectConditionFailedError,
        );

      needs('positionAppend', 'position 0 creates an absent object with the options given', async () => {
        const created = await d.append(k('ap/new'), 'hello', {
          position: 0,
          contentType: 'text/plain',
          metadata: { kind: 'log' },
        });
        expect(created.nextPosition).toBe(5);
        expect(created.etag).toMatch(/^[^"]+$/);
        const got = await d.get(k('ap/new'));
        expect(text(got.body)).toBe('hello');
        expect(got).toMatchObject({
          size: 5,
          etag: created.etag,
          contentType: 'text/plain',
          appendable: true,
        });
        expect(got.metadata).toEqual({ kind: 'log' });
        expect((await d.head(k('ap/new'))).appendable).toBe(true);
      });

      needs('positionAppend', 'appends at the current length; later options are ignored', async () => {
        const first = await d.append(k('ap/grow'), 'a', {
          position: 0,
          contentType: 'text/plain',
          metadata: { n: '1' },
        });
        const second = await d.append(k('ap/grow'), 'bc', {
          position: 1,
          contentType: 'application/json',
          metadata: { n: '2' },
        });
        expect(second.nextPosition).toBe(3);
        expect(second.etag).not.toBe(first.etag);
        const got = await d.get(k('ap/grow'), caps.conditionalGet ? { ifMatch: second.etag } : {});
        expect(text(got.body)).toBe('abc');
        expect(got.etag).toBe(second.etag);
        expect(got.contentType).toBe('text/plain');
        expect(got.metadata).toEqual({ n: '1' });
        const empty = await d.append(k('ap/grow'), '', { position: 3 });
        expect(empty.nextPosition).toBe(3);
        expect(text((await d.get(k('ap/grow'))).body)).toBe('abc');
      });

      needs('positionAppend', 'a wrong position writes nothing and carries the current length', async () => {
        await d.append(k('ap/wrong'), 'abc', { position: 0 });
        for (const position of [0, 1, 2, 4, 100]) {
          const error = await refusal(d.append(k('ap/wrong'), 'x', { position }));
          expect(error).toBeInstanceOf(ObjectConditionFailedError);
          expect(error).not.toBeInstanceOf(ObjectNotAppendableError);
          expect(error.nextPosition).toBe(3);
        }
        expect(text((await d.get(k('ap/wrong'))).body)).toBe('abc');
        const absent = await refusal(d.append(k('ap/absent'), 'x', { position: 5 }));
        expect(absent).toBeInstanceOf(ObjectConditionFailedError);
        expect(absent.nextPosition).toBe(0);
        await expect(d.head(k('ap/absent'))).rejects.toBeInstanceOf(ObjectNotFoundError);
      });

      needs('positionAppend', 'of 16 concurrent appenders at one position exactly one wins', async () => {
        const race = async (position: number) => {
          const results = await Promise.allSettled(
            Array.from({ length: 16 }, (_, i) => d.append(k('ap/race'), `<w${i}>`, { position })),
          );
          const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
          expect(won).toHaveLength(1);
          const winner = `<w${won[0]}>`;
          for (const r of results) {
            if (r.status === 'rejected') {
              expect(r.reason).toBeInstanceOf(ObjectConditionFailedError);
              expect((r.reason as ObjectConditionFailedError).nextPosition).toBe(position + winner.length);
            }
          }
          return winner;
        };
        const creator = await race(0);
        const next = await race(creator.length);
        expect(text((await d.get(k('ap/race'))).body)).toBe(creator + next);
      });

      it('ranged and suffix reads of an appendable object', async (ctx) => {
        for (const capability of ['positionAppend', 'ranges'] as const)
          if (!caps[capability]) ctx.skip(`${label} lacks capability ${capability}`);
        const hundred = Uint8Array.from({ length: 100 }, (_, i) => i);
        await d.append(k('ap/ranges'), hundred.subarray(0, 60), { position: 0 });
        await d.append(k('ap/ranges'), hundred.subarray(60), { position: 60 });
        const middle = await d.get(k('ap/ranges'), { range: { start: 55, end: 64 } });
        expect([...middle.body]).toEqual([...hundred.subarray(55, 65)]);
        expect(middle).toMatchObject({ size: 100, range: { start: 55, end: 64 } });
        const tail = await d.get(k('ap/ranges'), { range: { suffix: 10 } });
        expect([...tail.body]).toEqual([...hundred.subarray(90)]);
        expect(tail.range).toEqual({ start: 90, end: 99 });
        const clipped = await d.get(k('ap/ranges'), { range: { start: 95, end: 500 } });
        expect([...clipped.body]).toEqual([...hundred.subarray(95)]);
        const whole = await d.get(k('ap/ranges'), { range: { suffix: 500 } });
        expect(whole.body.byteLength).toBe(100);
        await expect(d.get(k('ap/ranges'), { range: { start: 100 } })).rejects.toBeInstanceOf(
          RangeNotSatisfiableError,
        );
      });

      needs(
        'positionAppend',
        'listed in key order among normal objects, pages included; deleted by delete and deleteMany',
        async () => {
          await d.put(k('ap/list/a'), 'normal');
          await d.append(k('ap/list/b'), 'appended', { position: 0 });
          await d.put(k('ap/list/c'), 'normal');
          await d.append(k('ap/list/d/e'), 'deeper', { position: 0 });
          const page = await d.list({ prefix: k('ap/list/') });
          expect(page.objects.map((o) => o.key)).toEqual([
            k('ap/list/a'),
            k('ap/list/b'),
            k('ap/list/c'),
            k('ap/list/d/e'),
          ]);
          const listed = page.objects.find((o) => o.key === k('ap/list/b'));
          expect(listed).toMatchObject({ size: 8, etag: (await d.head(k('ap/list/b'))).etag });
          const grouped = await d.list({ prefix: k('ap/list/'), delimiter: '/' });
          expect(grouped.objects.map((o) => o.key)).toEqual([k('ap/list/a'), k('ap/list/b'), k('ap/list/c')]);
          expect(grouped.prefixes).toEqual([k('ap/list/d/')]);
          const paged: string[] = [];
          let cursor: string | undefined;
          do {
            const one = await d.list({ prefix: k('ap/list/'), delimiter: '/', limit: 1, cursor });
            paged.push(...one.objects.map((o) => o.key), ...one.prefixes);
            cursor = one.nextCursor;
          } while (cursor);
          expect(paged).toEqual([k('ap/list/a'), k('ap/list/b'), k('ap/list/c'), k('ap/list/d/')]);
          expect((await d.list({ prefix: k('ap/list/'), startAfter: k('ap/list/a') })).objects[0]?.key).toBe(
            k('ap/list/b'),
          );
          await d.delete(k('ap/list/b'));
          await expect(d.head(k('ap/list/b'))).rejects.toBeInstanceOf(ObjectNotFoundError);
          const result = await d.deleteMany([k('ap/list/d/e'), k('ap/list/a')]);
          expect(result.failed).toEqual([]);
          expect(result.deleted.sort()).toEqual([k('ap/list/a'), k('ap/list/d/e')]);
          expect((await d.list({ prefix: k('ap/list/') })).objects.map((o) => o.key)).toEqual([
            k('ap/list/c'),
          ]);
          // Deleted, the key can be created again from position 0.
          expect((await d.append(k('ap/list/b'), 'again', { position: 0 })).nextPosition).toBe(5);
        },
      );

      needs('positionAppend', 'a put replaces it with a normal object; create-only fails on it', async () => {
        await d.append(k('ap/replaced'), 'appended', { position: 0 });
        await expect(d.put(k('ap/replaced'), 'x', { ifNoneMatch: '*' })).rejects.toBeInstanceOf(
          ObjectConditionFailedError,
        );
        await d.put(k('ap/replaced'), 'normal', { contentType: 'text/plain' });
        const got = await d.get(k('ap/replaced'));
        expect(text(got.body)).toBe('normal');
        expect(got.appendable).toBeUndefined();
        expect((await d.head(k('ap/replaced'))).appendable).toBeUndefined();
        const error = await refusal(d.append(k('ap/replaced'), 'more', { position: 6 }));
        expect(error).toBeInstanceOf(ObjectNotAppendableError);
      });

      needs(
        'positionAppend',
        'an append to a normal object is ObjectNotAppendableError, nothing written',
        async () => {
          await d.put(k('ap/normal'), 'plain');
          for (const position of [0, 5]) {
            const error = await refusal(d.append(k('ap/normal'), 'x', { position }));
            expect(error).toBeInstanceOf(ObjectNotAppendableError);
            expect(error).toBeInstanceOf(ObjectConditionFailedError);
            expect(error.nextPosition).toBeUndefined();
          }
          const got = await d.get(k('ap/normal'));
          expect(text(got.body)).toBe('plain');
          expect(got.appendable).toBeUndefined();
        },
      );

      needs('positionAppend', 'a copy from an appendable object is refused, nothing written', async () => {
        await d.append(k('ap/source'), 'appended', { position: 0 });
        await expect(d.copy(k('ap/source'), k('ap/copied'))).rejects.toBeInstanceOf(UnsupportedError);
        const all = {
          metadata: {},
          tags: {},
          contentType: 'text/plain',
          storageClass: caps.storageClasses[0],
        };
        await expect(d.copy(k('ap/source'), k('ap/copied'), all)).rejects.toBeInstanceOf(UnsupportedError);
        await expect(d.head(k('ap/copied'))).rejects.toBeInstanceOf(ObjectNotFoundError);
        expect(text((await d.get(k('ap/source'))).body)).toBe('appended');
      });

      it('tags of the creating append are stored, later ones ignored', async (ctx) => {
        for (const capability of ['positionAppend', 'tags'] as const)
          if (!caps[capability]) ctx.skip(`${label} lacks capability ${capability}`);
        await d.append(k('ap/tagged'), 'a', { position: 0, tags: { kind: 'log', owner: 'a b' } });
        await d.append(k('ap/tagged'), 'b', { position: 1, tags: { kind: 'other' } });
        expect((await d.head(k('ap/tagged'), { tags: true })).tags).toEqual({ kind: 'log', owner: 'a b' });
      });

      needs(
        'positionAppend',
        'a malformed position or option is InvalidArgumentError before any request',
        async () => {
          for (const position of [-1, 1.5, Number.NaN]) {
            await expect(d.append(k('ap/bad'), 'x', { position })).rejects.toBeInstanceOf(
              InvalidArgumentError,
            );
          }
          await expect(
            d.append(k('ap/bad'), 'x', { position: 0, metadata: { 'Bad Key': 'v' } }),
          ).rejects.toBeInstanceOf(InvalidArgumentError);
          await expect(
            d.append(k('ap/bad'), 'x', { position: 0, storageClass: 'NoSuchClass' }),
          ).rejects.toBeInstanceOf(InvalidArgumentError);
          await expect(d.head(k('ap/bad'))).rejects.toBeInstanceOf(ObjectNotFoundError);
        },
      );

      it('an append without the capability is UnsupportedError, nothing written', async (ctx) => {
        if (caps.positionAppend) ctx.skip(`${label} has capability positionAppend`);
        await expect(d.append(k('ap/unsupported'), 'x', { position: 0 })).rejects.toBeInstanceOf(
          UnsupportedError,
        );
        await expect(d.head(k('ap/unsupported'))).rejects.toBeInstanceOf(ObjectNotFoundError);
      });
    });

    describe('listing', () => {
      const names = Array.from(
        { length: 97 },
        (_, i) => `list/${String(i % 10)}/${String(i).padStart(3, '0')}`,
      );
      beforeAll(async () => {
        for (let i = 0; i < names.length; i += 20) {
          await Promise.all(names.slice(i, i + 20).map((n) => d.put(k(n), n)));
        }
      });

      it('pages without duplicates or gaps, in key order', async () => {
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await d.list({ prefix: k('list/'), limit: 7, cursor });
          expect(page.objects.length).toBeLessThanOrEqual(7);
          seen.push(...page.objects.map((o) => o.key));
          cursor = page.nextCursor;
          pages++;
        } while (cursor);
        expect(pages).toBe(Math.ceil(97 / 7));
        expect(seen).toEqual(names.map(k).sort());
      });

      it('groups by delimiter into common prefixes across pages', async () => {
        const prefixes: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await d.list({ prefix: k('list/'), delimiter: '/', limit: 3, cursor });
          expect(page.objects).toEqual([]);
          prefixes.push(...page.prefixes);
          cursor = page.nextCursor;
        } while (cursor);
        expect(prefixes).toEqual(Array.from({ length: 10 }, (_, i) => k(`list/${i}/`)));
      });

      it('groups names several levels deep into the folder under the prefix', async () => {
        for (const name of ['deep/a/b/c', 'deep/a/d', 'deep/e/f/g/h', 'deep/i']) await d.put(k(name), 'x');
        const page = await d.list({ prefix: k('deep/'), delimiter: '/' });
        expect(page.objects.map((o) => o.key)).toEqual([k('deep/i')]);
        expect(page.prefixes).toEqual([k('deep/a/'), k('deep/e/')]);
      });

      it('mixes objects and prefixes at one level', async () => {
        await d.put(k('mix/a'), 'x');
        await d.put(k('mix/b/c'), 'x');
        const page = await d.list({ prefix: k('mix/'), delimiter: '/' });
        expect(page.objects.map((o) => o.key)).toEqual([k('mix/a')]);
        expect(page.prefixes).toEqual([k('mix/b/')]);
      });

      it('starts after a given key', async () => {
        const page = await d.list({ prefix: k('list/9/'), startAfter: k('list/9/049') });
        expect(page.objects.map((o) => o.key)).toEqual(
          names
            .filter((n) => n.startsWith('list/9/') && n > 'list/9/049')
            .map(k)
            .sort(),
        );
      });

      it('returns etag, size and last-modified of each object', async () => {
        const page = await d.list({ prefix: k('list/0/'), limit: 1 });
        const [first] = page.objects;
        const head = await d.head(first?.key ?? '');
        expect(first).toMatchObject({ etag: head.etag, size: head.size });
        expect(Math.abs((first?.lastModified.getTime() ?? 0) - head.lastModified.getTime())).toBeLessThan(
          1000,
        );
      });

      it('refuses a page size outside 1 to 1,000', async () => {
        await expect(d.list({ prefix, limit: 0 })).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(d.list({ prefix, limit: 1001 })).rejects.toBeInstanceOf(InvalidArgumentError);
      });
    });

    describe('delete many', () => {
      it('deletes 1,001 keys across the batch limit', async () => {
        const keys = Array.from({ length: 1001 }, (_, i) => k(`many/${String(i).padStart(4, '0')}`));
        for (let i = 0; i < keys.length; i += 100)
          await Promise.all(keys.slice(i, i + 100).map((key) => d.put(key, 'x')));
        const result = await d.deleteMany(keys);
        expect(result.failed).toEqual([]);
        expect(result.deleted.sort()).toEqual([...keys].sort());
        expect((await d.list({ prefix: k('many/') })).objects).toEqual([]);
      });

      it('reports every key it could not delete, and deletes the rest', async () => {
        const keys = ['pd/a', 'pd/b', 'pd/c', 'pd/d'].map(k);
        await Promise.all(keys.map((key) => d.put(key, 'x')));
        await h.failDeletes([k('pd/b'), k('pd/d')]);
        const result = await d.deleteMany(keys);
        await h.reset();
        expect(result.failed.map((f) => f.key).sort()).toEqual([k('pd/b'), k('pd/d')]);
        expect(result.deleted.sort()).toEqual([k('pd/a'), k('pd/c')]);
        await expect(d.head(k('pd/a'))).rejects.toBeInstanceOf(ObjectNotFoundError);
      });
    });

    describe('copy', () => {
      it('copies body, and replaces metadata and tags when asked', async () => {
        await d.put(k('src'), 'payload', {
          metadata: { a: '1' },
          tags: caps.tags ? { kind: 'state' } : undefined,
        });
        await d.copy(k('src'), k('dst'), {
          metadata: { b: '2' },
          tags: caps.tags ? { kind: 'archive' } : undefined,
        });
        const got = await d.get(k('dst'));
        expect(text(got.body)).toBe('payload');
        expect(got.metadata).toEqual({ b: '2' });
        if (caps.tags) expect((await d.head(k('dst'), { tags: true })).tags).toEqual({ kind: 'archive' });
      });

      it('copies onto itself, refreshing last-modified and keeping body, metadata and tags', async () => {
        await d.put(k('self'), 'keep', {
          metadata: { token: '7' },
          tags: caps.tags ? { kind: 'state' } : undefined,
          contentType: 'application/json',
        });
        const before = await d.head(k('self'));
        await new Promise((r) => setTimeout(r, 1100));
        await d.copy(k('self'), k('self'));
        const after = await d.head(k('self'), { tags: caps.tags });
        expect(after.lastModified.getTime()).toBeGreaterThan(before.lastModified.getTime());
        expect(after.metadata).toEqual({ token: '7' });
        expect(after.contentType).toBe('application/json');
        if (caps.tags) expect(after.tags).toEqual({ kind: 'state' });
        expect(text((await d.get(k('self'))).body)).toBe('keep');
      });

      it('copy of a missing source is ObjectNotFoundError', async () => {
        await expect(d.copy(k('no-src'), k('no-dst'))).rejects.toBeInstanceOf(ObjectNotFoundError);
      });
    });

    describe('presigned URLs', () => {
      needs('presign', 'a presigned PUT then a presigned GET round trip through fetch', async () => {
        const putUrl = await d.presignPut(k('presigned'), { contentType: 'text/plain', expiresIn: 60 });
        const put = await fetch(putUrl, {
          method: 'PUT',
          body: 'via url',
          headers: { 'content-type': 'text/plain' },
        });
        expect(put.status).toBe(200);
        const getUrl = await d.presignGet(k('presigned'), { expiresIn: 60 });
        const got = await fetch(getUrl);
        expect(got.status).toBe(200);
        expect(await got.text()).toBe('via url');
      });

      it('presigning without the capability is UnsupportedError', async (ctx) => {
        if (caps.presign) ctx.skip(`${label} has capability presign`);
        await expect(d.presignGet(k('x'))).rejects.toBeInstanceOf(UnsupportedError);
      });
    });

    describe('bad input', () => {
      it('refuses empty, control-character and over-long keys before any request', async () => {
        await expect(d.put('', 'x')).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(d.put(k('a\u0001b'), 'x')).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(d.get(k('x'.repeat(1024)))).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(d.put(k('\ud800'), 'x')).rejects.toBeInstanceOf(InvalidArgumentError);
      });

      it('refuses metadata and tags the backends cannot carry', async () => {
        await expect(d.put(k('m'), 'x', { metadata: { 'Bad Key': 'v' } })).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
        await expect(d.put(k('m'), 'x', { metadata: { ok: 'ünï' } })).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
        const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`t${i}`, 'v']));
        await expect(d.put(k('m'), 'x', { tags: eleven })).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(d.head(k('m'))).rejects.toBeInstanceOf(ObjectNotFoundError);
      });

      it('refuses "." and ".." segments (clients normalise them) but keeps look-alikes', async () => {
        await expect(d.put(k('../../escape'), 'a')).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(d.put(k('./x'), 'a')).rejects.toBeInstanceOf(InvalidArgumentError);
        await d.put(k('...'), 'three dots');
        await d.put(k('..x/.y'), 'dots inside');
        expect(text((await d.get(k('...'))).body)).toBe('three dots');
        expect(text((await d.get(k('..x/.y'))).body)).toBe('dots inside');
      });
    });
  });
}
