/**
 * `GET /v1/ready` (docs/deploying.md, "Readiness"): whether the store and the lock can be reached
 * with the function's credentials — one GET of a fixed name (`StateStore.checkReady`) and one
 * DescribeTable (`SessionLock.checkReady`), in parallel. The outcome, a failure too, is kept for
 * `READY_CACHE_MS` per function instance, so probes cannot multiply requests to the backends.
 */
import type { SessionLock } from '../contract/lock.js';
import type { StateStore } from '../contract/types.js';

/** How long one check's outcome answers every readiness request of the instance. */
export const READY_CACHE_MS = 5_000;

/** The dependency a readiness check found failing. */
export type ReadyDependency = 'store' | 'lock';

/** A failed readiness check: which dependency, and its typed error (`cause`). */
export class DependencyFailure extends Error {
  constructor(
    readonly dependency: ReadyDependency,
    cause: unknown,
  ) {
    super(`${dependency}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/** Checks readiness, at most once per `READY_CACHE_MS`: resolves, or rejects with a `DependencyFailure`. */
export function readinessOf(
  store: StateStore,
  lock: SessionLock,
  now: () => number = Date.now,
): () => Promise<void> {
  let cached: { at: number; outcome: Promise<void> } | undefined;
  const check = async () => {
    const failure = (dependency: ReadyDependency) => (error: unknown) => {
      throw new DependencyFailure(dependency, error);
    };
    // The store first when both fail: without it nothing works.
    const [stored, locked] = await Promise.allSettled([
      store.checkReady().catch(failure('store')),
      lock.checkReady().catch(failure('lock')),
    ]);
    for (const outcome of [stored, locked]) if (outcome.status === 'rejected') throw outcome.reason;
  };
  return () => {
    const at = now();
    if (!cached || at - cached.at >= READY_CACHE_MS) {
      const outcome = check();
      // Kept as it settles, failure included; never an unhandled rejection while cached.
      outcome.catch(() => undefined);
      cached = { at, outcome };
    }
    return cached.outcome;
  };
}
