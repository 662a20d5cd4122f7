/**
 * "every body is I-JSON, and round-trips exactly", over HTTP: bodies that are not I-JSON
 * (RFC 7493) are refused with 400 and write nothing; any member name (`__proto__` and `constructor`
 * included) is stored and read back exactly; and the chain hash the server reports is the one the
 * typed client computes locally over what it sent.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient, type HttpSessionStore } from '../../lib/client/index.js';
import { loadConfig } from '../../lib/config.js';
import { canonicalJson, chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { MAX_DEPTH } from '../../lib/contract/json.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { hsToken, SECRET } from '../http/harness.js';

/** An object with exactly these own members, `__proto__` included (a literal would set the prototype). */
function objectOf(entries: ReadonlyArray<readonly [string, unknown]>): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, value] of entries)
    Object.defineProperty(o, k, { value, enumerable: true, writable: true, configurable: true });
  return o;
}

/** Member names that plain-object rebuilding loses or that shadow Object.prototype. */
const TRICKY_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'prototype', ''];

/** Any I-JSON value: full-unicode strings and names, tricky names, nesting to `maxDepth`. */
const jsonValue = (maxDepth: number) => {
  const name = fc.oneof(fc.constantFrom(...TRICKY_NAMES), fc.string({ unit: 'binary', maxLength: 6 }));
  return fc.letrec<{ value: unknown; array: unknown[]; object: Record<string, unknown> }>((tie) => ({
    value: fc.oneof(
      { maxDepth, depthSize: 'small' },
      fc.constant(null),
      fc.boolean(),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.string({ unit: 'grapheme', maxLength: 8 }),
      fc.string({ unit: 'binary', maxLength: 8 }),
      tie('array'),
      tie('object'),
    ),
    array: fc.array(tie('value'), { maxLength: 4 }),
    object: fc
      .uniqueArray(fc.tuple(name, tie('value')), { selector: ([k]) => k, maxLength: 4 })
      .map(objectOf),
  })).value;
};

/** `depth` levels of containers, alternating objects (with tricky names) and arrays, around `leaf`. */
function nested(depth: number, leaf: unknown = 'leaf'): unknown {
  let value = leaf;
  for (let d = depth; d >= 1; d--)
    value =
      d % 2 === 0
        ? objectOf([
            [TRICKY_NAMES[d % TRICKY_NAMES.length] as string, value],
            ['depth', d],
          ])
        : [d, value];
  return value;
}

