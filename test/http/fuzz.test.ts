/**
 * Hostile input on every route (fast-check): odd ids, traversal, encoded slashes, invalid UTF-8,
 * header injection, forged cursors and tokens, deeply nested and oversized bodies. Only 2xx or 4xx
 * answers with problem bodies, never a 5xx; no file outside DATA_DIR; no user sees another's data.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import { createApp } from '../../lib/http/app.js';
import type { HttpHandler, HttpRequest } from '../../lib/http/types.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { hsToken, SECRET } from './harness.js';

const SECRET_VALUE = 'alice-private-7f3a9c';

describe('fuzzing every route', () => {
  let outer: string;
  let dataDir: string;
  let handle: HttpHandler;
  let tokens: Record<string, string>;

  beforeAll(async () => {
    outer = await mkdtemp(path.join(tmpdir(), 'fuzz-'));
    dataDir = path.join(outer, 'data');
    const config = loadConfig({
      STORE_BACKEND: 'fs',
      DATA_DIR: dataDir,
      AUTH_JWT_SECRET: SECRET,
      LOG_LEVEL: 'SILENT',
      BODY_LIMIT_BYTES: '65536',
    });
    handle = createApp(config, {
      // Presigned URLs are signed, never followed here: workspace routes answer as on the local server.
      driver: createFsDriver({ root: dataDir, presign: { baseUrl: 'http://127.0.0.1:9' } }),
      lock: createMemoryLock(),
    }).handle;
    tokens = { alice: await hsToken({ sub: 'alice' }), bob: await hsToken({ sub: 'bob' }) };
    const put = (p: string, body: unknown) =>
      handle({
        method: 'PUT',
        path: p,
        query: {},
        headers: { authorization: `Bearer ${tokens.alice}` },
        body: Buffer.from(JSON.stringify(body)),
        requestId: 'seed',
      });
    await put('/v1/sessions/shared/state/secret', SECRET_VALUE);
    await put('/v1/sessions/shared/lists/memory', [SECRET_VALUE]);
  });
  afterAll(() => rm(outer, { recursive: true, force: true }));

  const segment = fc.oneof(
    fc.constantFrom(
      '..',
      '.',
      '%2F',
      '%2e%2e',
      'shared',
      'state',
      'lists',
      'items',
      'lock',
      'archives',
      'keys',
      'truncate',
      '~',
      '~~',
      '~Li4',
      '~c2hhcmVk',
      '',
      ' ',
      '%00',
      'ü',
      '😀',
    ),
    fc.string({ maxLength: 12 }),
    fc.string({ unit: fc.constantFrom('a', '~', '/', '.', '%', '-', '_'), maxLength: 10 }),
    fc.base64String({ maxLength: 16 }).map((b) => `~${b}`),
  );
  const route = fc.oneof(
    fc.array(segment, { maxLength: 7 }).map((parts) => `/${parts.join('/')}`),
    fc
      .tuple(
        segment,
        segment,
        fc.constantFrom('state', 'lists', 'lock', 'workspaces'),
        fc.constantFrom(
          '',
          '/items',
          '/archives',
          '/archives/0',
          '/truncate',
          '/uploads',
          '/uploads/0123456789abcdef01234567',
          '/uploads/..',
        ),
      )
      .map(([s, k, kind, tail]) =>
        kind === 'lock'
          ? `/v1/sessions/${s}/lock`
          : `/v1/sessions/${s}/${kind}/${k}${kind === 'lists' || tail.startsWith('/uploads') ? tail : ''}`,
      ),
    fc.constantFrom(
      '/v1/sessions/shared/workspaces',
      '/v1/sessions/shared/keys',
      '/v1/sessions/shared/snapshot',
      '/v1/sessions/shared/turns',
      '/v1/sessions/shared/commits',
      '/v1/blobs/e30.AAAA',
    ),
    fc.constantFrom(
      '/v1/sessions',
      '/v1/health',
      '/v1/openapi.json',
      '/v1/sessions/shared/state/secret',
      '/v1/sessions/shared/lists/memory',
    ),
  );
  const jsonBody = fc.oneof(
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    fc.constantFrom(
      '{"items":[1],"expectedCount":0}',
      '{"items":[],"expectedCount":-1}',
      '{"count":0,"expectedHash":"sha256:00"}',
      '{"values":["secret"],"lists":[{"key":"memory","last":1}]}',
      '{"values":["secret","secret"]}',
      '{"leaseMs":1000,"waitMs":0,"values":["secret"],"lists":[{"key":"memory"}]}',
      '{"commitId":"c1","values":[{"key":"secret","value":1,"ifAbsent":true}]}',
      '{"commitId":"c2","lists":[{"key":"memory","append":[2],"expectedCount":1,"expectedHash":"x"}],"lease":{"owner":"o","release":true}}',
      '{"count":1e400,"expectedHash":1}',
      '{"leaseMs":1e9}',
      '{"owner":"x y"}',
      '{"size":3,"md5":"rL0Y20zC+Fzt72VPzMSk2A=="}',
      '{"size":10485761,"parts":[{"size":5242880,"md5":"rL0Y20zC+Fzt72VPzMSk2A=="},{"size":5242881,"md5":"rL0Y20zC+Fzt72VPzMSk2A=="}]}',
      '{"size":1,"md5":"rL0Y20zC+Fzt72VPzMSk2A==","storageClass":"glacier"}',
      '[1,2',
      '{"__proto__":{"x":1}}',
    ),
    fc.integer({ min: 129, max: 30_000 }).map((d) => `${'['.repeat(d)}${']'.repeat(d)}`),
    fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('latin1')),
    fc.constant('x'.repeat(70_000)),
  );
  const header = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.constantFrom(
      '"abc"',
      '*',
      'W/"x"',
      '9007199254740993',
      '-1',
      '1e3',
      'abc\r\nx-injected: 1',
      '00000000000000001',
    ),
  );
  const request = fc.record({
    method: fc.constantFrom('GET', 'PUT', 'POST', 'DELETE', 'HEAD', 'PATCH', 'OPTIONS'),
    path: route,
    user: fc.constantFrom('alice', 'bob', 'none', 'forged'),
    body: fc.option(jsonBody, { nil: undefined }),
    query: fc.dictionary(
      fc.constantFrom('limit', 'offset', 'cursor', 'all', 'last', 'prefix', 'startAfter'),
      fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('0', '1001', '-1', 'true', 'Li4vYm9i', '~')),
    ),
    headers: fc.dictionary(
      fc.constantFrom('if-match', 'if-none-match', 'fencing-token', 'lock-owner', 'content-type'),
      header,
    ),
  });

  it('answers only 2xx or 4xx, with problem bodies, and never shows alice her neighbours or them her data', async () => {
    let answered = 0;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers: Record<string, string> = { ...r.headers };
        if (r.user === 'alice' || r.user === 'bob') headers.authorization = `Bearer ${tokens[r.user]}`;
        if (r.user === 'forged') headers.authorization = `Bearer ${tokens.alice?.slice(0, -4)}AAAA`;
        const req: HttpRequest = {
          method: r.method,
          path: r.path,
          query: r.query,
          headers,
          body: r.body === undefined ? undefined : Buffer.from(r.body, 'latin1'),
          requestId: 'fuzz',
        };
        const res = await handle(req);
        answered++;
        expect(res.status, `${r.method} ${r.path}`).toBeLessThan(500);
        if (res.status >= 400 && r.method !== 'HEAD') {
          expect(res.headers['content-type']).toBe('application/problem+json');
          expect(JSON.parse(res.body ?? '{}').code).toBeTypeOf('string');
        }
        if (r.user !== 'alice') expect(res.body ?? '').not.toContain(SECRET_VALUE);
      }),
      { numRuns: 1500, seed: 20261130 },
    );
    expect(answered).toBe(1500);
    // Everything the fuzzing wrote stayed inside DATA_DIR.
    expect(await readdir(outer)).toEqual(['data']);
  });
});
