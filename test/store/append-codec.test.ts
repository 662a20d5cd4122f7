/**
 * The append format's record codec (lib/store/lists/append-codec.ts; docs/DESIGN.md, "Append
 * format") on bytes alone, no driver: every record kind round-trips through its trailer, a log
 * built from items reads back as those items with their chain hash, and a damaged or cut record is
 * refused.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { parseLogName } from '../../lib/store/layout.js';
import {
  buildLog,
  type Chunk,
  DamageError,
  encodeRecord,
  findWrite,
  indexOf,
  type Kind,
  type LogInfo,
  type LogRef,
  marksOf,
  newLogInfo,
  parseChunk,
  parseInfo,
  recordsOf,
  sealRecord,
  spanOf,
  successorOf,
  TRAILER_BYTES,
  type Trailer,
  widOf,
  writesOf,
} from '../../lib/store/lists/append-codec.js';
import { prefixHashes } from '../../lib/store/lists/format.js';
import { escapeItem, itemLines } from '../../lib/store/lists/items.js';

const INC = 'inc1';
const REF: LogRef = { gen: 3, seq: 2, tag: 'a1b2c3d4' };
const HASH = chainHash(EMPTY_HASH, ['a hash']);

/** A log of `items` written as one write (`writeId`), as a list's first log holds them. */
function logOf(items: readonly unknown[], writeId = 'w.first', token: number | null = 7) {
  const stored = items.map(escapeItem);
  const prefixes = prefixHashes(items);
  const info = newLogInfo(INC, REF, false, 0, EMPTY_HASH, [], []);
  const parts = recordsOf(stored, 0, (n) => prefixes[n] as string, 'n', widOf(writeId));
  return buildLog(info, { count: 0, hash: EMPTY_HASH }, token, parts);
}

/** True when bytes read as a whole log: its index record first, a trailer at its very end. */
function readsWhole(chunk: Chunk, size: number): boolean {
  return chunk.recs[0]?.kind === 'x' && chunk.recs[0].start === 0 && chunk.recs.at(-1)?.end === size;
}

/** The trailers of a chunk, without where they were found. */
function trailers(chunk: Chunk): Trailer[] {
  return chunk.recs.map(({ kind, count, hash, token, wid, start, indexEnd, bytes }) => ({
    kind,
    count,
    hash,
    token,
    wid,
    start,
    indexEnd,
    bytes,
  }));
}

describe('append record codec: one record of each kind', () => {
  const bodies: Record<Kind, Buffer> = {
    x: Buffer.from(`${JSON.stringify(newLogInfo(INC, REF, false, 0, EMPTY_HASH, [], []))}\n`),
    n: itemLines([{ a: 1 }, 'two']),
    a: itemLines([3]),
    r: itemLines([[4, 5], null]),
    N: itemLines(['carried']),
    A: itemLines([{ b: true }]),
    R: itemLines([6.5]),
    k: Buffer.alloc(0),
    s: Buffer.from(`${JSON.stringify({ successor: { gen: 3, seq: 3, tag: 'a1b2c3d4' } })}\n`),
  };

  for (const kind of Object.keys(bodies) as Kind[]) {
    it(`'${kind}' reads back as written: its trailer's fields and its body`, () => {
      const body = bodies[kind];
      // An index record is at position 0; any other is read as the first record of a later range.
      const start = kind === 'x' ? 0 : 4096;
      const trailer: Trailer = {
        kind,
        count: 1234567,
        hash: HASH,
        token: kind === 'k' ? null : 42,
        wid: kind === 's' ? '' : '0123456789abcdef',
        start,
        indexEnd: 321,
        bytes: 98765,
      };
      const record = encodeRecord(body, trailer);
      expect(record.length).toBe(body.length + TRAILER_BYTES);
      const chunk = parseChunk(record, start, start + record.length);
      expect(chunk.recs).toHaveLength(1);
      const [rec] = chunk.recs;
      expect(trailers(chunk)).toEqual([trailer]);
      expect(rec?.at).toBe(start + body.length);
      expect(rec?.end).toBe(start + record.length);
      expect(rec?.body?.equals(body)).toBe(true);
      // Only the record at position 0 has a known predecessor (none).
      expect(rec?.prev).toBe(kind === 'x' ? null : undefined);
    });
  }

  it('a seal names its successor', () => {
    const after: Trailer = {
      kind: 'a',
      count: 10,
      hash: HASH,
      token: 9,
      wid: '',
      start: 0,
      indexEnd: 300,
      bytes: 500,
    };
    const successor: LogRef = { gen: 4, seq: 0, tag: 'ffee0011' };
    const seal = sealRecord(after, 2000, successor);
    const [rec] = parseChunk(seal, 2000, 2000 + seal.length).recs;
    expect(rec?.kind).toBe('s');
    expect(rec?.count).toBe(10);
    expect(rec?.start).toBe(2000);
    expect(successorOf(rec as NonNullable<typeof rec>)).toEqual(successor);
  });

  it('a trailer without a token or a write id keeps them as none', () => {
    const record = encodeRecord(Buffer.alloc(0), {
      kind: 'k',
      count: 0,
      hash: EMPTY_HASH,
      token: null,
      wid: '',
      start: 77,
      indexEnd: 0,
      bytes: 0,
    });
    expect(record.toString('latin1')).toContain(` ${'-'.repeat(16)} ${'-'.repeat(16)} `);
    const [rec] = parseChunk(record, 77, 77 + record.length).recs;
    expect(rec?.token).toBeNull();
    expect(rec?.wid).toBe('');
  });
});

