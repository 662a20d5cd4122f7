/**
 * Every error a caller can catch: the store's, the lock's and the HTTP protocol's, each defined
 * once here (so `instanceof` holds across the package's entries). Each carries the data a caller
 * needs to decide what to do.
 */

/** What a deployment gives a backend: a missing or refused one is a configuration problem. */
export type BackendResource = 'bucket' | 'table' | 'credentials';

/** An RFC 9457 problem, as an answer of the API carried it (every member as sent). */
export interface ProblemDetails {
  readonly type?: string;
  readonly title?: string;
  readonly status?: number;
  readonly detail?: string;
  /** The problem code (lib/protocol/problems.ts). */
  readonly code?: string;
  readonly [member: string]: unknown;
}

/**
 * Base class of every store error. Raised by the typed HTTP client from an answer, it carries what
 * the answer said: `status`, `requestId`, and, when the answer was a problem, its `code` and the
 * `problem` itself (from the object store, `code` is its error code). Raised before any answer (a
 * bad option, a network failure), they are undefined.
 */
export class StoreError extends Error {
  override name = 'StoreError';
  /** The HTTP status of the answer it comes from. */
  declare status?: number;
  /** The problem code of that answer (its `code`), or the object store's error code. */
  declare code?: string;
  /** The `X-Request-Id` of the answer it comes from (or the object store's request id). */
  declare requestId?: string;
  /** The RFC 9457 problem the answer carried. */
  declare problem?: ProblemDetails;
}

