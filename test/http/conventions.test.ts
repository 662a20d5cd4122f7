/**
 * The HTTP conventions through each adapter (local node:http, API Gateway v2
 * events, FC 3 events): CORS with configured origins (preflights, the headers of actual answers,
 * off by default), gzip and brotli answers over 1 KB with the ETag kept and `Vary: Accept-Encoding`,
 * conditional reads (If-None-Match -> 304) of values and lists, and HEAD on a value. Every call
 * takes the bytes as the platform delivers them (node: over node:http, which decodes nothing).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseCorsOrigins } from '../../lib/config.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { negotiateEncoding } from '../../lib/http/compression.js';
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS } from '../../lib/http/cors.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { HEADER_NAMES, REQUEST_ID_HEADER } from '../../lib/protocol/schemas.js';
import {
  type Answer,
  type ApiHarness,
  apiGatewayHarness,
  type CallOptions,
  functionComputeHarness,
  nodeHarness,
  SECRET,
} from './harness.js';

const CONSOLE = 'https://console.example.com';
const LOCAL = 'http://localhost:5173';
const ORIGINS = `${CONSOLE}, ${LOCAL}`;

/** A JSON body and its type. */
const json = (value: unknown) => ({
  body: JSON.stringify(value),
  headers: { 'content-type': 'application/json' },
});

/** Items whose list page is well over 1 KB (and compresses well). */
const ITEMS = Array.from({ length: 60 }, (_, i) => ({
  role: i % 2 ? 'assistant' : 'user',
  content: `turn ${i}`,
}));

/** The answer's body decoded from its Content-Encoding. */
const decoded = (answer: Answer) => {
  const encoding = answer.headers['content-encoding'];
  if (encoding === 'gzip') return gunzipSync(answer.bytes).toString();
  if (encoding === 'br') return brotliDecompressSync(answer.bytes).toString();
  expect(encoding, 'no other Content-Encoding').toBeUndefined();
  return answer.bytes.toString();
};

const varyOf = (answer: Answer) =>
  (answer.headers.vary ?? '')
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter(Boolean);

const corsHeaders = (answer: Answer) =>
  Object.keys(answer.headers).filter((h) => h.startsWith('access-control-'));

const list = (header: string | undefined) => (header ?? '').split(',').map((t) => t.trim().toLowerCase());