describe('append record codec: a log', () => {
  const items = [{ id: 1, text: 'hello' }, 'plain', 42, [1, 2, 3], { '~ref': 'not a reference' }, null];

  it('reads back its index record, its items, their chain hash and its write', () => {
    const built = logOf(items);
    const chunk = parseChunk(built.body, 0, built.body.length);
    expect(readsWhole(chunk, built.body.length)).toBe(true);
    const info = indexOf(chunk, INC, REF);
    expect(info).toEqual(built.info);
    expect(info.data).toBe(chunk.recs[0]?.end);
    const span = spanOf(chunk, 0, items.length);
    expect(span?.items).toEqual(items.map(escapeItem));
    expect(span?.offset).toBe(0);
    expect(span?.baseHash).toBe(EMPTY_HASH);
    expect(span?.end).toBe(items.length);
    expect(span?.endHash).toBe(chainHash(EMPTY_HASH, items));
    const last = chunk.recs.at(-1);
    expect(last?.count).toBe(items.length);
    expect(last?.token).toBe(7);
    expect(last?.wid).toBe(widOf('w.first'));
    expect(findWrite(chunk, widOf('w.first'), false)).toEqual({
      action: 'created',
      count: items.length,
      hash: chainHash(EMPTY_HASH, items),
    });
    expect(findWrite(chunk, widOf('w.other'), false)).toBeUndefined();
    expect(writesOf(info, chunk)).toEqual([
      [widOf('w.first'), items.length, chainHash(EMPTY_HASH, items), 'created'],
    ]);
  });

  it('answers a page from the middle, with the chain hash before it', () => {
    const built = logOf(items);
    const span = spanOf(parseChunk(built.body, 0, built.body.length), 2, 4);
    expect(span?.items).toEqual([42, [1, 2, 3]]);
    expect(span?.offset).toBe(2);
    expect(span?.baseHash).toBe(chainHash(EMPTY_HASH, items.slice(0, 2)));
  });

  it('parses a byte range from its marks on, as a read of an older log does', () => {
    // Many small records, marks at most 1 KiB apart.
    const many = Array.from({ length: 300 }, (_, i) => ({ n: i, pad: 'x'.repeat(40) }));
    const prefixes = prefixHashes(many);
    const info = newLogInfo(INC, REF, false, 0, EMPTY_HASH, [], []);
    const parts = many.map((item, i) => ({
      kind: 'a' as const,
      body: itemLines([item]),
      count: i + 1,
      hash: prefixes[i + 1] as string,
      wid: '',
      own: true,
    }));
    const built = buildLog(info, { count: 0, hash: EMPTY_HASH }, null, parts);
    const whole = parseChunk(built.body, 0, built.body.length);
    const marks = marksOf(whole, 0, built.info.data, 1024);
    expect(marks.length).toBeGreaterThan(5);
    const [item, at] = marks[3] as [number, number];
    const range = parseChunk(built.body.subarray(at), at, built.body.length);
    const span = spanOf(range, item, item + 5);
    expect(span?.offset).toBe(item);
    expect(span?.items).toEqual(many.slice(item, item + 5));
    expect(span?.baseHash).toBe(prefixes[item]);
  });

  it('packs a write into records of at most 16 KiB of lines, its write id on the last', () => {
    const big = Array.from({ length: 100 }, (_, i) => ({ i, pad: 'y'.repeat(1000) }));
    const prefixes = prefixHashes(big);
    const parts = recordsOf(big, 10, (n) => prefixes[n] as string, 'a', 'abcdefabcdefabcd');
    expect(parts.length).toBeGreaterThan(5);
    for (const part of parts.slice(0, -1)) {
      expect(part.body.length).toBeLessThanOrEqual(16 * 1024);
      expect(part.wid).toBe('');
    }
    expect(parts.at(-1)?.wid).toBe('abcdefabcdefabcd');
    expect(parts.at(-1)?.count).toBe(110);
    expect(parts.at(-1)?.hash).toBe(chainHash(EMPTY_HASH, big));
  });
});

