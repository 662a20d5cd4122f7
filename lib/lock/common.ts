/** What both lock backends share: the stored name of a lock key, the next token, the wait for a held lock. */
import { LockConflictError } from '../contract/errors.js';
import { encodeId, userSegment } from '../contract/ids.js';
import type { LockKey } from '../contract/lock.js';
import { BACKOFF, backoffMs } from '../util/backoff.js';

/** The stored name of a lock key, encoded as the store encodes ids. */
export function lockName(key: LockKey): string {
  return `${userSegment(key.userId)}/${encodeId('sessionId', key.sessionId)}`;
}

/** The next token: above the previous one, and never below the clock, so a lost counter cannot go back. */
export function nextToken(previous: number | undefined, now: number): number {
  return Math.max((previous ?? 0) + 1, now);
}

/**
 * Waits for a held lock with backoff and jitter, up to `waitMs`, by retrying `attempt`, which throws
 * `LockConflictError` while the lock is held.
 */
export async function waitFor<T>(attempt: () => Promise<T>, waitMs: number, now: () => number): Promise<T> {
  const deadline = now() + waitMs;
  for (let round = 0; ; round++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof LockConflictError)) throw error;
      const left = deadline - now();
      if (left <= 0) throw error;
      const untilFree = error.expiresAt.getTime() - now();
      const pause = Math.min(left, backoffMs(BACKOFF.lockWait, round), Math.max(5, untilFree));
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
