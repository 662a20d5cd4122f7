/**
 * Every error the functions produce is an RFC 9457 `application/problem+json` body with a stable
 * `code`, its status and title from the protocol's table (lib/protocol/problems.ts). One map turns
 * typed errors into problems; anything unknown is a 500 that hides internals.
 */
import { MisconfiguredBackendError, RestoreInProgressError } from '../contract/errors.js';
import { answerOf, PROBLEMS, type ProblemCode, problemType } from '../protocol/problems.js';
import { DependencyFailure } from './readiness.js';
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
 * Maps any error to its problem response (the row of the problem table its class answers with);
 * `internal` says whether it was unexpected; `logged` is what to log, when the answer must be
 * logged: the error when internal or a deployment problem (a missing bucket or table, refused
 * credentials), a readiness check's cause (what failed, not the wrapper). The one place a
 * `DependencyFailure` is unwrapped.
 */
export function toProblem(
  error: unknown,
  requestId: string,
): { response: HttpResponse; internal: boolean; logged?: unknown } {
  if (error instanceof HttpProblem)
    return { response: problem(error.code, error.message, error.extra, error.headers), internal: false };
  if (error instanceof RestoreInProgressError) return { response: restoring(error.message), internal: false };
  // A readiness check's failure: its cause's problem, naming the dependency.
  if (error instanceof DependencyFailure) {
    const inner = error.cause instanceof Error ? answerOf(error.cause, requestId) : undefined;
    const code = inner?.code === 'backend-misconfigured' ? inner.code : 'backend-unavailable';
    const detail = inner?.code === code ? inner.detail : `the ${error.dependency} cannot be reached; retry`;
    return {
      response: problem(code, detail, { dependency: error.dependency }),
      internal: false,
      logged: error.cause,
    };
  }
  const found = error instanceof Error ? answerOf(error, requestId) : undefined;
  if (!found)
    return { response: problem('internal', 'internal error', { requestId }), internal: true, logged: error };
  const internal = found.code === 'internal';
  return {
    response: problem(found.code, found.detail, found.members, found.headers),
    internal,
    ...(internal || error instanceof MisconfiguredBackendError ? { logged: error } : {}),
  };
}
