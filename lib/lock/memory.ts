/** In-process lock: the embedded default and unit tests. Tokens follow the clock, so a restart never goes back. */
import { randomUUID } from 'node:crypto';
import { LockConflictError, LockLostError } from '../contract/errors.js';
import {
  type AcquireOptions,
  type CommitIdentity,
  checkLeaseMs,
  checkOwner,
  checkToken,
  checkWaitMs,
  type Lease,
  type LockKey,
  leaseHolds,
  type SessionLock,
} from '../contract/lock.js';
import { lockName, nextToken, waitFor } from './common.js';

/** Options of the in-process lock. */
export interface MemoryLockOptions {
  /** Clock; default `Date.now`. */
  readonly now?: () => number;
}

interface Entry {
  owner?: string;
  token: number;
  expiresAt: number;
  leaseMs: number;
  commit?: CommitIdentity;
}

/** Creates an in-process lock. */
export function createMemoryLock(options: MemoryLockOptions = {}): SessionLock {
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  const lease = (e: Entry): Lease => ({
    owner: e.owner ?? '',
    token: e.token,
    expiresAt: new Date(e.expiresAt),
    leaseMs: e.leaseMs,
  });

  function tryAcquire(name: string, owner: string, explicit: boolean, leaseMs: number): Lease {
    const e = entries.get(name);
    const t = now();
    if (e?.owner !== undefined && leaseHolds(e.expiresAt, t)) {
      if (!(explicit && e.owner === owner)) throw new LockConflictError(e.owner, new Date(e.expiresAt));
      e.expiresAt = t + leaseMs;
      e.leaseMs = leaseMs;
      return lease(e);
    }
    const granted: Entry = {
      owner,
      token: nextToken(e?.token, t),
      expiresAt: t + leaseMs,
      leaseMs,
      ...(e?.commit ? { commit: e.commit } : {}),
    };
    entries.set(name, granted);
    return lease(granted);
  }

  return {
    async acquire(key, o: AcquireOptions = {}) {
      const leaseMs = checkLeaseMs(o.leaseMs);
      const waitMs = checkWaitMs(o.waitMs);
      const owner = o.owner === undefined ? randomUUID() : checkOwner(o.owner);
      const name = lockName(key);
      return waitFor(async () => tryAcquire(name, owner, o.owner !== undefined, leaseMs), waitMs, now);
    },
    async renew(key: LockKey, owner, token, o = {}) {
      checkOwner(owner);
      checkToken(token);
      const leaseMs = checkLeaseMs(o.leaseMs);
      const e = entries.get(lockName(key));
      if (!e || e.owner !== owner || e.token !== token) throw new LockLostError();
      e.expiresAt = now() + leaseMs;
      e.leaseMs = leaseMs;
      if (o.commit) e.commit = o.commit;
      return lease(e);
    },
    async release(key, owner, token, o = {}) {
      checkOwner(owner);
      checkToken(token);
      const e = entries.get(lockName(key));
      if (!e || e.owner === undefined || !leaseHolds(e.expiresAt, now())) return;
      if (e.owner !== owner || e.token !== token) throw new LockLostError('another owner holds the lock');
      e.owner = undefined;
      e.expiresAt = 0;
      if (o.commit) e.commit = o.commit;
    },
    async recordCommit(key, token, commit) {
      checkToken(token);
      const e = entries.get(lockName(key));
      if (e?.owner !== undefined && e.token === token && leaseHolds(e.expiresAt, now())) e.commit = commit;
    },
    async holderOf(key) {
      const e = entries.get(lockName(key));
      if (e?.owner === undefined || !leaseHolds(e.expiresAt, now())) return undefined;
      return { owner: e.owner, token: e.token, expiresAt: new Date(e.expiresAt) };
    },
    async grantOf(key) {
      const e = entries.get(lockName(key));
      if (!e) return undefined;
      const live = e.owner !== undefined && leaseHolds(e.expiresAt, now());
      return { token: e.token, live, ...(e.commit ? { commit: e.commit } : {}) };
    },
    // In process: always reachable.
    async checkReady() {},
  };
}