for (const make of [nodeHarness, apiGatewayHarness, functionComputeHarness]) {
  describe(`HTTP conventions via ${make.name}`, () => {
    /** CORS_ORIGINS set to two exact origins. */
    let api: ApiHarness;
    /** CORS off (the default). */
    let off: ApiHarness;
    /** CORS_ORIGINS=*. */
    let any: ApiHarness;
    const fc = make === functionComputeHarness;

    beforeAll(async () => {
      const driver = createMemoryDriver();
      const lock = createMemoryLock();
      [api, off, any] = await Promise.all([
        make({ driver, lock }, { CORS_ORIGINS: ORIGINS }),
        make({ driver, lock }),
        make({ driver, lock }, { CORS_ORIGINS: '*' }),
      ]);
    });
    afterAll(async () => {
      await Promise.all([api.close(), off.close(), any.close()]);
    });

    const call = (
      on: ApiHarness,
      user: string | null,
      method: string,
      path: string,
      o: CallOptions = {},
    ): Promise<Answer> => on.call(user, method, path, { ...o, raw: true });
    const sid = () => `conv-${randomUUID()}`;
    const preflightOf = (origin: string, method = 'PUT') => ({
      headers: {
        origin,
        'access-control-request-method': method,
        'access-control-request-headers': 'authorization, content-type, if-match',
      },
    });

    describe('CORS', () => {
      it('answers a preflight from an allowed origin with 204 and what it may send and read, without a token', async () => {
        for (const origin of [CONSOLE, LOCAL]) {
          const pre = await call(
            api,
            null,
            'OPTIONS',
            `/v1/sessions/${sid()}/state/plan`,
            preflightOf(origin),
          );
          expect(pre.status).toBe(204);
          expect(pre.bytes.length).toBe(0);
          expect(pre.headers['access-control-allow-origin']).toBe(origin);
          expect(varyOf(pre)).toContain('origin');
          expect(list(pre.headers['access-control-allow-methods'])).toEqual(
            expect.arrayContaining(['get', 'head', 'put', 'post', 'delete']),
          );
          const allowed = list(pre.headers['access-control-allow-headers']);
          for (const header of ['Authorization', 'Content-Type', ...Object.values(HEADER_NAMES)])
            expect(allowed, header).toContain(header.toLowerCase());
          expect(allowed).toEqual(
            expect.arrayContaining([
              'if-match',
              'if-none-match',
              'if-revision',
              'idempotency-key',
              'x-request-id',
            ]),
          );
          expect(Number(pre.headers['access-control-max-age'])).toBeGreaterThan(0);
          expect(pre.headers['x-request-id']).toBeTruthy();
        }
        // A preflight for a list read: the same.
        const read = await call(
          api,
          null,
          'OPTIONS',
          `/v1/sessions/${sid()}/lists/log`,
          preflightOf(CONSOLE, 'GET'),
        );
        expect(read.status).toBe(204);
      });

      it('gives a disallowed origin no CORS headers: its preflight is an OPTIONS like any other method (405)', async () => {
        for (const origin of ['https://evil.example', 'https://console.example.com:8443', 'null']) {
          const pre = await call(
            api,
            null,
            'OPTIONS',
            `/v1/sessions/${sid()}/state/plan`,
            preflightOf(origin),
          );
          expect(pre.status, origin).toBe(405);
          expect(pre.json()).toMatchObject({ code: 'method-not-allowed' });
          expect(corsHeaders(pre), origin).toEqual([]);
        }
        // An OPTIONS that is not a preflight (no Access-Control-Request-Method): 405 too.
        const plain = await call(api, null, 'OPTIONS', `/v1/sessions/${sid()}/state/plan`, {
          headers: { origin: CONSOLE },
        });
        expect(plain.status).toBe(405);
      });

      it('with CORS off (the default), OPTIONS is answered as today: 405 with Allow, and no answer carries CORS headers', async () => {
        const pre = await call(
          off,
          null,
          'OPTIONS',
          `/v1/sessions/${sid()}/state/plan`,
          preflightOf(CONSOLE),
        );
        expect(pre.status).toBe(405);
        expect(pre.headers['content-type']).toBe('application/problem+json');
        expect(list(pre.headers.allow)).toEqual(expect.arrayContaining(['get', 'head', 'put', 'delete']));
        expect(corsHeaders(pre)).toEqual([]);
        const get = await call(off, 'alice', 'GET', `/v1/sessions/${sid()}/lists/log`, {
          headers: { origin: CONSOLE },
        });
        expect(get.status).toBe(200);
        expect(corsHeaders(get)).toEqual([]);
        expect(varyOf(get)).not.toContain('origin');
      });

      it('marks actual answers for an allowed origin (Allow-Origin, Expose-Headers), problems included; Vary: Origin on all', async () => {
        const s = sid();
        const put = await call(api, 'alice', 'PUT', `/v1/sessions/${s}/state/plan`, {
          ...json({ steps: [1] }),
          headers: { 'content-type': 'application/json', origin: CONSOLE },
        });
        expect(put.status).toBe(200);
        expect(put.headers['access-control-allow-origin']).toBe(CONSOLE);
        const exposed = list(put.headers['access-control-expose-headers']);
        for (const header of ['ETag', 'Agent-State-Revision', 'Location', 'Retry-After', 'X-Request-Id'])
          expect(exposed, header).toContain(header.toLowerCase());
        expect(varyOf(put)).toContain('origin');
        const missing = await call(api, 'alice', 'GET', `/v1/sessions/${s}/state/absent`, {
          headers: { origin: LOCAL },
        });
        expect(missing.status).toBe(404);
        expect(missing.headers['access-control-allow-origin']).toBe(LOCAL);
        // Another origin, or none: no CORS headers, but the answer still varies by Origin.
        for (const headers of [{ origin: 'https://evil.example' }, {}] as Record<string, string>[]) {
          const get = await call(api, 'alice', 'GET', `/v1/sessions/${s}/state/plan`, { headers });
          expect(get.status).toBe(200);
          expect(corsHeaders(get)).toEqual([]);
          expect(varyOf(get)).toContain('origin');
        }
      });

      it('with CORS_ORIGINS=*, any origin: Access-Control-Allow-Origin: *', async () => {
        const pre = await call(
          any,
          null,
          'OPTIONS',
          `/v1/sessions/${sid()}/state/plan`,
          preflightOf('https://anyone.example'),
        );
        expect(pre.status).toBe(204);
        expect(pre.headers['access-control-allow-origin']).toBe('*');
        const get = await call(any, 'alice', 'GET', `/v1/sessions/${sid()}/lists/log`, {
          headers: { origin: 'https://anyone.example' },
        });
        expect(get.headers['access-control-allow-origin']).toBe('*');
        expect(get.headers['access-control-expose-headers']).toBe(CORS_EXPOSED_HEADERS.join(', '));
      });
    });

    describe('compression', () => {
      it('answers gzip and br (q-values honoured, br on a tie), decoding to the same JSON with the same ETag', async () => {
        const s = sid();
        const path = `/v1/sessions/${s}/lists/log`;
        expect((await call(api, 'alice', 'PUT', path, json(ITEMS))).status).toBe(200);
        const plain = await call(api, 'alice', 'GET', path);
        expect(plain.status).toBe(200);
        expect(plain.headers['content-encoding']).toBeUndefined();
        expect(plain.bytes.length).toBeGreaterThan(1024);
        expect(varyOf(plain)).toContain('accept-encoding');
        const cases: Array<[string, string | undefined]> = [
          ['gzip', 'gzip'],
          ['br', 'br'],
          ['gzip, deflate, br', 'br'],
          ['br;q=0.5, gzip', 'gzip'],
          ['gzip;q=0.8, br;q=0.9', 'br'],
          ['x-gzip', 'gzip'],
          ['*', 'br'],
          ['gzip;q=0', undefined],
          ['identity', undefined],
          ['identity;q=1, gzip;q=0.5', undefined],
          ['deflate', undefined],
        ];
        for (const [accept, expected] of cases) {
          const got = await call(api, 'alice', 'GET', path, { headers: { 'accept-encoding': accept } });
          expect(got.status, accept).toBe(200);
          expect(got.headers['content-encoding'], accept).toBe(expected);
          expect(got.headers.etag, accept).toBe(plain.headers.etag);
          expect(varyOf(got), accept).toContain('accept-encoding');
          expect(JSON.parse(decoded(got)), accept).toEqual(plain.json());
          if (expected) expect(got.bytes.length, accept).toBeLessThan(plain.bytes.length / 2);
        }
        // A value over 1 KB too.
        const value = { notes: 'n'.repeat(3000) };
        await call(api, 'alice', 'PUT', `/v1/sessions/${s}/state/notes`, json(value));
        const got = await call(api, 'alice', 'GET', `/v1/sessions/${s}/state/notes`, {
          headers: { 'accept-encoding': 'gzip' },
        });
        expect(got.headers['content-encoding']).toBe('gzip');
        expect(JSON.parse(decoded(got))).toEqual(value);
      });

      it('sends 1 KB and less as it is (Vary still says Accept-Encoding), and never compresses a 304, a 204, a HEAD or a write', async () => {
        const s = sid();
        const put = await call(api, 'alice', 'PUT', `/v1/sessions/${s}/state/plan`, json({ steps: [1, 2] }));
        const small = await call(api, 'alice', 'GET', `/v1/sessions/${s}/state/plan`, {
          headers: { 'accept-encoding': 'gzip, br' },
        });
        expect(small.status).toBe(200);
        expect(small.headers['content-encoding']).toBeUndefined();
        expect(varyOf(small)).toContain('accept-encoding');
        expect(small.json()).toEqual({ steps: [1, 2] });
        // A value of exactly 1,024 bytes of JSON: not compressed; one more byte: compressed.
        for (const [length, expected] of [
          [1024, undefined],
          [1025, 'br'],
        ] as const) {
          const text = 'x'.repeat(length - 2);
          await call(api, 'alice', 'PUT', `/v1/sessions/${s}/state/edge`, json(text));
          const got = await call(api, 'alice', 'GET', `/v1/sessions/${s}/state/edge`, {
            headers: { 'accept-encoding': 'br' },
          });
          expect(got.headers['content-encoding'], String(length)).toBe(expected);
          expect(JSON.parse(decoded(got))).toBe(text);
        }
        // What would not get smaller once base64-encoded for the platforms (random text) goes as it is.
        const noise = randomBytes(3000).toString('base64');
        await call(api, 'alice', 'PUT', `/v1/sessions/${s}/state/noise`, json(noise));
        const dense = await call(api, 'alice', 'GET', `/v1/sessions/${s}/state/noise`, {
          headers: { 'accept-encoding': 'gzip' },
        });
        expect(dense.headers['content-encoding']).toBeUndefined();
        expect(dense.json()).toBe(noise);
        const big = await call(api, 'alice', 'PUT', `/v1/sessions/${s}/lists/log`, json(ITEMS));
        expect(big.headers['content-encoding']).toBeUndefined();
        const etag = (await call(api, 'alice', 'GET', `/v1/sessions/${s}/lists/log`)).headers.etag as string;
        const unchanged = await call(api, 'alice', 'GET', `/v1/sessions/${s}/lists/log`, {
          headers: { 'accept-encoding': 'gzip', 'if-none-match': etag },
        });
        expect(unchanged.status).toBe(304);
        expect(unchanged.headers['content-encoding']).toBeUndefined();
        expect(varyOf(unchanged)).toContain('accept-encoding');
        const head = await call(api, 'alice', 'HEAD', `/v1/sessions/${s}/state/edge`, {
          headers: { 'accept-encoding': 'gzip' },
        });
        expect(head.status).toBe(200);
        expect(head.headers['content-encoding']).toBeUndefined();
        const gone = await call(api, 'alice', 'DELETE', `/v1/sessions/${s}/state/plan`, {
          headers: { 'accept-encoding': 'gzip' },
        });
        expect(gone.status).toBe(204);
        expect(gone.headers['content-encoding']).toBeUndefined();
        expect(put.headers['content-encoding']).toBeUndefined();
      });
    });

    describe('conditional reads', () => {
      it('a value: If-None-Match of its etag (strong, weak, in a list, or *) is 304 with the ETag and no body; 200 after a change', async () => {
        const s = sid();
        const path = `/v1/sessions/${s}/state/plan`;
        const { etag } = (await call(api, 'alice', 'PUT', path, json({ steps: [1] }))).json();
        for (const tag of [`"${etag}"`, `W/"${etag}"`, `"other", "${etag}"`, '*']) {
          const got = await call(api, 'alice', 'GET', path, { headers: { 'if-none-match': tag } });
          expect(got.status, tag).toBe(304);
          expect(got.bytes.length, tag).toBe(0);
          expect(got.headers.etag, tag).toBe(`"${etag}"`);
        }
        const other = await call(api, 'alice', 'GET', path, { headers: { 'if-none-match': '"other"' } });
        expect(other.status).toBe(200);
        expect(other.json()).toEqual({ steps: [1] });
        const changed = (await call(api, 'alice', 'PUT', path, json({ steps: [1, 2] }))).json().etag;
        expect(changed).not.toBe(etag);
        const after = await call(api, 'alice', 'GET', path, { headers: { 'if-none-match': `"${etag}"` } });
        expect(after.status).toBe(200);
        expect(after.headers.etag).toBe(`"${changed}"`);
        expect(after.json()).toEqual({ steps: [1, 2] });
        // No value: * matches nothing, so the 404 stands.
        const absent = await call(api, 'alice', 'GET', `/v1/sessions/${s}/state/absent`, {
          headers: { 'if-none-match': '*' },
        });
        expect(absent.status).toBe(404);
        const malformed = await call(api, 'alice', 'GET', path, { headers: { 'if-none-match': 'unquoted' } });
        expect(malformed.status).toBe(400);
        expect(malformed.json()).toMatchObject({ code: 'invalid-request', field: 'If-None-Match' });
      });

      it('a list: its ETag is "<hash>" whatever page was read; If-None-Match of it is 304; after an append, 200; If-Match takes the same value', async () => {
        const s = sid();
        const path = `/v1/sessions/${s}/lists/log`;
        const saved = (await call(api, 'alice', 'PUT', path, json(['a', 'b', 'c']))).json();
        const read = await call(api, 'alice', 'GET', path);
        expect(read.headers.etag).toBe(`"${saved.hash}"`);
        expect(read.headers.etag).toBe(`"${read.json().hash}"`);
        for (const query of ['', '?offset=1&limit=1', '?last=1', '?limit=0']) {
          const page = await call(api, 'alice', 'GET', `${path}${query}`);
          expect(page.headers.etag, query).toBe(read.headers.etag);
          const unchanged = await call(api, 'alice', 'GET', `${path}${query}`, {
            headers: { 'if-none-match': read.headers.etag as string },
          });
          expect(unchanged.status, query).toBe(304);
          expect(unchanged.bytes.length, query).toBe(0);
          expect(unchanged.headers.etag, query).toBe(read.headers.etag);
        }
        const appended = await call(
          api,
          'alice',
          'POST',
          `${path}/items`,
          json({ items: ['d'], expectedCount: 3 }),
        );
        expect(appended.status).toBe(200);
        const after = await call(api, 'alice', 'GET', path, {
          headers: { 'if-none-match': read.headers.etag as string },
        });
        expect(after.status).toBe(200);
        expect(after.json().items).toEqual(['a', 'b', 'c', 'd']);
        expect(after.headers.etag).toBe(`"${appended.json().hash}"`);
        // The ETag is what the whole-list PUT's If-Match takes: the stale one is refused, the current one saves.
        const stale = await call(api, 'alice', 'PUT', path, {
          ...json(['x']),
          headers: { 'content-type': 'application/json', 'if-match': read.headers.etag as string },
        });
        expect(stale.status).toBe(412);
        const current = await call(api, 'alice', 'PUT', path, {
          ...json(['a', 'b', 'c', 'd', 'e']),
          headers: { 'content-type': 'application/json', 'if-match': after.headers.etag as string },
        });
        expect(current.json()).toMatchObject({ action: 'appended', count: 5 });
        // If-Match is evaluated first: a read for another hash is 412, whatever If-None-Match says.
        const both = await call(api, 'alice', 'GET', path, {
          headers: { 'if-match': '"sha256:other"', 'if-none-match': '*' },
        });
        expect(both.status).toBe(412);
      });
    });

    describe('HEAD on a value', () => {
      it('answers 200 with ETag, Content-Type and Content-Length and no body; 304 on If-None-Match; a 404 with problem headers', async () => {
        const s = sid();
        const path = `/v1/sessions/${s}/state/plan`;
        const value = { steps: [1, 2, 3], note: 'é' };
        await call(api, 'alice', 'PUT', path, json(value));
        const get = await call(api, 'alice', 'GET', path);
        const head = await call(api, 'alice', 'HEAD', path);
        expect(head.status).toBe(200);
        expect(head.bytes.length).toBe(0);
        expect(head.headers.etag).toBe(get.headers.etag);
        expect(head.headers['content-type']).toBe('application/json');
        // Function Compute's trigger sets Content-Length itself: its adapter sends none.
        if (fc) expect(head.headers['content-length']).toBeUndefined();
        else expect(head.headers['content-length']).toBe(String(get.bytes.length));
        expect(head.headers['x-request-id']).toBeTruthy();
        const unchanged = await call(api, 'alice', 'HEAD', path, {
          headers: { 'if-none-match': get.headers.etag as string },
        });
        expect(unchanged.status).toBe(304);
        expect(unchanged.headers.etag).toBe(get.headers.etag);
        const absent = await call(api, 'alice', 'HEAD', `/v1/sessions/${s}/state/absent`);
        expect(absent.status).toBe(404);
        expect(absent.bytes.length).toBe(0);
        expect(absent.headers['content-type']).toBe('application/problem+json');
        // Another user's value is absent for them; no identity is a 401, without a body either.
        expect((await call(api, 'bob', 'HEAD', path)).status).toBe(404);
        const anonymous = await call(api, null, 'HEAD', path);
        expect(anonymous.status).toBe(401);
        expect(anonymous.bytes.length).toBe(0);
        // The path takes HEAD now: a 405 there lists it.
        const patch = await call(api, 'alice', 'PATCH', path);
        expect(list(patch.headers.allow)).toEqual(['put', 'get', 'head', 'delete']);
      });
    });
  });
}