describe('I-JSON bodies over HTTP', () => {
  const config = loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, LOG_LEVEL: 'SILENT' });
  let server: ReturnType<typeof createNodeServer>;
  let baseUrl: string;
  let token: string;
  let client: HttpSessionStore;
  const sid = () => `s-${randomUUID()}`;

  /** A raw request with these exact body bytes. */
  async function send(method: string, path: string, body?: string | Uint8Array) {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
    });
    const text = await res.text();
    return { status: res.status, text, json: () => JSON.parse(text) };
  }

  beforeAll(async () => {
    const app = createApp(config, { driver: createMemoryDriver(), lock: createMemoryLock() });
    server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    token = await hsToken({ sub: 'alice' });
    client = createHttpClient({ baseUrl, token, attempts: 1 });
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  /** Bytes of text and raw byte values. */
  const bytes = (...parts: Array<string | ArrayLike<number>>) =>
    Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Uint8Array.from(p))));

  /** A body that is not I-JSON, and where in it the problem is (null: only `body`). */
  const refused: Array<[string, Buffer, string | null]> = [
    ['invalid UTF-8 in a string', bytes('"a', [0xff], 'b"'), null],
    ['a truncated UTF-8 sequence', bytes('"a', [0xe2, 0x82], '"'), null],
    ['an overlong UTF-8 encoding', bytes('"', [0xc0, 0xaf], '"'), null],
    ['a surrogate encoded as UTF-8', bytes('"', [0xed, 0xa0, 0x80], '"'), null],
    ['invalid UTF-8 in a member name', bytes('{"', [0xfe], '":1}'), null],
    ['an escaped lone high surrogate', bytes('"x\\ud800y"'), ''],
    ['an escaped lone low surrogate', bytes('{"a":["\\uDC00"]}'), '.a.0'],
    ['a high surrogate at the end of a string', bytes('["ok","\\udbff"]'), '.1'],
    ['surrogates in the wrong order', bytes('"\\udc00\\ud800"'), ''],
    ['an escaped lone surrogate in a member name', bytes('{"k":{"\\ud800":1}}'), '.k'],
    ['a duplicate member name', bytes('{"a":1,"a":2}'), '.a'],
    ['a duplicate spelled with an escape', bytes('{"a":1,"\\u0061":2}'), '.a'],
    ['a nested duplicate member name', bytes('{"x":[{"b":1},{"c":{"d":1,"d":1}}]}'), '.x.1.c.d'],
    ['a number above the largest double', bytes('1e400'), ''],
    ['a number below the most negative double', bytes('-1e400'), ''],
    ['an overflowing number in an object', bytes('{"n":[0,1.8e308]}'), '.n.1'],
  ];

  it.each(refused)('refuses %s with 400 and writes nothing', async (_, fragment, where) => {
    const s = sid();
    expect((await send('PUT', `/v1/sessions/${s}/lists/l`, '[0]')).status).toBe(200);
    const before = (await send('GET', `/v1/sessions/${s}/lists/l`)).json();
    const attempts: Array<[string, string, Buffer, string]> = [
      ['PUT', `/v1/sessions/${s}/state/k`, fragment, 'body'],
      ['PUT', `/v1/sessions/${s}/lists/l`, bytes('[', fragment, ']'), 'body.0'],
      [
        'POST',
        `/v1/sessions/${s}/lists/l/items`,
        bytes('{"items":[', fragment, '],"expectedCount":1}'),
        'body.items.0',
      ],
    ];
    for (const [method, path, body, at] of attempts) {
      const res = await send(method, path, body);
      expect({ method, status: res.status }).toEqual({ method, status: 400 });
      expect(res.json()).toMatchObject({
        code: 'invalid-request',
        field: where === null ? 'body' : at + where,
      });
    }
    expect((await send('GET', `/v1/sessions/${s}/state/k`)).status).toBe(404);
    expect((await send('GET', `/v1/sessions/${s}/lists/l`)).json()).toEqual(before);
  });

  /** Bodies that are I-JSON, including numbers that underflow or lose precision. */
  const accepted = [
    '{"__proto__":{"x":1}}',
    '{"__proto__":null,"constructor":{"prototype":1},"toString":"s","hasOwnProperty":0,"valueOf":[]}',
    '{"a":{"__proto__":{"__proto__":[{"__proto__":"deep"}]}}}',
    '[{"__proto__":[]},{"constructor":{}}]',
    '{"":"","\\u0000":"\\u0000","\\ud83d\\ude00":"😀","é":"\\u00e9"}',
    '1e-400',
    '0.1000000000000000055511151231257827',
    '12345678901234567890123456789',
    '1.7976931348623157e308',
    '-0',
  ];

  it.each(accepted)('stores %s and reads it back exactly', async (text) => {
    const s = sid();
    const sent = JSON.parse(text);
    const exact = JSON.stringify(sent);
    expect((await send('PUT', `/v1/sessions/${s}/state/k`, text)).status).toBe(200);
    const got = await send('GET', `/v1/sessions/${s}/state/k`);
    expect(got.text).toBe(exact);
    expect(canonicalJson(got.json())).toBe(canonicalJson(sent));

    expect((await send('PUT', `/v1/sessions/${s}/lists/l`, `[${text}]`)).json().hash).toBe(
      chainHash(EMPTY_HASH, [sent]),
    );
    const appended = await send(
      'POST',
      `/v1/sessions/${s}/lists/l/items`,
      `{"items":[${text}],"expectedCount":1,"expectedHash":"${chainHash(EMPTY_HASH, [sent])}"}`,
    );
    expect(appended.json()).toMatchObject({ count: 2, hash: chainHash(EMPTY_HASH, [sent, sent]) });
    const page = await send('GET', `/v1/sessions/${s}/lists/l`);
    expect(page.text).toContain(`"items":[${exact},${exact}]`);
  });

  it('the typed client sends own __proto__ members (JSON.stringify keeps them)', () => {
    expect(JSON.stringify(objectOf([['__proto__', { a: 1 }]]))).toBe('{"__proto__":{"a":1}}');
  });

  /** Saves, reads, appends in two steps with a locally computed expectedHash, and reads the list. */
  async function roundTrip(value: unknown, items: unknown[]) {
    const s = sid();
    await client.save(s, 'v', value);
    expect(canonicalJson(await client.get(s, 'v'))).toBe(canonicalJson(value));
    const half = Math.ceil(items.length / 2);
    const first = await client.appendList(s, 'l', items.slice(0, half), { expectedCount: 0 });
    expect(first.hash).toBe(chainHash(EMPTY_HASH, items.slice(0, half)));
    if (half < items.length) {
      const second = await client.appendList(s, 'l', items.slice(half), {
        expectedCount: half,
        expectedHash: chainHash(EMPTY_HASH, items.slice(0, half)),
      });
      expect(second.hash).toBe(chainHash(EMPTY_HASH, items));
    }
    const page = await client.getList(s, 'l');
    expect(page.hash).toBe(chainHash(EMPTY_HASH, items));
    expect(canonicalJson(page.items)).toBe(canonicalJson(items));
  }

  it('round-trips arbitrary JSON values and items exactly, with the locally computed chain hash', async () => {
    const value = jsonValue(6);
    await fc.assert(fc.asyncProperty(value, fc.array(value, { minLength: 1, maxLength: 6 }), roundTrip), {
      numRuns: 200,
    });
  });

  it(`round-trips bodies nested exactly ${MAX_DEPTH} levels deep, and refuses one more`, async () => {
    // The limit is on the body: an appended item sits inside {"items":[…]}, two levels down.
    const item = nested(MAX_DEPTH - 3, objectOf([['__proto__', 1]]));
    await roundTrip(nested(MAX_DEPTH), [item, nested(MAX_DEPTH - 2)]);
    const s = sid();
    const tooDeep = await send('PUT', `/v1/sessions/${s}/state/k`, JSON.stringify(nested(MAX_DEPTH + 1)));
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.json()).toMatchObject({ code: 'invalid-request' });
    expect((await send('GET', `/v1/sessions/${s}/state/k`)).status).toBe(404);
  });
});
