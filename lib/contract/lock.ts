/**
 * The lock's vocabulary (docs/DESIGN.md, "Fencing"): leases with fencing tokens, one lock per
 * (user, session), the lock as the store's authority over tokens, and the checks of what callers
 * pass (owner, lease, wait, token).
 */
import { BACKOFF, backoffMs } from '../util/backoff.js';
import { FencedError, LockConflictError, ValidationError } from './errors.js';
import { encodeId, userSegment } from './ids.js';

/** A commit's identity as a lease records it (released or renewed with it). */
export interface CommitIdentity {
  readonly commitId: string;
  /** `commitDigest` of its body. */
  readonly digest: string;
}

/** What the lock says of a session now. */
export interface LockGrant {
  /** The last token granted for the session. */
  readonly token: number;
  /** A lease holds it and has not expired. */
  readonly live: boolean;
  /** The commit the lease last recorded (on release or renewal), if any. */
  readonly commit?: CommitIdentity;
}

/** The session's authority over tokens: the lock, read with a consistent read (DynamoDB GetItem, a map lookup). */
export interface TokenAuthority {
  /** The session's lock item now, or undefined when it has none. */
  grantOf(key: LockKey): Promise<LockGrant | undefined>;
}

/** A granted lease. */
export interface Lease {
  readonly owner: string;
  /** Fencing token: an integer below 2^53 that only grows for a lock key. Pass it to store writes. */
  readonly token: number;
  readonly expiresAt: Date;
  readonly leaseMs: number;
}

/** Who holds a session's lock now, as one consistent read of the lock sees it. */
export interface LockHolder {
  readonly owner: string;
  /** The fencing token of the lease. */
  readonly token: number;
  readonly expiresAt: Date;
}

/** Options of `acquire`. */
export interface AcquireOptions {
  /** 1,000 to 900,000 ms; default 60,000. */
  readonly leaseMs?: number;
  /** How long to wait for a held lock, 0 to 10,000 ms; default 0. */
  readonly waitMs?: number;
  /** An owner name (`OWNER_PATTERN`); default a new UUID. Only an explicit owner is reentrant. */
  readonly owner?: string;
}

/** Which session a lock guards; user A's session `s` and user B's session `s` are different locks. */
export interface LockKey {
  readonly userId: string | null;
  readonly sessionId: string;
}

/**
 * A lock backend (DynamoDB, or in-process). It is also the store's authority over fencing tokens
 * (`grantOf`, docs/DESIGN.md "The write path"): give it to `createStateStore({ authority })`.
 */
export interface SessionLock extends TokenAuthority {
  acquire(key: LockKey, options?: AcquireOptions): Promise<Lease>;
  /**
   * Extends the lease of the current holder; `LockLostError` for anyone else. `commit`: the identity
   * of the commit this renewal follows, recorded in the lock (a reused commit id is told from a replay).
   */
  renew(
    key: LockKey,
    owner: string,
    token: number,
    options?: { leaseMs?: number; commit?: CommitIdentity },
  ): Promise<Lease>;
  /**
   * Releases; succeeds when already free or expired; `LockLostError` when another owner holds it now.
   * `commit`: as for `renew`, recorded when the release takes effect.
   */
  release(key: LockKey, owner: string, token: number, options?: { commit?: CommitIdentity }): Promise<void>;
  /**
   * The live lease of a session, read with one consistent read (DynamoDB GetItem with
   * ConsistentRead, a map lookup); undefined when none holds it (never granted, released or expired).
   */
  holderOf(key: LockKey): Promise<LockHolder | undefined>;
  /** Records a commit made under the lease of `token` without renewing or releasing it (when that lease is still held). */
  recordCommit(key: LockKey, token: number, commit: CommitIdentity): Promise<void>;
  /**
   * Whether the lock's backend can be reached (DynamoDB: one DescribeTable): resolves, or
   * `MisconfiguredBackendError` (a missing table, refused credentials) or a retryable `BackendError`.
   */
  checkReady(): Promise<void>;
}

export const LEASE_MS = { min: 1000, max: 900_000, default: 60_000 } as const;
export const WAIT_MS = { min: 0, max: 10_000, default: 0 } as const;
/** A lease owner name: 1 to 128 characters of letters, digits and `._:-`. */
export const OWNER_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
/** What `OWNER_PATTERN` asks for, as a refusal says it. */
export const OWNER_RULE = 'must be 1 to 128 letters, digits or any of . _ : -';

/** Checks an owner name. */
export function checkOwner(owner: unknown, field = 'owner'): string {
  if (typeof owner !== 'string' || !OWNER_PATTERN.test(owner)) {
    throw new ValidationError(field, OWNER_RULE);
  }
  return owner;
}

/** Checks a lease length. */
export function checkLeaseMs(leaseMs: unknown): number {
  const value = leaseMs ?? LEASE_MS.default;
  if (!Number.isSafeInteger(value) || (value as number) < LEASE_MS.min || (value as number) > LEASE_MS.max) {
    throw new ValidationError('leaseMs', `must be an integer from ${LEASE_MS.min} to ${LEASE_MS.max}`);
  }
  return value as number;
}

/** Checks a wait. */
export function checkWaitMs(waitMs: unknown): number {
  const value = waitMs ?? WAIT_MS.default;
  if (!Number.isSafeInteger(value) || (value as number) < WAIT_MS.min || (value as number) > WAIT_MS.max) {
    throw new ValidationError('waitMs', `must be an integer from ${WAIT_MS.min} to ${WAIT_MS.max}`);
  }
  return value as number;
}

/**
 * Checks a fencing token: an integer from 0 below 2^53. The one rule, for the lock (where a token
 * is required) and every write (`optional`: a write without a token is not fenced).
 */
export function checkToken(token: unknown): number;
export function checkToken(token: unknown, optional: 'optional'): number | undefined;
export function checkToken(token: unknown, optional?: 'optional'): number | undefined {
  if (token === undefined && optional) return undefined;
  if (!Number.isSafeInteger(token) || (token as number) < 0) {
    throw new ValidationError('token', 'must be a non-negative integer below 2^53');
  }
  return token as number;
}

/** Whether a lease that runs until `expiresAt` (ms) still holds at `now`, `skewMs` of clock skew allowed. */
export function leaseHolds(expiresAt: number, now: number, skewMs = 0): boolean {
  return expiresAt >= now - skewMs;
}

/**
 * The fencing rule of every engine (docs/DESIGN.md, "Fencing"): the refusal of a write carrying
 * `token`, or undefined when it may write. A token below one its targets record (`recorded`) is
 * refused with the higher one; with an authority (`authorized`), so is a token below the lock's
 * grant, and one the lock has not granted to a live lease (`seen: null`). No token: not fenced.
 */
export function fencingRefusal(
  token: number | undefined,
  recorded: ReadonlyArray<number | null | undefined>,
  authorized: boolean,
  grant: LockGrant | undefined,
): FencedError | undefined {
  if (token === undefined) return undefined;
  const seen = Math.max(-1, ...recorded.map((t) => t ?? -1));
  if (seen > token) return new FencedError(token, seen);
  if (!authorized) return undefined;
  if (grant && grant.token > token) return new FencedError(token, grant.token);
  if (!grant || grant.token !== token || !grant.live) return new FencedError(token, null);
  return undefined;
}

/** The stored name of a lock key, encoded as the store encodes ids. */
export function lockName(key: LockKey): string {
  return `${userSegment(key.userId)}/${encodeId('sessionId', key.sessionId)}`;
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