describe('CORS_ORIGINS', () => {
  const env = (CORS_ORIGINS: string) => ({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, CORS_ORIGINS });

  it('is off by default, * alone, or exact origins (trimmed, once each)', () => {
    expect(loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET }).CORS_ORIGINS).toBeUndefined();
    expect(loadConfig(env('')).CORS_ORIGINS).toBeUndefined();
    expect(loadConfig(env(' * ')).CORS_ORIGINS).toBe('*');
    expect(loadConfig(env(`${CONSOLE} ,${LOCAL},${CONSOLE}`)).CORS_ORIGINS).toEqual([CONSOLE, LOCAL]);
    expect(parseCorsOrigins('http://[::1]:8080')).toEqual(['http://[::1]:8080']);
  });

  it('refuses a malformed origin with a config error naming CORS_ORIGINS, the entry and what is wrong (never the value)', () => {
    const refusal = (value: string) => {
      try {
        loadConfig(env(value));
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        const message = (error as ConfigError).message;
        expect(message).toContain('CORS_ORIGINS: ');
        expect(message).not.toContain('example.com');
        return message;
      }
      throw new Error(`${value} was accepted`);
    };
    const unlike =
      'is not an origin as browsers send it (lowercase host, no default port, no path, no trailing slash)';
    expect(refusal(`${CONSOLE}/`)).toContain(`origin 1 ${unlike}`);
    expect(refusal(`${LOCAL},https://Console.Example.com`)).toContain(`origin 2 ${unlike}`);
    expect(refusal('https://console.example.com:443')).toContain(unlike);
    expect(refusal(`${CONSOLE}/app`)).toContain(unlike);
    expect(refusal('console.example.com')).toContain('origin 1 is not an http(s) origin');
    expect(refusal('ftp://files.example.com')).toContain('is not an http(s) origin');
    expect(refusal(`*, ${CONSOLE}`)).toContain(
      'origin 1 is *, which allows every origin and must stand alone',
    );
    expect(refusal(`${CONSOLE},,${LOCAL}`)).toContain('origin 2 is empty');
    // The deployment parameter names the entry and says what to write.
    expect(() => parseCorsOrigins(`${CONSOLE}/`, { quote: true })).toThrow(
      `"${CONSOLE}/" ${unlike}: write "${CONSOLE}"`,
    );
  });

  it('allows the request headers the API reads, besides Authorization and Content-Type, and X-Request-Id', () => {
    expect(CORS_ALLOWED_HEADERS).toEqual([
      'Authorization',
      'Content-Type',
      ...Object.values(HEADER_NAMES),
      REQUEST_ID_HEADER,
    ]);
  });
});

describe('Accept-Encoding negotiation', () => {
  it('picks br or gzip by q-value, br on a tie, none when identity is preferred or nothing is acceptable', () => {
    const cases: Array<[string | undefined, string | undefined]> = [
      [undefined, undefined],
      ['', undefined],
      ['gzip', 'gzip'],
      ['GZIP', 'gzip'],
      ['br', 'br'],
      ['gzip, br', 'br'],
      ['br;q=0.1, gzip;q=0.2', 'gzip'],
      ['gzip;q=1.0, br;q=1', 'br'],
      ['*;q=0.5', 'br'],
      ['*;q=0.5, br;q=0', 'gzip'],
      ['*, gzip;q=0, br;q=0', undefined],
      ['gzip;q=0.5, identity', undefined],
      ['gzip, identity;q=0.5', 'gzip'],
      ['gzip;q=2', undefined],
      ['gzip;q=abc, br', 'br'],
      ['compress, deflate', undefined],
    ];
    for (const [header, expected] of cases) expect(negotiateEncoding(header), String(header)).toBe(expected);
  });
});
