/**
 * Every error the functions produce is an RFC 9457 `application/problem+json` body with a stable
 * `code`. One map turns typed errors into problems; anything unknown is a 500 that hides internals.
 */
import { LockConflictError, LockLostError } from '../lock/types.js';
import {
  AppendConflictError,
  BackendError,
  BackendUnsafeError,
  ContendedError,
  CorruptValueError,
  FencedError,
  MisconfiguredBackendError,
  PreconditionFailedError,
  PreconditionUnsupportedError,
  RestoreInProgressError,
  UnsupportedOperationError,
  UploadMismatchError,
  UploadNotFoundError,
  ValidationError,
} from '../store/errors.js';
import type { HttpResponse } from './types.js';

/** A problem the router raises itself. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: ProblemCode,
    detail: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

/** Every problem code, with its title: the one list the OpenAPI document and clients read. */
export const TITLES = {
  'invalid-request': 'Invalid request',
  unauthorized: 'Unauthorized',
  'not-found': 'Not found',
  'method-not-allowed': 'Method not allowed',
  'append-conflict': 'Append conflict',
  fenced: 'Fenced',
  'lock-held': 'Lock held',
  'lock-lost': 'Lock lost',
  'precondition-failed': 'Precondition failed',
  'payload-too-large': 'Payload too large',
  'precondition-unsupported': 'Precondition unsupported',
  'backend-unavailable': 'Backend unavailable',
  'backend-unsafe': 'Backend does not honour write conditions',
  contended: 'Contended',
  'upload-mismatch': 'Upload does not match',
  unsupported: 'Not supported by this backend',
  internal: 'Internal error',
} as const satisfies Record<string, string>;

/** A problem code. */
export type ProblemCode = keyof typeof TITLES;

/** Every problem code. */
export const PROBLEM_CODES = Object.keys(TITLES) as [ProblemCode, ...ProblemCode[]];

/** The problem response for a status, code and detail. */
export function problem(
  status: number,
  code: ProblemCode,
  detail: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): HttpResponse {
  const body = {
    type: `urn:agent-state:problem:${code}`,
    title: TITLES[code],
    status,
    detail,
    code,
    ...extra,
  };
  return {
    status,
    headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(body),
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
    response: problem(
      503,
      'backend-unavailable',
      'the storage backend is unavailable; retry',
      {},
      { 'retry-after': '1' },
    ),
    internal: false,
    log,
  });
  if (error instanceof MisconfiguredBackendError) return unavailable(true);
  if (error instanceof HttpProblem)
    return r(problem(error.status, error.code, error.message, error.extra, error.headers));
  if (error instanceof ValidationError)
    return r(problem(400, 'invalid-request', error.message, { field: error.field }));
  if (error instanceof AppendConflictError) {
    return r(problem(409, 'append-conflict', error.message, { count: error.count, hash: error.hash }));
  }
  if (error instanceof FencedError)
    return r(problem(409, 'fenced', 'a newer fencing token has been seen; nothing was written'));
  if (error instanceof LockConflictError) {
    const seconds = Math.max(1, Math.ceil((error.expiresAt.getTime() - Date.now()) / 1000));
    return r(
      problem(
        409,
        'lock-held',
        'the session is locked by another owner',
        { holder: error.holder, expiresAt: error.expiresAt.toISOString() },
        { 'retry-after': String(seconds) },
      ),
    );
  }
  if (error instanceof LockLostError) return r(problem(409, 'lock-lost', error.message));
  if (error instanceof ContendedError)
    return r(problem(409, 'contended', error.message, {}, { 'retry-after': '1' }));
  if (error instanceof BackendUnsafeError) return r(problem(503, 'backend-unsafe', error.message));
  if (error instanceof PreconditionFailedError) {
    return r(
      problem(412, 'precondition-failed', 'the value has another version', {
        currentEtag: error.currentVersion,
      }),
    );
  }
  if (error instanceof PreconditionUnsupportedError) {
    return r(
      problem(
        501,
        'precondition-unsupported',
        `${error.backend} cannot evaluate this condition; nothing was written`,
      ),
    );
  }
  if (error instanceof RestoreInProgressError) {
    // Not a failure: the content is archived and on its way back; ask again later.
    return r({
      status: 202,
      headers: { 'content-type': 'application/json', 'cache-control': 'no-store', 'retry-after': '60' },
      body: JSON.stringify({ status: 'restoring', detail: error.message }),
    });
  }
  if (error instanceof UploadNotFoundError) return r(problem(404, 'not-found', error.message));
  if (error instanceof UploadMismatchError) return r(problem(422, 'upload-mismatch', error.message));
  if (error instanceof UnsupportedOperationError) return r(problem(501, 'unsupported', error.message));
  if (error instanceof CorruptValueError) {
    // Only that key is affected; the answer says which (a key the caller named), nothing else.
    return {
      response: problem(500, 'internal', 'the stored value is corrupt', { requestId, corruptKey: error.key }),
      internal: true,
    };
  }
  if (error instanceof BackendError && error.retryable) return unavailable(false);
  return { response: problem(500, 'internal', 'internal error', { requestId }), internal: true };
}
