/**
 * Every error the functions produce is an RFC 9457 `application/problem+json` body with a stable
 * `code`, its status and title from the protocol's table (lib/protocol/problems.ts). One map turns
 * typed errors into problems; anything unknown is a 500 that hides internals.
 */
import {
  AppendConflictError,
  BackendError,
  BackendUnsafeError,
  CommitMismatchError,
  CommitPartialError,
  CommitPreconditionError,
  ContendedError,
  CorruptValueError,
  FencedError,
  IdempotencyKeyReusedError,
  ListPreconditionFailedError,
  ListTooShortError,
  LockConflictError,
  LockLostError,
  MisconfiguredBackendError,
  PartialDeleteError,
  PreconditionFailedError,
  PreconditionUnsupportedError,
  RestoreInProgressError,
  SessionNotFoundError,
  UnsupportedOperationError,
  UploadMismatchError,
  UploadNotFoundError,
  ValidationError,
} from '../contract/errors.js';
import { PROBLEMS, type ProblemCode, problemType, SESSION_NOT_FOUND } from '../protocol/problems.js';
import type { HttpResponse } from './types.js';

/** A problem the router raises itself (its status is the code's). */
export class HttpProblem extends Error {
  constructor(
    readonly code: ProblemCode,
    detail: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

/**
 * The problem response of a code; `status` overrides the code's only where HTTP itself fixes it
 * (a parser's 408 or 431). A code whose answers carry Retry-After gets 1 second unless told.
 */
export function problem(
  code: ProblemCode,
  detail: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
  status: number = PROBLEMS[code].status,
): HttpResponse {
  const spec: { title: string; retryAfter?: true } = PROBLEMS[code];
  const body = { type: problemType(code), title: spec.title, status, detail, code, ...extra };
  return {
    status,
    headers: {
      'content-type': 'application/problem+json',
      'cache-control': 'no-store',
      ...(spec.retryAfter ? { 'retry-after': '1' } : {}),
      ...headers,
    },
    body: JSON.stringify(body),
  };
}

/** Seconds a client is asked to wait before reading an archived object again. */
const RESTORE_RETRY_SECONDS = 60;

/**
 * The 202 of something archived whose restore is under way (not a failure: ask again later), with
 * what the route knows of it.
 */
export function restoring(detail: string, about: Record<string, unknown> = {}): HttpResponse {
  return {
    status: 202,
    headers: {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'retry-after': String(RESTORE_RETRY_SECONDS),
    },
    body: JSON.stringify({ ...about, status: 'restoring', detail }),
  };
}

/**
 * Maps any error to its problem response; `internal` says whether it was unexpected, `log` whether
 * it must be logged all the same (a deployment problem: a missing bucket or table, refused credentials).
 */
export function toProblem(
  error: unknown,
  requestId: string,
): { response: HttpResponse; internal: boolean; log?: boolean } {
  const r = (response: HttpResponse) => ({ response, internal: false });
  const unavailable = (log: boolean) => ({
    response: problem('backend-unavailable', 'the storage backend is unavailable; retry'),
    internal: false,
    log,
  });
  if (error instanceof MisconfiguredBackendError) return unavailable(true);
  if (error instanceof HttpProblem) return r(problem(error.code, error.message, error.extra, error.headers));
  if (error instanceof ListTooShortError) {
    return r(
      problem('invalid-request', error.message, {
        field: error.field,
        count: error.count,
        currentCount: error.currentCount,
      }),
    );
  }
  if (error instanceof ValidationError)
    return r(problem('invalid-request', error.message, { field: error.field }));
  // Another user's session is absent too: the same answer, never 403.
  if (error instanceof SessionNotFoundError) return r(problem('not-found', SESSION_NOT_FOUND));
  if (error instanceof AppendConflictError) {
    return r(problem('append-conflict', error.message, { count: error.count, hash: error.hash }));
  }
  if (error instanceof CommitPreconditionError) {
    const { commitId, failures } = error;
    return r(
      error.status === 409
        ? problem('commit-conflict', error.message, { commitId, failures })
        : problem('precondition-failed', error.message, { commitId, failures }),
    );
  }
  if (error instanceof CommitPartialError) {
    const { commitId, applied, failed } = error;
    return r(problem('commit-partial', error.message, { commitId, applied, failed }));
  }
  if (error instanceof CommitMismatchError) {
    const { commitId, kind, key } = error;
    return r(problem('commit-mismatch', error.message, { commitId, kind, key }));
  }
  if (error instanceof FencedError)
    return r(
      problem(
        'fenced',
        error.seen === null
          ? 'token not granted: the lock holds no live lease with this token; nothing was written'
          : 'a newer fencing token has been seen; nothing was written',
      ),
    );
  if (error instanceof LockConflictError) {
    const seconds = Math.max(1, Math.ceil((error.expiresAt.getTime() - Date.now()) / 1000));
    return r(
      problem(
        'lock-held',
        'the session is locked by another owner',
        { holder: error.holder, expiresAt: error.expiresAt.toISOString() },
        { 'retry-after': String(seconds) },
      ),
    );
  }
  if (error instanceof LockLostError) return r(problem('lock-lost', error.message));
  if (error instanceof IdempotencyKeyReusedError) return r(problem('idempotency-key-reused', error.message));
  if (error instanceof ContendedError) return r(problem('contended', error.message));
  // A session or workspace delete that left objects behind (a write raced it): what was deleted is
  // gone for every reader; a retried DELETE removes the rest.
  if (error instanceof PartialDeleteError)
    return r(
      problem(
        'contended',
        `deleted, but ${error.failures.length} objects could not be removed yet (a write raced the delete); retry the delete`,
      ),
    );
  if (error instanceof BackendUnsafeError) return r(problem('backend-unsafe', error.message));
  if (error instanceof ListPreconditionFailedError) {
    return r(problem('precondition-failed', 'the list has another hash', { currentHash: error.currentHash }));
  }
  if (error instanceof PreconditionFailedError) {
    return r(
      problem('precondition-failed', 'the value has another version', { currentEtag: error.currentVersion }),
    );
  }
  if (error instanceof PreconditionUnsupportedError) {
    return r(
      problem(
        'precondition-unsupported',
        `${error.backend} cannot evaluate this condition; nothing was written`,
      ),
    );
  }
  if (error instanceof RestoreInProgressError) return r(restoring(error.message));
  if (error instanceof UploadNotFoundError) return r(problem('not-found', error.message));
  if (error instanceof UploadMismatchError) return r(problem('upload-mismatch', error.message));
  if (error instanceof UnsupportedOperationError) return r(problem('unsupported', error.message));
  if (error instanceof CorruptValueError) {
    // Only that key is affected; the answer says which (a key the caller named), nothing else.
    return {
      response: problem('internal', 'the stored value is corrupt', { requestId, corruptKey: error.key }),
      internal: true,
    };
  }
  if (error instanceof BackendError && error.retryable) return unavailable(false);
  return { response: problem('internal', 'internal error', { requestId }), internal: true };
}
