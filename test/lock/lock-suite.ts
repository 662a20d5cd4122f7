/** The lock conformance suite: every `SessionLock` (in-process, DynamoDB on dynalite) passes it. */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { LockConflictError, LockLostError, ValidationError } from '../../lib/contract/errors.js';
import type { LockKey, SessionLock } from '../../lib/contract/lock.js';

/** A lock under test, on a clock the test moves. */
export interface LockHarness {
  lock: SessionLock;
  clock: { t: number };
  /** Starts the lock afresh, as a restart (in-process) or a TTL removal of the item (DynamoDB) would. */
  forget(key: LockKey): Promise<SessionLock>;
}

export function describeLockSuite(label: string, make: () => Promise<LockHarness>): void {
  describe(`lock conformance: ${label}`, () => {
    const key = (): LockKey => ({ userId: 'alice', sessionId: `s-${randomUUID()}` });

    it('grants an integer token below 2^53 and a lease; locking does not need the session to exist', async () => {
      const { lock, clock } = await make();
      const lease = await lock.acquire(key(), { leaseMs: 5000 });
      expect(Number.isSafeInteger(lease.token)).toBe(true);
      expect(lease.expiresAt.getTime()).toBe(clock.t + 5000);
      expect(lease.owner).toMatch(/^[0-9a-f-]{36}$/);
      expect(lease.leaseMs).toBe(5000);
    });

    it('refuses a held lock with the holder and expiry, never the token', async () => {
      const { lock, clock } = await make();
      const k = key();
      const held = await lock.acquire(k, { owner: 'agent-1' });
      const error = await lock.acquire(k, { owner: 'agent-2' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockConflictError);
      expect(error).toMatchObject({ holder: 'agent-1', expiresAt: held.expiresAt });
      expect(JSON.stringify(error)).not.toContain(String(held.token));
      expect(clock.t).toBeGreaterThan(0);
    });

    it('is reentrant for an explicit owner only: same token, extended lease', async () => {
      const { lock, clock } = await make();
      const k = key();
      const first = await lock.acquire(k, { owner: 'runner-7', leaseMs: 2000 });
      clock.t += 1000;
      const again = await lock.acquire(k, { owner: 'runner-7', leaseMs: 2000 });
      expect(again.token).toBe(first.token);
      expect(again.expiresAt.getTime()).toBe(clock.t + 2000);
      const anonymous = await lock.acquire(key());
      await expect(lock.acquire({ ...k }, {})).rejects.toBeInstanceOf(LockConflictError);
      expect(anonymous.owner).not.toBe('runner-7');
    });

    it('grantOf: the token granted and whether a live lease holds it; a commit recorded by release, renew or recordCommit', async () => {
      const { lock, clock } = await make();
      const k = key();
      expect(await lock.grantOf(k)).toBeUndefined();
      const lease = await lock.acquire(k, { leaseMs: 2000 });
      expect(await lock.grantOf(k)).toEqual({ token: lease.token, live: true });
      const commit = { commitId: 'c1', digest: 'd'.repeat(64) };
      await lock.recordCommit(k, lease.token, commit);
      expect(await lock.grantOf(k)).toEqual({ token: lease.token, live: true, commit });
      // Not the holder's token: nothing recorded.
      await lock.recordCommit(k, lease.token + 1, { commitId: 'c0', digest: 'e'.repeat(64) });
      expect((await lock.grantOf(k))?.commit).toEqual(commit);
      const renewed = { commitId: 'c2', digest: 'f'.repeat(64) };
      await lock.renew(k, lease.owner, lease.token, { leaseMs: 2000, commit: renewed });
      expect((await lock.grantOf(k))?.commit).toEqual(renewed);
      const released = { commitId: 'c3', digest: '0'.repeat(64) };
      await lock.release(k, lease.owner, lease.token, { commit: released });
      expect(await lock.grantOf(k)).toEqual({ token: lease.token, live: false, commit: released });
      // Expired: the token is no longer live, and the next grant is above it.
      const next = await lock.acquire(k, { leaseMs: 1000 });
      clock.t += 5000;
      expect(await lock.grantOf(k)).toMatchObject({ token: next.token, live: false });
      expect(next.token).toBeGreaterThan(lease.token);
    });

    it('holderOf: the live lease (owner, token, expiry) only; none when never granted, released or expired', async () => {
      const { lock, clock } = await make();
      const k = key();
      expect(await lock.holderOf(k)).toBeUndefined();
      const lease = await lock.acquire(k, { owner: 'reader-1', leaseMs: 2000 });
      expect(await lock.holderOf(k)).toEqual({
        owner: 'reader-1',
        token: lease.token,
        expiresAt: lease.expiresAt,
      });
      // Another user's session of the same id has no holder.
      expect(await lock.holderOf({ userId: 'mallory', sessionId: k.sessionId })).toBeUndefined();
      const renewed = await lock.renew(k, 'reader-1', lease.token, { leaseMs: 3000 });
      expect((await lock.holderOf(k))?.expiresAt).toEqual(renewed.expiresAt);
      await lock.release(k, 'reader-1', lease.token);
      expect(await lock.holderOf(k)).toBeUndefined();
      const next = await lock.acquire(k, { leaseMs: 1000 });
      expect((await lock.holderOf(k))?.token).toBe(next.token);
      clock.t += 1000 + 600; // past the lease and the clock-skew tolerance
      expect(await lock.holderOf(k)).toBeUndefined();
    });

    it('user A session s and user B session s are different locks', async () => {
      const { lock } = await make();
      const sessionId = `shared-${randomUUID()}`;
      await lock.acquire({ userId: 'a', sessionId });
      await lock.acquire({ userId: 'b', sessionId });
      await lock.acquire({ userId: null, sessionId });
      await expect(lock.acquire({ userId: 'a', sessionId })).rejects.toBeInstanceOf(LockConflictError);
    });

    it('takes over a crashed holder right after expiry, with a higher token', async () => {
      const { lock, clock } = await make();
      const k = key();
      const crashed = await lock.acquire(k, { leaseMs: 1000 });
      clock.t += 1000 + 600; // past the lease and the clock-skew tolerance
      const taken = await lock.acquire(k, { leaseMs: 1000 });
      expect(taken.token).toBeGreaterThan(crashed.token);
      await expect(lock.renew(k, crashed.owner, crashed.token)).rejects.toBeInstanceOf(LockLostError);
      await expect(lock.release(k, crashed.owner, crashed.token)).rejects.toBeInstanceOf(LockLostError);
    });

    it('renew extends the holder only; release is idempotent; a non-holder cannot release', async () => {
      const { lock, clock } = await make();
      const k = key();
      const lease = await lock.acquire(k, { leaseMs: 3000 });
      clock.t += 2000;
      const renewed = await lock.renew(k, lease.owner, lease.token, { leaseMs: 3000 });
      expect(renewed.expiresAt.getTime()).toBe(clock.t + 3000);
      expect(renewed.token).toBe(lease.token);
      await expect(lock.renew(k, 'intruder', lease.token)).rejects.toBeInstanceOf(LockLostError);
      await expect(lock.renew(k, lease.owner, lease.token + 1)).rejects.toBeInstanceOf(LockLostError);
      await expect(lock.release(k, 'intruder', lease.token)).rejects.toBeInstanceOf(LockLostError);
      await lock.release(k, lease.owner, lease.token);
      await lock.release(k, lease.owner, lease.token);
      await expect(lock.renew(k, lease.owner, lease.token)).rejects.toBeInstanceOf(LockLostError);
      const next = await lock.acquire(k);
      expect(next.token).toBeGreaterThan(lease.token);
    });

    it('tokens strictly increase over 1,000 grants, expiries and releases included', async () => {
      const { lock, clock } = await make();
      const k = key();
      let last = 0;
      for (let i = 0; i < 1000; i++) {
        const lease = await lock.acquire(k, { leaseMs: 1000 });
        expect(lease.token).toBeGreaterThan(last);
        last = lease.token;
        if (i % 3 === 0)
          clock.t += 2000; // let it expire
        else await lock.release(k, lease.owner, lease.token);
      }
    });

    it('a restarted in-process lock or a lock item removed as by TTL keeps issuing higher tokens', async () => {
      const harness = await make();
      const k = key();
      let last = 0;
      for (let i = 0; i < 50; i++) {
        const lease = await harness.lock.acquire(k);
        last = lease.token;
        await harness.lock.release(k, lease.owner, lease.token);
      }
      // Tokens follow the clock and run ahead of it only during bursts of more than one grant per
      // millisecond (here 50 in the same fake millisecond); a restart or a TTL removal comes later than that.
      expect(last - harness.clock.t).toBeLessThanOrEqual(50);
      harness.clock.t += 1000;
      const fresh = await harness.forget(k);
      expect((await fresh.acquire(k)).token).toBeGreaterThan(last);
    });

    it('20 concurrent acquirers: exactly one holder at any time, over 200 acquisitions', async () => {
      const { lock } = await make();
      const k = key();
      let holders = 0;
      let maxHolders = 0;
      let granted = 0;
      const tokens: number[] = [];
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          for (let i = 0; i < 10; i++) {
            const lease = await lock.acquire(k, { waitMs: 10_000 });
            holders++;
            maxHolders = Math.max(maxHolders, holders);
            granted++;
            tokens.push(lease.token);
            await new Promise((r) => setTimeout(r, 1));
            holders--;
            await lock.release(k, lease.owner, lease.token);
          }
        }),
      );
      expect(granted).toBe(200);
      expect(maxHolders).toBe(1);
      expect(new Set(tokens).size).toBe(200);
    });

    it('refuses bad input with validation errors', async () => {
      const { lock } = await make();
      const k = key();
      for (const bad of [
        { leaseMs: 0 },
        { leaseMs: 1e9 },
        { leaseMs: 1500.5 },
        { waitMs: 60_000 },
        { waitMs: -1 },
        { owner: '' },
        { owner: 'x'.repeat(129) },
        { owner: 'has space' },
        { owner: 'slash/no' },
      ]) {
        await expect(lock.acquire(k, bad)).rejects.toBeInstanceOf(ValidationError);
      }
      await expect(lock.acquire({ userId: 'a', sessionId: '' })).rejects.toBeInstanceOf(ValidationError);
      await expect(lock.renew(k, 'owner', -1)).rejects.toBeInstanceOf(ValidationError);
      await expect(lock.release(k, 'owner', 2 ** 53)).rejects.toBeInstanceOf(ValidationError);
    });
  });
}
