/**
 * `GET /v1/capabilities` through each adapter: no identity needed, cacheable, nothing read from
 * the backend, and the answer follows the driver's own capabilities (lib/store/capabilities.ts):
 * a driver without conditional overwrite (as OSS) says so. Each real backend's answer:
 * test/store/capabilities.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { type ApiHarness, apiGatewayHarness, functionComputeHarness, nodeHarness } from './harness.js';

/** A memory driver that counts every call made to it, with `overrides` of its capabilities. */
function counted(overrides: Partial<ObjectStoreDriver['capabilities']> = {}) {
  const inner = createMemoryDriver();
  let calls = 0;
  const capabilities = { ...inner.capabilities, ...overrides };
  const driver = new Proxy(inner, {
    get(target, name, receiver) {
      if (name === 'capabilities') return capabilities;
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function' || name === 'close') return value;
      return (...args: unknown[]) => {
        calls++;
        return value.apply(receiver, args);
      };
    },
  });
  return { driver, calls: () => calls };
}

for (const make of [nodeHarness, apiGatewayHarness, functionComputeHarness]) {
  describe(`GET /v1/capabilities via ${make.name}`, () => {
    let api: ApiHarness | undefined;
    afterEach(async () => {
      await api?.close();
      api = undefined;
    });

    it('answers without an identity, cacheable, with what the memory driver can do, reading nothing', async () => {
      const { driver, calls } = counted();
      api = await make({ driver, lock: createMemoryLock() });
      const before = calls();
      const answer = await api.call(null, 'GET', '/v1/capabilities');
      expect([answer.status, answer.headers['cache-control']]).toEqual([200, 'public, max-age=300']);
      expect(answer.json()).toEqual({
        versioning: true,
        revisions: true,
        conditionalOverwrite: true,
        ranges: true,
        presignedTransfer: false,
        atomicCommits: false,
      });
      expect(calls() - before).toBe(0);
      // With a token it is the same answer.
      expect((await api.call('alice', 'GET', '/v1/capabilities')).json()).toEqual(answer.json());
    });

    it('a driver without conditional overwrite (as OSS) answers conditionalOverwrite false', async () => {
      api = await make({ driver: counted({ conditionalOverwrite: false }).driver, lock: createMemoryLock() });
      const answer = await api.call(null, 'GET', '/v1/capabilities');
      expect(answer.status).toBe(200);
      expect(answer.json()).toMatchObject({ versioning: true, conditionalOverwrite: false });
    });

    it('answers only GET: a PUT is 405', async () => {
      api = await make({ driver: counted().driver, lock: createMemoryLock() });
      const answer = await api.call('alice', 'PUT', '/v1/capabilities', { body: '{}' });
      expect([answer.status, answer.json().code]).toEqual([405, 'method-not-allowed']);
    });
  });
}
