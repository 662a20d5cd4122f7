/**
 * `Agent-State-User` through each adapter (lib/http/auth.ts, `authenticate`): after the token is
 * checked (401 first), a header naming another user is 403 `user-mismatch` with nothing read or
 * written and nothing said about either user; the token's own user, in its URL id form, is
 * accepted; a header that is not an id in its URL form is 400 `invalid-request` (the same rule as
 * ids in paths: a plain id's `~` form is not its form); no header: the token decides alone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { encodeUrlId } from '../../lib/protocol/url-ids.js';
import { type ApiHarness, apiGatewayHarness, functionComputeHarness, nodeHarness } from './harness.js';

/** A memory driver that counts the calls made to it. */
function counted() {
  const inner = createMemoryDriver();
  let calls = 0;
  const driver: ObjectStoreDriver = new Proxy(inner, {
    get(target, name, receiver) {
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

const VALUE = '/v1/sessions/s1/state/plan';
const USER = 'agent-state-user';
/** A problem body without its request id, to compare two answers. */
const bare = (body: Record<string, unknown>) => ({ ...body, requestId: undefined });

for (const make of [nodeHarness, apiGatewayHarness, functionComputeHarness]) {
  describe(`Agent-State-User via ${make.name}`, () => {
    let api: ApiHarness | undefined;
    afterEach(async () => {
      await api?.close();
      api = undefined;
    });

    it("the token's own user is accepted, as is no header", async () => {
      api = await make({ driver: createMemoryDriver(), lock: createMemoryLock() });
      const put = await api.call('alice', 'PUT', VALUE, { body: '{"a":1}', headers: { [USER]: 'alice' } });
      expect(put.status).toBe(200);
      const got = await api.call('alice', 'GET', VALUE);
      expect([got.status, got.json()]).toEqual([200, { a: 1 }]);
    });

    it("another user's name: 403 user-mismatch, nothing read or written, nothing said of either user", async () => {
      const { driver, calls } = counted();
      api = await make({ driver, lock: createMemoryLock() });
      expect((await api.call('bob', 'PUT', VALUE, { body: '{"b":1}' })).status).toBe(200);
      const before = calls();
      const write = await api.call('alice', 'PUT', VALUE, { body: '{"a":1}', headers: { [USER]: 'bob' } });
      const read = await api.call('alice', 'GET', VALUE, { headers: { [USER]: 'bob' } });
      const list = await api.call('alice', 'GET', '/v1/sessions', { headers: { [USER]: 'bob' } });
      for (const answer of [write, read, list]) {
        expect([answer.status, answer.json().code]).toEqual([403, 'user-mismatch']);
        expect(answer.body).not.toMatch(/alice|bob/);
      }
      expect(calls() - before).toBe(0);
      // A user that has nothing stored gets the very same answer: the 403 tells nothing about bob.
      const nobody = await api.call('alice', 'GET', VALUE, { headers: { [USER]: 'nobody' } });
      expect(bare(nobody.json())).toEqual(bare(read.json()));
      // Bob's value is untouched; alice has none.
      expect((await api.call('bob', 'GET', VALUE)).json()).toEqual({ b: 1 });
      expect((await api.call('alice', 'GET', VALUE)).status).toBe(404);
    });

    it('a refused token is 401 before the header is looked at', async () => {
      api = await make({ driver: createMemoryDriver(), lock: createMemoryLock() });
      const answer = await api.call(null, 'GET', VALUE, { headers: { [USER]: 'bob' } });
      expect([answer.status, answer.json().code]).toEqual([401, 'unauthorized']);
    });

    it('a non-plain user is sent in its URL id form and accepted', async () => {
      api = await make({ driver: createMemoryDriver(), lock: createMemoryLock() });
      for (const user of ['用户-ü', 'a/b', '__anon__']) {
        const headers = { [USER]: encodeUrlId(user) };
        const put = await api.call(user, 'PUT', VALUE, { body: '{"u":1}', headers });
        expect(put.status, user).toBe(200);
        expect((await api.call(user, 'GET', VALUE, { headers })).json()).toEqual({ u: 1 });
      }
    });

    it('a malformed header is 400 invalid-request naming it, nothing written', async () => {
      const { driver, calls } = counted();
      api = await make({ driver, lock: createMemoryLock() });
      const before = calls();
      // Not an id form; a raw non-plain id; a plain id's needless ~ form; two users joined.
      for (const value of ['~!!', 'a/b', encodeUrlId('alice').replace('alice', '~YWxpY2U'), 'alice, bob']) {
        const answer = await api.call('alice', 'PUT', VALUE, { body: '{"a":1}', headers: { [USER]: value } });
        expect([answer.status, answer.json().code, answer.json().field], value).toEqual([
          400,
          'invalid-request',
          'Agent-State-User',
        ]);
      }
      expect(calls() - before).toBe(0);
    });

    it('routes that need no identity ignore it', async () => {
      api = await make({ driver: createMemoryDriver(), lock: createMemoryLock() });
      const answer = await api.call(null, 'GET', '/v1/health', { headers: { [USER]: 'bob' } });
      expect(answer.status).toBe(200);
    });
  });
}
