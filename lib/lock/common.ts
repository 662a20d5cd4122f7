/** What both lock backends share: the stored name of a lock key, the next token, the wait for a held lock. */
// The lock key's name and the wait are the contract's (every lock's, the engines' included).
export { lockName, waitFor } from '../contract/lock.js';

/** The next token: above the previous one, and never below the clock, so a lost counter cannot go back. */
export function nextToken(previous: number | undefined, now: number): number {
  return Math.max((previous ?? 0) + 1, now);
}
