/**
 * One framework adapter's operations as the bench measures them: each adapter's module
 * prepares a steady state through the typed client, then answers its operations; the bench counts
 * the HTTP calls and S3 requests of each `run` (called `repeat` times, means printed).
 */
import type { HttpSessionStore } from '../../lib/client/index.js';

export interface FrameworkOp {
  /** What the framework calls, as the README names it (for example `put`, `getTuple (latest)`). */
  readonly name: string;
  /** One call of the operation; repeatable (each call may change state, as the framework would). */
  run(): Promise<unknown>;
}

export interface FrameworkBench {
  /** The framework, as the README names it. */
  readonly framework: string;
  /** Sets up a steady state through `client` (not counted) and answers the operations to measure. */
  prepare(client: HttpSessionStore): Promise<FrameworkOp[]>;
}
