/**
 * The one retry pause of the package: jittered exponential backoff ("full jitter": a pause drawn
 * uniformly from 0 to min(cap, base × 2^attempt)), with a named policy for each kind of retry.
 */

/** How a kind of retry pauses. */
export interface BackoffPolicy {
  /** The ceiling of the first pause (attempt 0), doubled at each attempt. */
  readonly baseMs: number;
  /** The highest ceiling. */
  readonly capMs: number;
  /** The shortest pause (a floor under the draw); default 0. */
  readonly minMs?: number;
  /** Attempts before this one retry at once, without a pause; default 0. */
  readonly fromAttempt?: number;
}

/** The retries of the package and their pauses. */
export const BACKOFF = {
  /** A store write that lost a race to another writer (a list head, a marker): 10 ms doubling, at most 400 ms. */
  storeRace: { baseMs: 10, capMs: 400 },
  /** A wait for a held lock (`waitMs`): 25 ms doubling, at most 250 ms, at least 5 ms. */
  lockWait: { baseMs: 25, capMs: 250, minMs: 5 },
  /** A transient failure (an OSS request, the typed client's answer without `Retry-After`): 100 ms doubling, at most 2 s. */
  transient: { baseMs: 100, capMs: 2000 },
  /** A framework adapter's contended operation: at once twice, then 1 ms doubling, at most 100 ms. */
  contended: { baseMs: 1, capMs: 100, fromAttempt: 3 },
} as const satisfies Record<string, BackoffPolicy>;

/** The pause before retry `attempt` (0-based) under `policy`, in ms. */
export function backoffMs(
  policy: BackoffPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  if (attempt < (policy.fromAttempt ?? 0)) return 0;
  return Math.max(policy.minMs ?? 0, random() * Math.min(policy.capMs, policy.baseMs * 2 ** attempt));
}

/** Waits the pause before retry `attempt` under `policy` (at once when it is 0). */
export function backoff(policy: BackoffPolicy, attempt: number): Promise<void> {
  const ms = backoffMs(policy, attempt);
  return ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
}