/** An id, key, value or option was refused before anything was read or written. */
export class ValidationError extends StoreError {
  override name = 'ValidationError';
  constructor(
    /** The offending field, parameter or option. */
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** A conditional save found another version; nothing was written. */
export class PreconditionFailedError extends StoreError {
  override name = 'PreconditionFailedError';
  constructor(
    /** The value's current version, or null when it is absent. */
    readonly currentVersion: string | null,
    /** The value's current revision (null when it is absent), when the store read it. */
    readonly currentRevision?: number | null,
  ) {
    super(`precondition failed; current version ${currentVersion ?? '(absent)'}`);
  }
}

/**
 * A list read or whole-list save with a base (`ifHash`, HTTP `If-Match: "<hash>"`) found the list
 * at another hash; nothing was written. A `PreconditionFailedError` whose version is unknown.
 */
export class ListPreconditionFailedError extends PreconditionFailedError {
  override name = 'ListPreconditionFailedError';
  constructor(
    /** The list's current chain hash (the empty list's when it is absent). */
    readonly currentHash: string,
  ) {
    super(null);
    this.message = `precondition failed; the list's hash is ${currentHash}`;
  }
}

/**
 * A truncate asked to keep more items than the list has (HTTP 400, as any `ValidationError`);
 * nothing was written.
 */
export class ListTooShortError extends ValidationError {
  override name = 'ListTooShortError';
  constructor(
    /** The count asked for. */
    readonly count: number,
    /** The list's count. */
    readonly currentCount: number,
  ) {
    super('count', `the list has ${currentCount} items, fewer than ${count}`);
  }
}

/** The session does not exist (no live marker; another user's session is absent too): HTTP 404. */
export class SessionNotFoundError extends StoreError {
  override name = 'SessionNotFoundError';
  constructor(readonly sessionId: string) {
    super('no such session');
  }
}

/** The backend cannot evaluate the condition asked for (OSS has no compare-and-swap overwrite). */
export class PreconditionUnsupportedError extends StoreError {
  override name = 'PreconditionUnsupportedError';
  constructor(readonly backend: string) {
    super(`${backend} cannot evaluate a conditional overwrite; nothing was written`);
  }
}

/** An append found a list that is neither at `expectedCount` nor a replay of the same items. */
export class AppendConflictError extends StoreError {
  override name = 'AppendConflictError';
  constructor(
    readonly count: number,
    readonly hash: string,
  ) {
    super(`append conflict: the list has ${count} items (${hash})`);
  }
}

/** A write carried a fencing token lower than one the session or the object has seen; nothing was written. */
export class FencedError extends StoreError {
  override name = 'FencedError';
  constructor(
    readonly token: number,
    /** The higher token seen; null: the lock has not granted this token to a live lease. */
    readonly seen: number | null,
  ) {
    super(seen === null ? `fenced: token ${token} not granted` : `fenced: token ${token} is below ${seen}`);
  }
}

/**
 * An Idempotency-Key the list records for another request (other items, count or hash): nothing
 * was written. A key names one request; send a new key with a new request.
 */
export class IdempotencyKeyReusedError extends StoreError {
  override name = 'IdempotencyKeyReusedError';
  constructor() {
    super('the Idempotency-Key was used for another request; nothing was written');
  }
}

/** A stored value cannot be parsed; only that key is affected. */
export class CorruptValueError extends StoreError {
  override name = 'CorruptValueError';
  constructor(
    readonly key: string,
    options?: { cause?: unknown },
  ) {
    super(`stored value of ${key} is corrupt`, options);
  }
}

/** The backend failed (after retries); `retryable` says whether trying again may help. */
export class BackendError extends StoreError {
  override name = 'BackendError';
  constructor(
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A bucket or lock table that does not exist or refuses these credentials, or credentials the
 * backend refuses: the deployment is wrong, not the request. Not retryable (503
 * `backend-misconfigured`, without Retry-After): every request fails the same way until the
 * deployment is fixed. `resourceName` and `identity` are for the server's log, never for an answer.
 */
export class MisconfiguredBackendError extends BackendError {
  override name = 'MisconfiguredBackendError';
  /** The bucket or table (by its name), where the backend's refusal names one. */
  readonly resourceName?: string;
  /**
   * Who the backend refused, as far as it is known without another request, and how it is known:
   * `arn:aws:sts::…` from the backend's message, or `access key id AKIA…WXYZ` (never a secret).
   */
  readonly identity?: string;
  constructor(
    /** `s3`, `oss`, `dynamodb`. */
    readonly backend: string,
    readonly resource: BackendResource,
    message: string,
    options?: { cause?: unknown; resourceName?: string | undefined; identity?: string | undefined },
  ) {
    super(message, false, options);
    if (options?.resourceName !== undefined) this.resourceName = options.resourceName;
    if (options?.identity !== undefined) this.identity = options.identity;
  }
}

/** Deleting a session left objects behind; every one is listed. The marker is already gone. */
export class PartialDeleteError extends StoreError {
  override name = 'PartialDeleteError';
  constructor(readonly failures: ReadonlyArray<{ key: string; code: string; message: string }>) {
    super(`could not delete ${failures.length} objects`);
  }
}

/** The object is in an archive class; a restore has been asked for (answer again later). */
export class RestoreInProgressError extends StoreError {
  override name = 'RestoreInProgressError';
  constructor(readonly what: string) {
    super(`${what} is archived; a restore is in progress`);
  }
}

/** An upload to complete or commit is unknown (never started, already completed, or aborted). */
export class UploadNotFoundError extends StoreError {
  override name = 'UploadNotFoundError';
  constructor(readonly uploadId: string) {
    super(`no such upload: ${uploadId}`);
  }
}

/** What was uploaded is not what was declared (size, part count or digests); nothing was committed. */
export class UploadMismatchError extends StoreError {
  override name = 'UploadMismatchError';
}

/** The backend or an adapter cannot do this (direct transfer on fs or memory; semantic search in the LangGraph memory store). */
export class UnsupportedOperationError extends StoreError {
  override name = 'UnsupportedOperationError';
  constructor(
    readonly operation: string,
    readonly backend: string,
  ) {
    super(`${backend} does not support ${operation}`);
  }
}

/**
 * A write to a session the AgentScope reference wrote under a segment that is no encoding of this
 * store's ids (HTTP 409 `reference-id-unsupported`); nothing was written: `npm run adopt` rewrites
 * its names (docs/backends.md, "Reading data written by the AgentScope reference").
 */
export class ReferenceIdUnsupportedError extends StoreError {
  override name = 'ReferenceIdUnsupportedError';
  /** `sessionId`: the session refused (empty when rebuilt from a problem body, `message` then its detail). */
  constructor(
    readonly sessionId: string,
    message = `the session ${JSON.stringify(sessionId)} was written by the AgentScope reference under names this store does not write; run npm run adopt first`,
  ) {
    super(message);
  }
}

/** A write gave up because other writers kept winning its races; nothing was written (retry it). */
export class ContendedError extends StoreError {
  override name = 'ContendedError';
}

/**
 * The backend acknowledged a write it had to refuse (a create-only or conditional write): it does
 * not honour the conditions every guarantee of the store rests on, so no write is acknowledged.
 */
export class BackendUnsafeError extends StoreError {
  override name = 'BackendUnsafeError';
  constructor(
    readonly backend: string,
    /** The guarantee the backend broke. */
    readonly guarantee: string,
  ) {
    super(`the ${backend} backend does not honour ${guarantee}; writes are refused`);
  }
}

/**
 * Why one key of a commit was not written (docs/DESIGN.md, "Snapshots and commits"): a value's
 * `ifVersion` / `ifAbsent` with its current version (null when absent); a list's expected count
 * (`count`, also a truncate longer than the list) or hash (`hash`) with its current count and
 * hash. `fenced`: at write time, the key recorded a greater fencing token than the commit's.
 */
export type CommitFailure =
  | {
      readonly kind: 'value';
      readonly key: string;
      readonly reason: 'version' | 'fenced';
      readonly currentVersion: string | null;
      /** The current revision (null when absent), when the commit read the value. */
      readonly currentRevision?: number | null;
    }
  | {
      readonly kind: 'list';
      readonly key: string;
      readonly reason: 'count' | 'hash' | 'fenced';
      readonly count: number;
      readonly hash: string;
    };

/**
 * A commit's preconditions failed when checked, before its first write: NOTHING was written.
 * `failures` names every failing key with its current version, or count and hash. `status` is
 * 409 when any failure is a list count conflict (`reason: 'count'`: the list has moved on; read it
 * again), else 412 (versions and hashes).
 */
export class CommitPreconditionError extends StoreError {
  override name = 'CommitPreconditionError';
  /** 409 with a count conflict among the failures, else 412. */
  override readonly status: 409 | 412;
  constructor(
    readonly commitId: string,
    readonly failures: readonly CommitFailure[],
  ) {
    super(
      `commit ${commitId}: preconditions failed for ${failures.map((f) => `${f.kind} ${f.key}`).join(', ')}; nothing was written`,
    );
    this.status = failures.some((f) => f.reason === 'count') ? 409 : 412;
  }
}

/**
 * A commit without a lease (no `token`) found a precondition failing at write time, after other
 * keys were written (HTTP 409 `commit-partial`): `applied` were written, `failed` were not. A retry
 * with the same `commitId` skips the applied keys.
 */
export class CommitPartialError extends StoreError {
  override name = 'CommitPartialError';
  constructor(
    readonly commitId: string,
    readonly applied: ReadonlyArray<{ readonly kind: 'value' | 'list'; readonly key: string }>,
    readonly failed: readonly CommitFailure[],
  ) {
    super(`commit ${commitId}: ${applied.length} keys written, ${failed.length} failed`);
  }
}

/**
 * A commit id already recorded by a key with another body (HTTP 409 `commit-mismatch`); nothing
 * was written by this call.
 */
export class CommitMismatchError extends StoreError {
  override name = 'CommitMismatchError';
  constructor(
    readonly commitId: string,
    /** Where the other body was found: a value's or a list's record, or the commit's own (`key` empty). */
    readonly kind: 'value' | 'list' | 'commit',
    readonly key: string,
  ) {
    super(
      kind === 'commit'
        ? `commit ${commitId} was recorded with another body`
        : `commit ${commitId} was applied to ${kind} ${key} with another body`,
    );
  }
}

// ---- the lock ----------------------------------------------------------------------------------

/** The lock is held by someone else (never says their token). */
export class LockConflictError extends StoreError {
  override name = 'LockConflictError';
  constructor(
    readonly holder: string,
    readonly expiresAt: Date,
  ) {
    super(`lock held by ${holder} until ${expiresAt.toISOString()}`);
  }
}

/** The caller no longer holds the lease it names. */
export class LockLostError extends StoreError {
  override name = 'LockLostError';
  constructor(message = 'the lease is no longer held') {
    super(message);
  }
}

// ---- the HTTP protocol -------------------------------------------------------------------------

/** The request had no valid identity (401). */
export class UnauthorizedError extends StoreError {
  override name = 'UnauthorizedError';
}

/**
 * The request named a user (`Agent-State-User`) that is not its token's (403): nothing was read
 * or written.
 */
export class UserMismatchError extends StoreError {
  override name = 'UserMismatchError';
}

/** The request or the answer was too large (413). */
export class PayloadTooLargeError extends StoreError {
  override name = 'PayloadTooLargeError';
  constructor(
    message: string,
    readonly limit?: number,
  ) {
    super(message);
  }
}

/**
 * An answer that is not one the protocol allows for the request: a body that is not JSON or not of
 * the declared schema, a status the route never answers, a route or method the server does not know
 * (a proxy's page, a server of another version). Retrying does not help.
 */
export class ProtocolError extends BackendError {
  override name = 'ProtocolError';
  constructor(
    message: string,
    /** The answer's HTTP status. */
    override readonly status: number,
    options?: { cause?: unknown },
  ) {
    super(message, false, options);
  }
}
