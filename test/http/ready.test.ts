/**
 * `GET /v1/ready` (lib/http/readiness.ts) through each adapter: 200 when the store and the lock
 * answer; a 503 problem naming the failing dependency otherwise (`backend-misconfigured` without
 * Retry-After, `backend-unavailable` with it); one check per instance per 5 s, failures included.
 * Against a real S3 protocol with a missing bucket: test/deploy/misconfigured.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BackendError, MisconfiguredBackendError, ValidationError } from '../../lib/contract/errors.js';
import type { SessionLock } from '../../lib/contract/lock.js';
import { UnavailableResourceError } from '../../lib/drivers/errors.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { toProblem } from '../../lib/http/problems.js';
import { DependencyFailure, READY_CACHE_MS, readinessOf } from '../../lib/http/readiness.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { createStateStore } from '../../lib/store/store.js';
import { type ApiHarness, apiGatewayHarness, functionComputeHarness, nodeHarness } from './harness.js';

/** A memory driver whose reads count, and fail with `failure()` while it answers one. */
function watched(failure: () => Error | undefined = () => undefined) {
  const inner = createMemoryDriver();
  const seen: string[] = [];
  const driver: ObjectStoreDriver = {
    ...inner,
    name: inner.name,
    capabilities: inner.capabilities,
    get: async (key, options) => {
      seen.push(key);
      const error = failure();
      if (error) throw error;
      return inner.get(key, options);
    },
  };
  return { driver, seen };
}

const missingBucket = () => new UnavailableResourceError('bucket', 'memory', 'NoSuchBucket');

for (const make of [nodeHarness, apiGatewayHarness, functionComputeHarness]) {
  describe(`GET /v1/ready via ${make.name}`, () => {
    let api: ApiHarness | undefined;
    afterEach(async () => {
      await api?.close();
      api = undefined;
    });

    it('answers 200 without an identity, with one GET of the probe name for the 5 s that follow', async () => {
      const { driver, seen } = watched();
      api = await make({ driver, lock: createMemoryLock() });
      for (let i = 0; i < 3; i++) {
        const answer = await api.call(null, 'GET', '/v1/ready');
        expect([answer.status, answer.json(), answer.headers['cache-control']]).toEqual([
          200,
          { status: 'ok' },
          'no-store',
        ]);
      }
      expect(seen).toEqual(['agent-state/~ready']);
    });

    it('a missing bucket: 503 backend-misconfigured naming the store, no Retry-After, the failure cached too', async () => {
      const { driver, seen } = watched(missingBucket);
      api = await make({ driver, lock: createMemoryLock() });
      for (let i = 0; i < 2; i++) {
        const answer = await api.call(null, 'GET', '/v1/ready');
        expect(answer.status).toBe(503);
        expect(answer.json()).toMatchObject({ code: 'backend-misconfigured', dependency: 'store' });
        expect(answer.headers['retry-after']).toBeUndefined();
        // Which bucket stays in the log.
        expect(JSON.stringify(answer.json())).not.toContain('NoSuchBucket');
      }
      expect(seen).toHaveLength(1);
    });

    it('a lock that cannot be reached for now: 503 backend-unavailable naming the lock, with Retry-After', async () => {
      const lock = createMemoryLock();
      const flaky: SessionLock = {
        ...lock,
        checkReady: async () => {
          throw new BackendError('dynamodb: socket hang up', true);
        },
      };
      api = await make({ driver: watched().driver, lock: flaky });
      const answer = await api.call(null, 'GET', '/v1/ready');
      expect(answer.status).toBe(503);
      expect(answer.json()).toMatchObject({ code: 'backend-unavailable', dependency: 'lock' });
      expect(answer.headers['retry-after']).toBe('1');
      expect(JSON.stringify(answer.json())).not.toContain('socket');
    });
  });
}

describe('readinessOf', () => {
  it('checks again once 5 s have passed, and names the store before the lock when both fail', async () => {
    let now = 1_000_000;
    let broken = true;
    const { driver, seen } = watched(() => (broken ? missingBucket() : undefined));
    const lock = createMemoryLock();
    let lockChecks = 0;
    const failing: SessionLock = {
      ...lock,
      checkReady: async () => {
        lockChecks++;
        if (broken) throw new BackendError('throttled', true);
      },
    };
    const ready = readinessOf(createStateStore({ driver }), failing, () => now);
    const first = await ready().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(first).toBeInstanceOf(DependencyFailure);
    expect((first as DependencyFailure).dependency).toBe('store');
    broken = false;
    now += READY_CACHE_MS - 1;
    await expect(ready()).rejects.toBe(first);
    now += 1;
    await expect(ready()).resolves.toBeUndefined();
    expect([seen.length, lockChecks]).toEqual([2, 2]);
  });
});

describe('what toProblem says to log (the one place a DependencyFailure is unwrapped)', () => {
  it('a readiness failure: its cause; a deployment problem or an internal error: itself; a client error: nothing', () => {
    const cause = new MisconfiguredBackendError('s3', 'bucket', 's3 bucket b does not exist (NoSuchBucket)');
    const failure = new DependencyFailure('store', cause);
    const ready = toProblem(failure, 'r1');
    expect(ready.logged).toBe(cause);
    expect(JSON.parse(ready.response.body ?? '{}')).toMatchObject({
      code: 'backend-misconfigured',
      dependency: 'store',
    });
    expect(toProblem(cause, 'r2').logged).toBe(cause);
    const boom = new Error('boom');
    expect(toProblem(boom, 'r3')).toMatchObject({ internal: true, logged: boom });
    expect(toProblem(new ValidationError('limit', 'must be 1 to 1000'), 'r4')).not.toHaveProperty('logged');
  });
});
