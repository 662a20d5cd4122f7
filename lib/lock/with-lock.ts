/** Runs work under a lease: acquire, renew in the background, abort when the lease is lost, release. */

import { LockLostError } from '../contract/errors.js';
import {
  type AcquireOptions,
  LEASE_MS,
  type Lease,
  type LockKey,
  type SessionLock,
} from '../contract/lock.js';

/** Options of `withLock`. */
export interface WithLockOptions extends AcquireOptions {
  /** Renew when this fraction of the lease is left; default 0.5. */
  readonly renewAt?: number;
  /** Milliseconds left in the invocation (Lambda's `context.getRemainingTimeInMillis`): caps the lease. */
  readonly remainingTimeMs?: () => number;
  /** Clock; default `Date.now`. */
  readonly now?: () => number;
}

/**
 * Acquires the lock, runs `fn(lease, signal)` renewing the lease in the background, and releases it
 * in `finally`. `signal` aborts when the lease is lost or about to expire without a renewal; `fn`
 * should stop writing then (its writes carry `lease.token`, so late ones are fenced anyway). No
 * timer outlives the call, so nothing keeps a process or a Lambda alive.
 */
export async function withLock<T>(
  lock: SessionLock,
  key: LockKey,
  fn: (lease: Lease, signal: AbortSignal) => Promise<T>,
  options: WithLockOptions = {},
): Promise<T> {
  const now = options.now ?? Date.now;
  const renewAt = options.renewAt ?? 0.5;
  let leaseMs = options.leaseMs;
  if (options.remainingTimeMs) {
    // Never hold a lease past the end of the invocation that holds it.
    const left = Math.max(1000, options.remainingTimeMs() - 500);
    leaseMs = Math.min(leaseMs ?? LEASE_MS.default, left);
  }
  let lease = await lock.acquire(key, { ...options, leaseMs });
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const schedule = () => {
    if (stopped) return;
    const untilExpiry = lease.expiresAt.getTime() - now();
    const delay = Math.max(0, untilExpiry - lease.leaseMs * renewAt);
    timer = setTimeout(renew, delay);
    timer.unref();
  };
  const renew = async () => {
    if (stopped) return;
    try {
      lease = await lock.renew(key, lease.owner, lease.token, { leaseMs: lease.leaseMs });
      schedule();
    } catch (error) {
      if (error instanceof LockLostError) {
        controller.abort(error);
        return;
      }
      // A transient failure: try again soon, and abort if the lease runs out first.
      if (lease.expiresAt.getTime() - now() <= 0) controller.abort(new LockLostError('the lease expired'));
      else {
        timer = setTimeout(renew, Math.min(1000, Math.max(0, lease.expiresAt.getTime() - now()) / 4));
        timer.unref();
      }
    }
  };

  schedule();
  try {
    return await fn(lease, controller.signal);
  } finally {
    stopped = true;
    clearTimeout(timer);
    await lock.release(key, lease.owner, lease.token).catch((error: unknown) => {
      if (!(error instanceof LockLostError)) throw error;
    });
  }
}
