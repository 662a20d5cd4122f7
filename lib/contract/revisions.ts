/**
 * A value's revision (docs/DESIGN.md, "Revisions"): 1 when created, +1 on every write since, a
 * positive integer below 2^53. The rule of a revision a caller names (`ifRevision`, `If-Revision`,
 * a commit's `ifRevision` and `seenRevision`).
 */
import { ValidationError } from './errors.js';

export const REVISION_RULE = 'must be a revision (an integer from 1 to 2^53 - 1)';

/** Whether `value` is a revision. */
export const isRevision = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;

/** `value` when it is undefined or a revision, else a `ValidationError` naming `field`. */
export function checkRevision(field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (!isRevision(value)) throw new ValidationError(field, REVISION_RULE);
  return value;
}
