/**
 * A backend that ignores our write conditions is refused, not trusted: the once-per-process probe
 * (lib/store/probe.ts) through private S3 and OSS fronts switched into modes that drop conditions.
 */
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { BackendUnsafeError } from '../../lib/contract/errors.js';
import { ObjectNotFoundError } from '../../lib/drivers/errors.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createOssDriver } from '../../lib/drivers/oss.js';
import { createS3Driver } from '../../lib/drivers/s3.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { probeNames } from '../../lib/store/layout.js';
import { GUARANTEES, verifiedDriver } from '../../lib/store/probe.js';
import { type ApiHarness, nodeHarness } from '../http/harness.js';
import { frontControl } from '../servers/control.js';
import { startOssFront } from '../servers/oss-front.js';
import { startS3Front } from '../servers/s3-front.js';

const servers = () => inject('servers');
const OSS_KEYS = { accessKeyId: 'LTAI-probe', accessKeySecret: 'probe-secret' };
const S3_KEYS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

let s3: Awaited<ReturnType<typeof startS3Front>>;
let oss: Awaited<ReturnType<typeof startOssFront>>;
const s3Control = () => frontControl(s3.endpoint);
/** The probe's requests: those on objects of the probe's random users under the server's prefix. */
const probeRequests = async () =>
  (await s3Control().requests()).filter((r) =>
    probeNames
      .pattern('agent-state/')
      .test(decodeURIComponent((r.path.split('?')[0] ?? '').slice(`/${servers().bucket}/`.length))),
  );

beforeAll(async () => {
  s3 = await startS3Front(Number(new URL(servers().s3rver).port));
  oss = await startOssFront(s3.port, OSS_KEYS);
});
afterAll(async () => {
  await oss.stop();
  await s3.stop();
});
afterEach(async () => {
  await s3Control().reset();
  await frontControl(oss.endpoint).reset();
});

const s3Driver = () =>
  createS3Driver({ bucket: servers().bucket, endpoint: s3.endpoint, credentials: S3_KEYS });
const ossDriver = () =>
  createOssDriver({
    bucket: servers().bucket,
    endpoint: oss.endpoint,
    ...OSS_KEYS,
  });

const WRITES = ['get', 'head', 'put', 'delete', 'deleteMany', 'list', 'copy', 'append'] as const;

/** A driver that records each call (method and key), passing it on to `inner`. */
function recording(inner: ObjectStoreDriver) {
  const calls: Array<{ method: string; key: string }> = [];
  const driver = { ...inner } as ObjectStoreDriver;
  for (const method of WRITES) {
    (driver as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      calls.push({ method, key: String(args[0]) });
      return (inner[method] as (...a: unknown[]) => Promise<unknown>).apply(inner, args);
    };
  }
  return { driver, calls };
}

/** A memory driver that acknowledges every append at the end of the object, whatever its position. */
function ignoringPosition(inner: ObjectStoreDriver): ObjectStoreDriver {
  return {
    ...inner,
    async append(key, body, options) {
      const length = await inner.head(key).then(
        (info) => info.size,
        () => 0,
      );
      return inner.append(key, body, { ...options, position: length });
    },
  };
}

/** The local server over `driver`, with its logger's ERROR calls recorded. */
async function serverOver(driver: ObjectStoreDriver) {
  const api = await nodeHarness({ driver, lock: createMemoryLock() });
  const errors = vi.spyOn(api.app.logger, 'error');
  return { api, errors };
}

/** 8 appends racing to create the same list. */
const racingAppends = (api: ApiHarness, user: string, session: string) =>
  Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      api.call(user, 'POST', `/v1/sessions/${session}/lists/memory/items`, {
        body: JSON.stringify({ items: [{ turn: i }], expectedCount: 0 }),
      }),
    ),
  );