describe('append record codec: damage', () => {
  const built = logOf(['one', { two: 2 }, [3]]);

  it('refuses a record whose body was changed (its checksum fails)', () => {
    const bad = Buffer.from(built.body);
    const at = (parseChunk(bad, 0, bad.length).recs.at(-1)?.at as number) - 3;
    bad[at] = bad[at] === 0x31 ? 0x32 : 0x31;
    expect(() => parseChunk(bad, 0, bad.length)).toThrow(DamageError);
  });

  it('refuses a trailer that does not parse', () => {
    const bad = Buffer.from(built.body);
    const at = parseChunk(bad, 0, bad.length).recs.at(-1)?.at as number;
    bad[at + 5] = 0x78; // a letter among the count's digits
    expect(() => parseChunk(bad, 0, bad.length)).toThrow(/a damaged trailer/);
  });

  it('refuses records that do not follow each other', () => {
    const second = encodeRecord(itemLines(['more']), {
      kind: 'a',
      count: 4,
      hash: HASH,
      token: 7,
      wid: '',
      start: built.body.length + 10, // not where the log ends
      indexEnd: built.info.data,
      bytes: 100,
    });
    const log = Buffer.concat([built.body, Buffer.alloc(10, 0x20), second]);
    expect(() => parseChunk(log, 0, log.length)).toThrow(/do not follow/);
  });

  it('refuses items that do not match their trailer', () => {
    const wrong = encodeRecord(itemLines(['four']), {
      kind: 'a',
      count: 4,
      hash: HASH, // not the chain hash after 'four'
      token: 7,
      wid: '',
      start: built.body.length,
      indexEnd: built.info.data,
      bytes: 100,
    });
    const log = Buffer.concat([built.body, wrong]);
    const chunk = parseChunk(log, 0, log.length);
    expect(() => spanOf(chunk, 0, 4)).toThrow(/do not match their trailer/);
  });

  it('refuses an index record of another log, and bytes that are no index record', () => {
    const chunk = parseChunk(built.body, 0, built.body.length);
    expect(() => indexOf(chunk, 'other', REF)).toThrow(DamageError);
    expect(() => indexOf(chunk, INC, { ...REF, seq: 9 })).toThrow(DamageError);
    expect(parseInfo('{"v":2,"format":"cas"}')).toBeUndefined();
    expect(parseInfo('not json')).toBeUndefined();
    expect(parseInfo(JSON.stringify({ ...built.info, held: 5 }))).toBeUndefined();
    expect(parseInfo(JSON.stringify(built.info))).toEqual(built.info);
  });

  it('refuses a seal that names no successor', () => {
    const seal = encodeRecord(Buffer.from('{"successor":{"gen":1}}\n'), {
      kind: 's',
      count: 3,
      hash: HASH,
      token: null,
      wid: '',
      start: 500,
      indexEnd: 100,
      bytes: 0,
    });
    const [rec] = parseChunk(seal, 500, 500 + seal.length).recs;
    expect(() => successorOf(rec as NonNullable<typeof rec>)).toThrow(/names no successor/);
  });

  it('a log cut inside a record does not read as whole', () => {
    const ends = new Set(parseChunk(built.body, 0, built.body.length).recs.map((r) => r.end));
    for (let cut = 1; cut < built.body.length; cut++) {
      if (ends.has(cut)) continue;
      const part = built.body.subarray(0, cut);
      let whole: boolean;
      try {
        whole = readsWhole(parseChunk(part, 0, part.length), part.length);
      } catch (error) {
        expect(error).toBeInstanceOf(DamageError);
        whole = false;
      }
      expect(whole, `cut at ${cut}`).toBe(false);
    }
  });
});

