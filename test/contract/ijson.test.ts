/**
 * "every body is I-JSON": `parseIJson` alone. What it refuses and the field it names; that
 * it returns JSON.parse's value (own `__proto__` members included) for everything else; nesting
 * limits; and that a 4 MiB body takes milliseconds, not seconds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../lib/contract/errors.js';
import { canonicalJson } from '../../lib/contract/hash.js';
import { MAX_DEPTH, parseIJson } from '../../lib/contract/json.js';

const parse = (text: string | Uint8Array) => parseIJson(typeof text === 'string' ? Buffer.from(text) : text);

/** The ValidationError parsing `text` throws. */
function refusal(text: string | Uint8Array): ValidationError {
  try {
    parse(text);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error(`accepted ${String(text)}`);
}

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when a string or member name anywhere in `value` has a lone surrogate. */
function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return LONE.test(value);
  if (value === null || typeof value !== 'object') return false;
  return Object.entries(value).some(([k, v]) => LONE.test(k) || hasLoneSurrogate(v));
}

describe('parseIJson', () => {
  it.each([
    [Buffer.from([0x22, 0xff, 0x22]), 'body', /UTF-8/],
    [Buffer.from([0xef, 0xbb, 0xbf, 0x31]), 'body', /not valid JSON/], // a byte order mark
    ['{"a":', 'body', /not valid JSON/],
    ['"\\ud800"', 'body', /lone surrogate/],
    ['{"items":[0,1,2,{"name":"\\udfff"}]}', 'body.items.3.name', /lone surrogate/],
    ['{"items":[0,{"n":{"\\udbffx":1}}]}', 'body.items.1.n', /member name with a lone surrogate/],
    ['["\\ud83d\\ud83d\\ude00"]', 'body.0', /lone surrogate/],
    ['["\\ud83d😀"]', 'body.0', /lone surrogate/],
    ['{"a":1,"b":{},"a":2}', 'body.a', /duplicate/],
    ['[{},{"a":1,"a":2}]', 'body.1.a', /duplicate/],
    ['{"a\\"":1,"a\\u0022":2}', 'body.a"', /duplicate/],
    ['{"__proto__":1,"__proto__":2}', 'body.__proto__', /duplicate/],
    ['{"x":[[],{"y":[{"z":0,"z":0}]}]}', 'body.x.1.y.0.z', /duplicate/],
    ['1e400', 'body', /IEEE 754/],
    ['{"n":-1.8e308}', 'body.n', /IEEE 754/],
    [`[${'9'.repeat(210)}e99]`, 'body.0', /IEEE 754/],
    [`[${'9'.repeat(310)}]`, 'body.0', /IEEE 754/],
    [`${'['.repeat(MAX_DEPTH + 1)}${']'.repeat(MAX_DEPTH + 1)}`, `body${'.0'.repeat(MAX_DEPTH)}`, /deeper/],
    [
      `{"a":${'{"b":'.repeat(MAX_DEPTH)}1${'}'.repeat(MAX_DEPTH + 1)}`,
      `body.a${'.b'.repeat(MAX_DEPTH - 1)}`,
      /deeper/,
    ],
  ])('refuses %s naming %s', (text, field, message) => {
    const error = refusal(text);
    expect(error.field).toBe(field);
    expect(error.message).toMatch(message);
  });

  it.each([
    '"\\\\ud800"', // an escaped backslash, then the letters "ud800"
    '"\\ud83d\\ude00😀"',
    '{"a":{},"b":[{}],"c":{"a":1}}',
    '{"a":1,"A":2,"a ":3}',
    '1e-400',
    '-0.1000000000000000055511151231257827e-2',
    '1.7976931348623157e308',
    `${'9'.repeat(200)}`,
    `0.${'0'.repeat(300)}1e400`,
    ' \t\n[1 , "two" , {"3" : null}]\r\n',
    `${'['.repeat(MAX_DEPTH)}1${']'.repeat(MAX_DEPTH)}`,
  ])('accepts %s as JSON.parse reads it', (text) => {
    expect(canonicalJson(parse(text))).toBe(canonicalJson(JSON.parse(text)));
  });

  it('keeps __proto__, constructor and the like as own members, leaving prototypes alone', () => {
    const value = parse('{"__proto__":{"polluted":1},"constructor":{"prototype":{}},"toString":1}') as object;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['__proto__', 'constructor', 'toString']);
    expect(Object.getOwnPropertyDescriptor(value, '__proto__')?.value).toEqual({ polluted: 1 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.stringify(value)).toBe(
      '{"__proto__":{"polluted":1},"constructor":{"prototype":{}},"toString":1}',
    );
  });

  it('refuses exactly the JSON texts whose strings or member names have a lone surrogate', () => {
    const unit = fc.oneof(
      fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
      fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
    );
    const text = fc.string({ unit, maxLength: 4 });
    const value = fc
      .jsonValue({ maxDepth: 3, stringUnit: unit })
      .chain((v) => fc.dictionary(text, fc.constant(v), { maxKeys: 2 }).map((d) => [v, d]));
    fc.assert(
      fc.property(value, (v) => {
        const json = JSON.stringify(v);
        if (hasLoneSurrogate(v)) expect(refusal(json).message).toMatch(/lone surrogate/);
        else expect(canonicalJson(parse(json))).toBe(canonicalJson(v));
      }),
      { numRuns: 500 },
    );
  });

  it('never throws anything but ValidationError, and what it accepts hashes canonically', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 48 }), (bytes) => {
        let value: unknown;
        try {
          value = parse(bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(ValidationError);
          return;
        }
        expect(canonicalJson(JSON.parse(canonicalJson(value)))).toBe(canonicalJson(value));
      }),
      { numRuns: 2000 },
    );
  });

  it('parses a 4 MiB list body in well under a second', () => {
    const items = Array.from({ length: 8000 }, (_, i) => ({
      i,
      role: i % 2 ? 'user' : 'assistant',
      text: `turn ${i}: ${'lorem ipsum dolor sit amet, '.repeat(14)}"quoted" \\ é 😀\n`,
      meta: { at: 1.7e12 + i, score: i / 7, tags: ['a', 'b'], constructor: i },
    }));
    const body = Buffer.from(JSON.stringify({ items, expectedCount: 0 }));
    expect(body.byteLength).toBeGreaterThan(4_000_000);
    const started = performance.now();
    const value = parseIJson(body);
    const ms = performance.now() - started;
    expect(canonicalJson(value)).toBe(canonicalJson({ items, expectedCount: 0 }));
    expect(ms).toBeLessThan(1000);
  });
});