describe('the backend probe', () => {
  it('on a healthy backend: one probe for concurrent first writes, 9 requests (4 racing creates, 4 racing If-Match writes, the delete), nothing left', async () => {
    const driver = s3Driver();
    const { api } = await serverOver(driver);
    const answers = await racingAppends(api, `u-${randomUUID()}`, 's');
    expect(answers.map((a) => a.status).sort()).toEqual([200, ...Array(7).fill(409)]);
    const probes = await probeRequests();
    const declared = GUARANTEES.filter((g) => g.declared(driver.capabilities)).length;
    expect(declared).toBe(2);
    // 4 create-only writes racing (one wins), 4 If-Match writes with the winner's etag (one wins), the delete.
    expect(probes.map((p) => p.method)).toEqual([...Array(8).fill('PUT'), 'DELETE']);
    expect(probes.length).toBeLessThanOrEqual(12);
    expect(new Set(probes.map((p) => p.path.split('?')[0])).size).toBe(1);
    expect(probes.at(-1)?.method).toBe('DELETE');
    const key = decodeURIComponent(
      (probes[0]?.path.split('?')[0] ?? '').slice(`/${servers().bucket}/`.length),
    );
    await expect(driver.head(key)).rejects.toThrow(/not found/);
    // Later writes probe no more.
    await s3Control().reset();
    expect((await api.call('bob', 'PUT', '/v1/sessions/s/state/plan', { body: '{}' })).status).toBe(200);
    expect(await probeRequests()).toEqual([]);
    await api.close();
  });

  it('behind a proxy that drops If-None-Match / If-Match, the local server refuses every write and acknowledges nothing', async () => {
    await s3Control().ignoreConditions();
    const { api, errors } = await serverOver(s3Driver());
    const user = `u-${randomUUID()}`;
    const answers = await racingAppends(api, user, 's');
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(503));
    for (const answer of answers) {
      expect(answer.headers['content-type']).toBe('application/problem+json');
      expect(answer.json()).toMatchObject({ code: 'backend-unsafe', status: 503 });
      expect(answer.json().detail).toMatch(/s3.*create-only/);
    }
    const save = await api.call(user, 'PUT', '/v1/sessions/s/state/plan', { body: '{"step":1}' });
    expect(save.json()).toMatchObject({ code: 'backend-unsafe' });
    // Reads still answer, and show that nothing was written.
    expect((await api.call(user, 'GET', '/v1/sessions/s/lists/memory')).json()).toMatchObject({ count: 0 });
    expect((await api.call(user, 'HEAD', '/v1/sessions/s')).status).toBe(404);
    expect(errors).toHaveBeenCalledTimes(1);
    expect(JSON.stringify(errors.mock.calls[0])).toMatch(/create-only/);
    await api.close();
  });

  it('behind a proxy that honours conditions only on ~probe/ keys, every write is 503 backend-unsafe (the probe writes as a session does)', async () => {
    await s3Control().ignoreConditions(['if-match', 'if-none-match'], '~probe/');
    const { api, errors } = await serverOver(s3Driver());
    const user = `u-${randomUUID()}`;
    const answers = await racingAppends(api, user, 's');
    expect(answers.map((a) => a.json().code)).toEqual(Array(8).fill('backend-unsafe'));
    const save = await api.call(user, 'PUT', '/v1/sessions/s/state/plan', { body: '{"step":1}' });
    expect(save.status).toBe(503);
    expect((await api.call(user, 'HEAD', '/v1/sessions/s')).status).toBe(404);
    expect(errors).toHaveBeenCalledTimes(1);
    await api.close();
  });

  it('behind a proxy that checks a condition with a HEAD and writes unconditionally 20 ms later, every write is 503 backend-unsafe', async () => {
    await s3Control().nonAtomic(20);
    const { api, errors } = await serverOver(s3Driver());
    const user = `u-${randomUUID()}`;
    const answers = await racingAppends(api, user, 's');
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(503));
    expect(answers[0]?.json()).toMatchObject({ code: 'backend-unsafe' });
    expect(answers[0]?.json().detail).toMatch(/s3.*create-only/);
    const save = await api.call(user, 'PUT', '/v1/sessions/s/state/plan', { body: '{"step":1}' });
    expect(save.json()).toMatchObject({ code: 'backend-unsafe' });
    expect((await api.call(user, 'GET', '/v1/sessions/s/lists/memory')).json()).toMatchObject({ count: 0 });
    expect(errors).toHaveBeenCalledTimes(1);
    await api.close();
  });

  it('behind a proxy that drops only If-Match, writes are refused too, naming conditional overwrite', async () => {
    await s3Control().ignoreConditions(['if-match']);
    const { api, errors } = await serverOver(s3Driver());
    const user = `u-${randomUUID()}`;
    const save = await api.call(user, 'PUT', '/v1/sessions/s/state/plan', { body: '{"step":1}' });
    expect(save.status).toBe(503);
    expect(save.json()).toMatchObject({ code: 'backend-unsafe' });
    expect(save.json().detail).toMatch(/s3 .*conditional overwrite \(If-Match\)/);
    expect((await api.call(user, 'HEAD', '/v1/sessions/s')).status).toBe(404);
    expect(errors).toHaveBeenCalledTimes(1);
    await api.close();
  });

  it('an OSS bucket with versioning enabled or suspended (forbid-overwrite ignored) is refused', async () => {
    for (const status of ['Enabled', 'Suspended'] as const) {
      await frontControl(oss.endpoint).versioning(status);
      const { api, errors } = await serverOver(ossDriver());
      const user = `u-${randomUUID()}`;
      const answers = await racingAppends(api, user, 's');
      expect(answers.map((a) => a.json().code)).toEqual(Array(8).fill('backend-unsafe'));
      expect(answers[0]?.json().detail).toMatch(/oss.*x-oss-forbid-overwrite/);
      expect((await api.call(user, 'GET', '/v1/sessions/s/lists/memory')).json()).toMatchObject({ count: 0 });
      expect(errors).toHaveBeenCalledTimes(1);
      await api.close();
    }
  });

  it('OSS: 10 requests (4 racing creates, 4 racing appends at 0, 2 deletes) on a random session of the prefix, nothing left', async () => {
    const { driver, calls } = recording(ossDriver());
    const prefix = `probe-${randomUUID()}/`;
    const verified = verifiedDriver(driver, { prefix });
    await Promise.all([verified.verify(), verified.verify()]);
    expect(calls.map((c) => c.method)).toEqual([
      ...Array(4).fill('put'),
      ...Array(4).fill('append'),
      'delete',
      'delete',
    ]);
    const [shared, appended] = [calls[0]?.key ?? '', calls[4]?.key ?? ''];
    for (const key of [shared, appended]) expect(key).toMatch(probeNames.pattern(prefix));
    expect(appended).not.toBe(shared);
    expect(calls.slice(8).map((c) => c.key)).toEqual([appended, shared]);
    for (const key of [shared, appended])
      await expect(driver.head(key)).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect(GUARANTEES.filter((g) => g.declared(driver.capabilities)).map((g) => g.name)).toEqual([
      expect.stringMatching(/create-only/),
      expect.stringMatching(/position append/),
    ]);
  });

  it('an OSS front that ignores the append position is refused, and nothing is acknowledged', async () => {
    await frontControl(oss.endpoint).ignoreAppendPosition();
    const { api, errors } = await serverOver(ossDriver());
    const user = `u-${randomUUID()}`;
    const answers = await racingAppends(api, user, 's');
    expect(answers.map((a) => a.json().code)).toEqual(Array(8).fill('backend-unsafe'));
    expect(answers[0]?.json().detail).toMatch(/oss.*position append/);
    const save = await api.call(user, 'PUT', '/v1/sessions/s/state/plan', { body: '{"step":1}' });
    expect(save.json()).toMatchObject({ code: 'backend-unsafe' });
    expect((await api.call(user, 'GET', '/v1/sessions/s/lists/memory')).json()).toMatchObject({ count: 0 });
    expect((await api.call(user, 'HEAD', '/v1/sessions/s')).status).toBe(404);
    expect(errors).toHaveBeenCalledTimes(1);
    expect(JSON.stringify(errors.mock.calls[0])).toMatch(/position append/);
    await api.close();
  });

  it('memory: 7 calls when healthy; wrapped to lie about append positions, refused for good', async () => {
    const healthy = recording(createMemoryDriver());
    const found = vi.fn();
    await verifiedDriver(healthy.driver, { prefix: 'p/', onOutcome: found }).verify();
    expect(found.mock.calls).toEqual([['verified']]);
    expect(healthy.calls.map((c) => c.method)).toEqual([
      'put',
      'put',
      'put',
      'append',
      'append',
      'delete',
      'delete',
    ]);
    expect((await healthy.driver.list({ prefix: 'p/' })).objects).toEqual([]);

    const inner = createMemoryDriver();
    const lying = recording(ignoringPosition(inner));
    const unsafe = vi.fn();
    const outcomes = vi.fn();
    const verified = verifiedDriver(lying.driver, { prefix: 'p/', onUnsafe: unsafe, onOutcome: outcomes });
    const refused = await verified.put('p/session/value', '{}').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BackendUnsafeError);
    expect(refused).toMatchObject({ backend: 'memory', guarantee: expect.stringMatching(/position append/) });
    // The second append was the one acknowledged; the probe objects are gone and the write was never made.
    expect(lying.calls.map((c) => c.method)).toEqual([
      'put',
      'put',
      'put',
      'append',
      'append',
      'delete',
      'delete',
    ]);
    expect((await inner.list({ prefix: 'p/' })).objects).toEqual([]);
    // Later writes are refused without another probe; reads pass.
    await expect(verified.append('p/log', 'x', { position: 0 })).rejects.toBeInstanceOf(BackendUnsafeError);
    await expect(verified.put('p/other', '{}')).rejects.toBeInstanceOf(BackendUnsafeError);
    expect(lying.calls).toHaveLength(7);
    await expect(verified.get('p/session/value')).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect(unsafe).toHaveBeenCalledTimes(1);
    expect(outcomes.mock.calls).toEqual([['unsafe']]);
  });

  it('a probe that proves nothing reports inconclusive, and the next run verified', async () => {
    const inner = createMemoryDriver();
    let failures = 1;
    const flaky = new Proxy(inner, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property !== 'put' || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (failures-- > 0) return Promise.reject(new Error('connection reset'));
          return value.apply(target, args);
        };
      },
    });
    const outcomes = vi.fn();
    const verified = verifiedDriver(flaky, { prefix: 'p/', onOutcome: outcomes });
    await expect(verified.verify()).rejects.toThrow(/connection reset/);
    await verified.verify();
    expect(outcomes.mock.calls).toEqual([['inconclusive'], ['verified']]);
  });

  it('a transient failure of the probe fails that write only; the next write probes again and succeeds', async () => {
    const { api, errors } = await serverOver(s3Driver());
    // Every SDK attempt (3) of each of the probe's 4 racing creates fails.
    await s3Control().fault({ kind: '500', method: 'PUT', match: '/agent-state/', times: 12 });
    const first = await api.call('carol', 'PUT', '/v1/sessions/s/state/plan', { body: '{"a":1}' });
    expect(first.status).toBe(503);
    expect(first.json()).toMatchObject({ code: 'backend-unavailable' });
    expect((await api.call('carol', 'GET', '/v1/sessions/s/state/plan')).status).toBe(404);
    const second = await api.call('carol', 'PUT', '/v1/sessions/s/state/plan', { body: '{"a":2}' });
    expect(second.status).toBe(200);
    expect((await api.call('carol', 'GET', '/v1/sessions/s/state/plan')).json()).toEqual({ a: 2 });
    expect(errors).not.toHaveBeenCalled();
    await api.close();
  });
});