describe('append record codec: properties', () => {
  const item = fc.jsonValue({ maxDepth: 3 });

  it('a log of any items reads back as those items, with their chain hash', () => {
    fc.assert(
      fc.property(fc.array(item, { maxLength: 40 }), (items) => {
        const built = logOf(items);
        const chunk = parseChunk(built.body, 0, built.body.length);
        expect(readsWhole(chunk, built.body.length)).toBe(true);
        const span = spanOf(chunk, 0, items.length);
        const sent = JSON.parse(JSON.stringify(items)) as unknown[];
        expect(span?.items).toEqual(sent.map(escapeItem));
        expect(span?.endHash).toBe(chainHash(EMPTY_HASH, items));
        expect(chunk.recs.at(-1)?.count).toBe(items.length);
      }),
      { numRuns: 200 },
    );
  });

  it('any trailer round-trips', () => {
    const trailer = fc.record({
      kind: fc.constantFrom<Kind>('n', 'a', 'r', 'N', 'A', 'R', 'k', 's'),
      count: fc.integer({ min: 0, max: 10 ** 15 }),
      hash: fc
        .uint8Array({ minLength: 32, maxLength: 32 })
        .map((b) => `sha256:${Buffer.from(b).toString('hex')}`),
      token: fc.option(fc.integer({ min: 0, max: 10 ** 15 }), { nil: null }),
      wid: fc.oneof(fc.constant(''), fc.stringMatching(/^[0-9a-f]{16}$/)),
      start: fc.integer({ min: 1, max: 10 ** 11 }),
      indexEnd: fc.integer({ min: 0, max: 10 ** 11 }),
      bytes: fc.integer({ min: 0, max: 10 ** 11 }),
    });
    fc.assert(
      fc.property(trailer, fc.array(item, { maxLength: 4 }), (t: Trailer, items) => {
        const body = itemLines(items);
        const record = encodeRecord(body, t);
        const chunk = parseChunk(record, t.start, t.start + record.length);
        expect(trailers(chunk)).toEqual([t]);
        expect(chunk.recs[0]?.body?.equals(body)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('any one changed byte of a log is refused or leaves it unreadable as whole', () => {
    fc.assert(
      fc.property(
        fc.array(item, { minLength: 1, maxLength: 8 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (items, where, delta) => {
          const built = logOf(items);
          const bad = Buffer.from(built.body);
          const at = where % bad.length;
          bad[at] = ((bad[at] as number) + delta) % 256;
          let info: LogInfo | undefined;
          try {
            const chunk = parseChunk(bad, 0, bad.length);
            if (readsWhole(chunk, bad.length)) info = indexOf(chunk, INC, REF);
          } catch (error) {
            expect(error).toBeInstanceOf(DamageError);
            return;
          }
          expect(info).toBeUndefined();
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('append record codec: names', () => {
  it('reads a log name back as its generation, number and tag', () => {
    expect(parseLogName('0000000000000003~0000000000000002~a1b2c3d4')).toEqual(REF);
    expect(parseLogName('3~2~a1b2c3d4')).toBeUndefined();
    expect(parseLogName('0000000000000003~0000000000000002~A1')).toBeUndefined();
  });

  it('keeps a record id as it is and hashes any other write id to 16 hex digits', () => {
    expect(widOf('0123456789abcdef')).toBe('0123456789abcdef');
    expect(widOf('w.some-random-id')).toMatch(/^[0-9a-f]{16}$/);
    expect(widOf('w.some-random-id')).not.toBe(widOf('w.another-id'));
  });
});
