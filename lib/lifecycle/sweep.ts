/**
 * The scheduled sweep of a deployment: every bounded sweep its store has, run by one entry
 * (functions/aws/sweep.ts hourly, functions/aliyun/sweep.ts on a timer trigger, the local server
 * every SWEEP_INTERVAL_MINUTES; docs/deploying.md, "The sweep function"):
 * - the MySQL engine's expired sessions (`sweepExpired(limit)`, found by the indexed `expires_at`),
 *   batch after batch until one comes back short or the time budget is spent;
 * - the workspace snapshot packs of every user (`sweepWorkspacePacks`: the object store's, or the
 *   blob store's of an engine with BLOB_BACKEND), once.
 * Redis expires its keys by itself and object storage by its lifecycle rules: neither needs more.
 * The store is the one the entry's app built (lib/http/app.ts), so the sweep runs on exactly the
 * backends the API serves. One INFO line says what it did.
 */
import type { Config } from '../config.js';
import { DEFAULTS } from '../contract/defaults.js';
import {
  hasWorkspacePackSweep,
  type WorkspaceSweepOptions,
  type WorkspaceSweepResult,
} from '../contract/workspace-snapshots.js';
import { DAY_MS } from '../util/units.js';

/** A store with a bounded sweep of expired sessions (the MySQL engine's). */
export interface ExpirySweeper {
  /** Deletes up to `limit` expired sessions; answers how many. */
  sweepExpired(limit: number): Promise<number>;
}

/** Whether a store sweeps its expired sessions itself. */
export function hasExpirySweep<T extends object>(store: T): store is T & ExpirySweeper {
  return typeof (store as Partial<ExpirySweeper>).sweepExpired === 'function';
}

/** Where the INFO line goes (the app's Powertools logger). */
export interface SweepLogger {
  info(message: string, extra: Record<string, unknown>): void;
}

/** The sessions one `sweepExpired` call deletes at most. */
export const SWEEP_BATCH = 100;
/** How long the expiry sweep keeps starting batches (the functions' timeout is 300 s). */
export const SWEEP_BUDGET_MS = 240_000;

export interface SweepOptions extends WorkspaceSweepOptions {
  /** Sessions per `sweepExpired` call; default `SWEEP_BATCH`. */
  readonly batch?: number;
  /** No batch starts after this many ms; default `SWEEP_BUDGET_MS`. */
  readonly budgetMs?: number;
  /** Clock; default `Date.now`. */
  readonly now?: () => number;
}

/** What a sweep did. */
export interface SweepReport {
  /** Expired sessions deleted, in how many `sweepExpired` calls. */
  readonly expiredSessions: number;
  readonly batches: number;
  /** False when the budget ran out while batches still came back full (the next run goes on). */
  readonly complete: boolean;
  /** The workspace pack sweep's counts, when the store has one. */
  readonly packs?: WorkspaceSweepResult;
  readonly ms: number;
}

/** The sweep's options for a configuration: on fs and memory (no lifecycle rules) it deletes tagged packs itself. */
export function sweepOptionsOf(config: Config): SweepOptions {
  return config.STORE_BACKEND === 'fs' || config.STORE_BACKEND === 'memory'
    ? { deleteTaggedAfterMs: DEFAULTS.packGraceDays * DAY_MS }
    : {};
}

/** Runs every bounded sweep the store has, then logs one INFO line with the counts. */
export async function runSweep(
  app: { readonly store: object; readonly blobs?: object | undefined; readonly logger: SweepLogger },
  options: SweepOptions = {},
): Promise<SweepReport> {
  const { batch = SWEEP_BATCH, budgetMs = SWEEP_BUDGET_MS, now = Date.now, ...packOptions } = options;
  const { store } = app;
  const started = now();
  let expiredSessions = 0;
  let batches = 0;
  let complete = true;
  if (hasExpirySweep(store)) {
    for (;;) {
      const swept = await store.sweepExpired(batch);
      batches += 1;
      expiredSessions += swept;
      if (swept < batch) break;
      if (now() - started >= budgetMs) {
        complete = false;
        break;
      }
    }
  }
  // The object store's packs, or an engine's in its blob store (BLOB_BACKEND).
  const packSweeper = [store, app.blobs].filter((s) => s !== undefined).find(hasWorkspacePackSweep);
  const packs = packSweeper ? await packSweeper.sweepWorkspacePacks(packOptions) : undefined;
  const report: SweepReport = {
    expiredSessions,
    batches,
    complete,
    ...(packs ? { packs } : {}),
    ms: now() - started,
  };
  app.logger.info('sweep', { ...report });
  return report;
}