describe('the Lambda handler (functions/aws/api.ts, API Gateway v2 events in-process)', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  const event = (method: string, path: string, body?: string) =>
    ({
      version: '2.0',
      routeKey: '$default',
      rawPath: path,
      rawQueryString: '',
      headers: { host: 'api.example.com', 'content-type': 'application/json' },
      requestContext: {
        http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
        requestId: randomUUID(),
        authorizer: { jwt: { claims: { sub: 'lambda-user' }, scopes: [] } },
      },
      body,
      isBase64Encoded: false,
    }) as unknown as APIGatewayProxyEventV2WithJWTAuthorizer;
  const context = {
    functionName: 'agent-state-api',
    awsRequestId: 'test',
    getRemainingTimeInMillis: () => 30_000,
  } as unknown as Context;

  it('answers its first write 503 backend-unsafe, and a second invocation of the module probes no more', async () => {
    await s3Control().ignoreConditions();
    Object.assign(process.env, {
      AWS_LAMBDA_FUNCTION_NAME: 'agent-state-api',
      STORE_BACKEND: 's3',
      S3_BUCKET: servers().bucket,
      S3_ENDPOINT: s3.endpoint,
      AWS_ACCESS_KEY_ID: S3_KEYS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_KEYS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      LOCK_BACKEND: 'dynamodb',
      LOCK_TABLE: 'probe-test-locks',
      DYNAMODB_ENDPOINT: servers().dynamodb,
      LOG_LEVEL: 'SILENT',
      POWERTOOLS_METRICS_DISABLED: 'true',
    });
    vi.resetModules();
    const { handler } = await import('../../functions/aws/api.js');
    const session = `s-${randomUUID()}`;
    // Health checks and reads stay cheap: they never wait for the probe.
    const health = (await handler(event('GET', '/v1/health'), context)) as { statusCode: number };
    expect(health.statusCode).toBe(200);
    const read = (await handler(event('GET', `/v1/sessions/${session}/state/plan`), context)) as {
      statusCode: number;
    };
    expect(read.statusCode).toBe(404);
    expect(await probeRequests()).toEqual([]);
    const first = (await handler(event('PUT', `/v1/sessions/${session}/state/plan`, '{"n":1}'), context)) as {
      statusCode: number;
      body: string;
    };
    expect(first.statusCode).toBe(503);
    expect(JSON.parse(first.body)).toMatchObject({ code: 'backend-unsafe' });
    expect((await probeRequests()).length).toBeGreaterThan(0);

    await s3Control().reset();
    await s3Control().ignoreConditions();
    const second = (await handler(
      event('PUT', `/v1/sessions/${session}/state/plan`, '{"n":2}'),
      context,
    )) as {
      statusCode: number;
      body: string;
    };
    expect(JSON.parse(second.body)).toMatchObject({ code: 'backend-unsafe' });
    // Neither a probe nor the write reached the backend; only the reads of the write did.
    const seen = await s3Control().requests();
    expect(seen.filter((r) => r.path.includes('~probe'))).toEqual([]);
    expect(seen.filter((r) => r.method === 'PUT' || r.method === 'DELETE')).toEqual([]);
  });
});
