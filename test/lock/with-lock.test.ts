/** withLock: background renewal, abort on loss, no timer left behind, Lambda cap; and fencing end to end. */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { FencedError, LockConflictError, LockLostError } from '../../lib/contract/errors.js';
import type { SessionLock } from '../../lib/contract/lock.js';
import { createDynamoDbLock, createLockTable } from '../../lib/lock/dynamodb.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { withLock } from '../../lib/lock/with-lock.js';
import { createStateStore } from '../../lib/store/store.js';
import { backends, onTier } from '../backends.js';

const key = () => ({ userId: 'u', sessionId: `s-${randomUUID()}` });

describe.runIf(onTier('fast'))('withLock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('renews in the background while fn runs, then releases and leaves no timer', async () => {
    vi.useFakeTimers();
    const lock = createMemoryLock();
    const k = key();
    let renewals = 0;
    const counted: SessionLock = {
      ...lock,
      renew: (...args) => {
        renewals++;
        return lock.renew(...args);
      },
    };
    const result = await withLock(
      counted,
      k,
      async (lease, signal) => {
        await vi.advanceTimersByTimeAsync(lease.leaseMs * 3);
        expect(signal.aborted).toBe(false);
        await expect(lock.acquire(k)).rejects.toBeInstanceOf(LockConflictError);
        return 'done';
      },
      { leaseMs: 2000 },
    );
    expect(result).toBe('done');
    expect(renewals).toBeGreaterThanOrEqual(4);
    expect(vi.getTimerCount()).toBe(0);
    await lock.acquire(k); // released
  });

  it('aborts the signal when the lease is lost, and stops renewing', async () => {
    vi.useFakeTimers();
    const lock = createMemoryLock();
    let renewals = 0;
    const losing: SessionLock = {
      ...lock,
      renew: async () => {
        renewals++;
        throw new LockLostError();
      },
    };
    const seen = await withLock(
      losing,
      key(),
      async (_lease, signal) => {
        await vi.advanceTimersByTimeAsync(5000);
        return { aborted: signal.aborted, reason: signal.reason };
      },
      { leaseMs: 2000 },
    );
    expect(seen.aborted).toBe(true);
    expect(seen.reason).toBeInstanceOf(LockLostError);
    expect(renewals).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('releases when fn throws, and keeps no handle open (real timers)', async () => {
    const lock = createMemoryLock();
    const k = key();
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    await expect(
      withLock(lock, k, async () => Promise.reject(new Error('boom')), { leaseMs: 1000 }),
    ).rejects.toThrow('boom');
    expect(timers()).toBe(before);
    await lock.acquire(k);
  });

  it('caps the lease at the Lambda invocation remaining time', async () => {
    const lease = await withLock(createMemoryLock(), key(), async (l) => l, {
      leaseMs: 60_000,
      remainingTimeMs: () => 5000,
    });
    expect(lease.leaseMs).toBeLessThanOrEqual(4500);
  });
});

// Memory and fs with dynalite in the servers tier (they have no server of their own), RGW in its tier.
describe.runIf(onTier('servers', 'rgw'))('fencing end to end: lock and store together', () => {
  const dynamo = () =>
    new DynamoDBClient({
      endpoint: inject('servers').dynamodb,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });

  for (const backend of onTier('servers') ? backends(['fast', 'servers']) : backends()) {
    it(`a paused holder's late write is refused after a takeover, the new holder's data intact, on ${backend.name}`, async () => {
      const { driver, close } = await backend.make();
      const clock = { t: Date.now() };
      const table = `fence-${randomUUID()}`;
      const client = dynamo();
      await createLockTable(client, table);
      const lock = createDynamoDbLock({ tableName: table, client, now: () => clock.t });
      const store = createStateStore({ driver, prefix: `fence-${randomUUID()}/` }).forUser('u');
      const k = { userId: 'u', sessionId: 'sandbox/session/1' };

      const a = await lock.acquire(k, { owner: 'agent-a', leaseMs: 1000 });
      await store.save(k.sessionId, 'plan', 'A1', { token: a.token });
      clock.t += 2000; // A pauses past its lease
      const b = await lock.acquire(k, { owner: 'agent-b', leaseMs: 1000 });
      expect(b.token).toBeGreaterThan(a.token);
      await store.save(k.sessionId, 'plan', 'B1', { token: b.token });
      await store.appendList(k.sessionId, 'turns', ['B'], { expectedCount: 0, token: b.token });

      await expect(store.save(k.sessionId, 'plan', 'A2', { token: a.token })).rejects.toBeInstanceOf(
        FencedError,
      );
      await expect(store.save(k.sessionId, 'other', 'A2', { token: a.token })).rejects.toBeInstanceOf(
        FencedError,
      );
      await expect(
        store.appendList(k.sessionId, 'turns', ['A'], { expectedCount: 1, token: a.token }),
      ).rejects.toBeInstanceOf(FencedError);
      await expect(lock.release(k, 'agent-a', a.token)).rejects.toBeInstanceOf(LockLostError);
      expect(await store.get(k.sessionId, 'plan')).toBe('B1');
      expect(await store.get(k.sessionId, 'other')).toBeUndefined();
      expect((await store.getList(k.sessionId, 'turns')).items).toEqual(['B']);
      client.destroy();
      await close();
    });
  }
});
