/**
 * The problem codes, defined once: each code's HTTP status, title, the typed errors the server
 * answers with it and their wire form (`answers`), and the typed error the client raises for it
 * (`error`). The router answers every error as an RFC 9457 `application/problem+json` body with one
 * of these codes (lib/http/problems.ts looks it up with `answerOf`); the client turns it back into
 * the typed error with `problemError`.
 */
import * as z from 'zod/mini';
import {
  AppendConflictError,
  BackendError,
  BackendUnsafeError,
  type CommitFailure,
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
  PayloadTooLargeError,
  PreconditionFailedError,
  PreconditionUnsupportedError,
  ProtocolError,
  ReferenceIdUnsupportedError,
  SessionNotFoundError,
  type StoreError,
  UnauthorizedError,
  UnsupportedOperationError,
  UploadMismatchError,
  UploadNotFoundError,
  UserMismatchError,
  ValidationError,
} from '../contract/errors.js';

/** What the client reads of a problem body (any member may be missing: gateways answer `{message}`). */
export interface ProblemFields {
  readonly field?: string | undefined;
  readonly count?: number | undefined;
  readonly hash?: string | undefined;
  readonly holder?: string | undefined;
  readonly expiresAt?: string | undefined;
  readonly currentEtag?: string | null | undefined;
  readonly currentRevision?: number | null | undefined;
  readonly currentHash?: string | undefined;
  readonly currentCount?: number | undefined;
  readonly limit?: number | undefined;
  readonly corruptKey?: string | undefined;
  readonly commitId?: string | undefined;
  readonly failures?: readonly CommitFailureFields[] | undefined;
  readonly applied?: ReadonlyArray<{ kind: 'value' | 'list'; key: string }> | undefined;
  readonly failed?: readonly CommitFailureFields[] | undefined;
  readonly kind?: 'value' | 'list' | 'commit' | undefined;
  readonly key?: string | undefined;
}

/** A failing key of a commit as a problem body carries it. */
export interface CommitFailureFields {
  readonly kind: 'value' | 'list';
  readonly key: string;
  readonly reason: 'version' | 'count' | 'hash' | 'fenced';
  readonly currentVersion?: string | null | undefined;
  readonly currentRevision?: number | null | undefined;
  readonly count?: number | undefined;
  readonly hash?: string | undefined;
}

/** The store's failure of one key, from a problem body's. */
function failureOf(f: CommitFailureFields): CommitFailure {
  if (f.kind === 'value')
    return {
      kind: 'value',
      key: f.key,
      reason: f.reason === 'fenced' ? 'fenced' : 'version',
      currentVersion: f.currentVersion ?? null,
      ...(f.currentRevision !== undefined ? { currentRevision: f.currentRevision } : {}),
    };
  return {
    kind: 'list',
    key: f.key,
    reason: f.reason === 'fenced' || f.reason === 'count' ? f.reason : 'hash',
    count: f.count ?? -1,
    hash: f.hash ?? '',
  };
}

/** A typed error's class (any constructor signature). */
// biome-ignore lint/suspicious/noExplicitAny: a class of any constructor
type ErrorClass<E extends Error> = abstract new (...args: any[]) => E;

/** The wire form of one typed error under a code: its detail, the members it adds, its headers. */
export interface ProblemAnswer<E extends Error = Error> {
  readonly raisedBy: ErrorClass<E>;
  /** Only errors it holds for (a commit's 409 or 412, a retryable backend error). */
  readonly when?: (error: E) => boolean;
  readonly detail?: (error: E) => string;
  readonly members?: (error: E, requestId: string) => Record<string, unknown>;
  readonly headers?: (error: E) => Record<string, string>;
}

/** The answer of a typed error (checked against its class by `answer`). */
const answer = <E extends Error>(a: ProblemAnswer<E>) => a as unknown as ProblemAnswer;

/** One problem code. */
export interface ProblemSpec {
  /** The HTTP status it is answered with. */
  readonly status: number;
  readonly title: string;
  /** Whether its answer carries `Retry-After` (seconds; 1 unless the router says otherwise). */
  readonly retryAfter?: true;
  /** No retry helps (the backend or the deployment stays as it is): the client makes one attempt. */
  readonly final?: true;
  /** The typed errors the server answers with this code (the first whose class and `when` match). */
  readonly answers?: readonly ProblemAnswer[];
  /** The typed error the client raises for it: from the problem's members and its detail. */
  readonly error: (p: ProblemFields, detail: string, status: number) => StoreError;
}

/** Every problem code. */
export const PROBLEMS = {
  'invalid-request': {
    status: 400,
    title: 'Invalid request',
    answers: [
      answer({
        raisedBy: ListTooShortError,
        members: (e) => ({ field: e.field, count: e.count, currentCount: e.currentCount }),
      }),
      answer({ raisedBy: ValidationError, members: (e) => ({ field: e.field }) }),
    ],
    // The detail is the ValidationError's message, which already starts with the field. A truncate
    // asking for more items than the list has carries `count` (asked) and `currentCount`.
    error: (p, detail) => {
      if (p.field === 'count' && p.count !== undefined && p.currentCount !== undefined)
        return new ListTooShortError(p.count, p.currentCount);
      const field = p.field ?? 'request';
      return new ValidationError(
        field,
        detail.startsWith(`${field}: `) ? detail.slice(field.length + 2) : detail,
      );
    },
  },
  unauthorized: { status: 401, title: 'Unauthorized', error: (_, detail) => new UnauthorizedError(detail) },
  // About the caller's own token only: the answer never names the user it claimed nor the token's.
  'user-mismatch': {
    status: 403,
    title: 'User mismatch',
    answers: [answer({ raisedBy: UserMismatchError, detail: () => USER_MISMATCH })],
    error: (_, detail) => new UserMismatchError(detail),
  },
  'not-found': {
    status: 404,
    title: 'Not found',
    answers: [
      // Another user's session is absent too: the same answer, never 403.
      answer({ raisedBy: SessionNotFoundError, detail: () => SESSION_NOT_FOUND }),
      answer({ raisedBy: UploadNotFoundError }),
    ],
    error: (_, detail, s) => new ProtocolError(detail, s),
  },
  'method-not-allowed': {
    status: 405,
    title: 'Method not allowed',
    error: (_, detail, s) => new ProtocolError(detail, s),
  },
  'append-conflict': {
    status: 409,
    title: 'Append conflict',
    answers: [answer({ raisedBy: AppendConflictError, members: (e) => ({ count: e.count, hash: e.hash }) })],
    error: (p) => new AppendConflictError(p.count ?? -1, p.hash ?? ''),
  },
  fenced: {
    status: 409,
    title: 'Fenced',
    answers: [
      answer({
        raisedBy: FencedError,
        detail: (e) =>
          e.seen === null
            ? 'token not granted: the lock holds no live lease with this token; nothing was written'
            : 'a newer fencing token has been seen; nothing was written',
      }),
    ],
    error: () => new FencedError(-1, -1),
  },
  'lock-held': {
    status: 409,
    title: 'Lock held',
    retryAfter: true,
    answers: [
      answer({
        raisedBy: LockConflictError,
        detail: () => 'the session is locked by another owner',
        members: (e) => ({ holder: e.holder, expiresAt: e.expiresAt.toISOString() }),
        headers: (e) => ({
          'retry-after': String(Math.max(1, Math.ceil((e.expiresAt.getTime() - Date.now()) / 1000))),
        }),
      }),
    ],
    error: (p) => new LockConflictError(p.holder ?? '', new Date(p.expiresAt ?? 0)),
  },
  'lock-lost': {
    status: 409,
    title: 'Lock lost',
    answers: [answer({ raisedBy: LockLostError })],
    error: (_, detail) => new LockLostError(detail),
  },
  'precondition-failed': {
    status: 412,
    title: 'Precondition failed',
    answers: [
      answer({
        raisedBy: CommitPreconditionError,
        when: (e) => e.status === 412,
        members: (e) => ({ commitId: e.commitId, failures: e.failures }),
      }),
      answer({
        raisedBy: ListPreconditionFailedError,
        detail: () => 'the list has another hash',
        members: (e) => ({ currentHash: e.currentHash }),
      }),
      answer({
        raisedBy: PreconditionFailedError,
        detail: () => 'the value has another version',
        members: (e) => ({
          currentEtag: e.currentVersion,
          ...(e.currentRevision !== undefined ? { currentRevision: e.currentRevision } : {}),
        }),
      }),
    ],
    // A commit's refusal names each failing key (`failures`); nothing was written.
    error: (p) =>
      p.failures !== undefined
        ? new CommitPreconditionError(p.commitId ?? '', p.failures.map(failureOf))
        : p.currentHash !== undefined
          ? new ListPreconditionFailedError(p.currentHash)
          : new PreconditionFailedError(p.currentEtag ?? null, p.currentRevision),
  },
  'commit-conflict': {
    status: 409,
    title: 'Commit conflict',
    answers: [
      answer({
        raisedBy: CommitPreconditionError,
        when: (e) => e.status === 409,
        members: (e) => ({ commitId: e.commitId, failures: e.failures }),
      }),
    ],
    // A list of the commit moved on (its count): `failures` names each failing key; nothing written.
    error: (p) => new CommitPreconditionError(p.commitId ?? '', (p.failures ?? []).map(failureOf)),
  },
  'commit-partial': {
    status: 409,
    title: 'Commit partially applied',
    answers: [
      answer({
        raisedBy: CommitPartialError,
        members: (e) => ({ commitId: e.commitId, applied: e.applied, failed: e.failed }),
      }),
    ],
    error: (p) => new CommitPartialError(p.commitId ?? '', p.applied ?? [], (p.failed ?? []).map(failureOf)),
  },
  'commit-mismatch': {
    status: 409,
    title: 'Commit id reused with another body',
    answers: [
      answer({
        raisedBy: CommitMismatchError,
        members: (e) => ({ commitId: e.commitId, kind: e.kind, key: e.key }),
      }),
    ],
    error: (p) => new CommitMismatchError(p.commitId ?? '', p.kind ?? 'value', p.key ?? ''),
  },
  'reference-id-unsupported': {
    status: 409,
    title: 'Session written by the reference under names this store does not write',
    answers: [answer({ raisedBy: ReferenceIdUnsupportedError })],
    error: (_p, detail) => new ReferenceIdUnsupportedError('', detail),
  },
  'payload-too-large': {
    status: 413,
    title: 'Payload too large',
    error: (p, detail) => new PayloadTooLargeError(detail, p.limit),
  },
  'precondition-unsupported': {
    status: 501,
    title: 'Precondition unsupported',
    answers: [
      answer({
        raisedBy: PreconditionUnsupportedError,
        detail: (e) => `${e.backend} cannot evaluate this condition; nothing was written`,
      }),
    ],
    error: () => new PreconditionUnsupportedError('the server backend'),
  },
  'backend-unavailable': {
    status: 503,
    title: 'Backend unavailable',
    retryAfter: true,
    answers: [
      answer({ raisedBy: BackendError, when: (e) => e.retryable, detail: () => BACKEND_UNAVAILABLE }),
    ],
    error: (_, detail) => new BackendError(detail, true),
  },
  // A bucket or table that is missing or refuses the service, refused credentials: which one, and
  // as whom, stays in the server's one ERROR line. A BackendError no retry helps, as below.
  'backend-misconfigured': {
    status: 503,
    title: 'Backend misconfigured',
    final: true,
    answers: [answer({ raisedBy: MisconfiguredBackendError, detail: () => BACKEND_MISCONFIGURED })],
    error: (_, detail) => new BackendError(detail, false),
  },
  // Not BackendUnsafeError (the client does not know the backend): a BackendError no retry helps.
  'backend-unsafe': {
    status: 503,
    title: 'Backend does not honour write conditions',
    final: true,
    answers: [answer({ raisedBy: BackendUnsafeError })],
    error: (_, detail) => new BackendError(detail, false),
  },
  contended: {
    status: 409,
    title: 'Contended',
    retryAfter: true,
    answers: [
      answer({ raisedBy: ContendedError }),
      // A session or workspace delete that left objects behind (a write raced it): what was deleted
      // is gone for every reader; a retried DELETE removes the rest.
      answer({
        raisedBy: PartialDeleteError,
        detail: (e) =>
          `deleted, but ${e.failures.length} objects could not be removed yet (a write raced the delete); retry the delete`,
      }),
    ],
    error: (_, detail) => new ContendedError(detail),
  },
  'idempotency-key-reused': {
    status: 422,
    title: 'Idempotency-Key reused for another request',
    answers: [answer({ raisedBy: IdempotencyKeyReusedError })],
    error: () => new IdempotencyKeyReusedError(),
  },
  'upload-mismatch': {
    status: 422,
    title: 'Upload does not match',
    answers: [answer({ raisedBy: UploadMismatchError })],
    error: (_, detail) => new UploadMismatchError(detail),
  },
  unsupported: {
    status: 501,
    title: 'Not supported by this backend',
    answers: [answer({ raisedBy: UnsupportedOperationError })],
    error: () => new UnsupportedOperationError('direct transfer', 'the server backend'),
  },
  internal: {
    status: 500,
    title: 'Internal error',
    answers: [
      // Only that key is affected; the answer says which (a key the caller named), nothing else.
      answer({
        raisedBy: CorruptValueError,
        detail: () => 'the stored value is corrupt',
        members: (e, requestId) => ({ requestId, corruptKey: e.key }),
      }),
    ],
    error: (p, detail) =>
      p.corruptKey ? new CorruptValueError(p.corruptKey) : new BackendError(detail, true),
  },
} as const satisfies Record<string, ProblemSpec>;

/** The detail of the `not-found` problem of an absent session (the client's `SessionNotFoundError`). */
export const SESSION_NOT_FOUND = 'no such session';
/** The detail of `user-mismatch`. */
const USER_MISMATCH = "Agent-State-User does not name this token's user; nothing was read or written";
/** The detail of `backend-unavailable` (what failed stays in the log). */
const BACKEND_UNAVAILABLE = 'the storage backend is unavailable; retry';
/** The detail of `backend-misconfigured` (the resource and the credentials stay in the log). */
const BACKEND_MISCONFIGURED =
  "the deployment's bucket, lock table or credentials refuse the service's requests (the server's log names which); retrying does not help";

/** A typed error's problem: the first row whose answer matches the error's class (most derived first). */
export function answerOf(
  error: Error,
  requestId: string,
):
  | { code: ProblemCode; detail: string; members: Record<string, unknown>; headers: Record<string, string> }
  | undefined {
  for (
    let proto = Object.getPrototypeOf(error);
    proto && proto !== Error.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    for (const code of PROBLEM_CODES) {
      const found = (PROBLEMS[code] as ProblemSpec).answers?.find(
        (a) => a.raisedBy.prototype === proto && (a.when?.(error) ?? true),
      );
      if (found)
        return {
          code,
          detail: found.detail?.(error) ?? error.message,
          members: found.members?.(error, requestId) ?? {},
          headers: found.headers?.(error) ?? {},
        };
    }
  }
  return undefined;
}

/** A problem code. */
export type ProblemCode = keyof typeof PROBLEMS;

/** Every problem code. */
export const PROBLEM_CODES = Object.keys(PROBLEMS) as [ProblemCode, ...ProblemCode[]];

/** Whether a problem code says that no retry helps (`final`): the client does not retry it. */
export const isFinalProblem = (code: ProblemCode | undefined): boolean =>
  code !== undefined && (PROBLEMS[code] as ProblemSpec).final === true;

/** Whether a string is a problem code. */
export const isProblemCode = (code: unknown): code is ProblemCode =>
  typeof code === 'string' && Object.hasOwn(PROBLEMS, code);

/** The `type` URI of a problem code. */
export const problemType = (code: ProblemCode) => `urn:agent-state:problem:${code}`;

/** A failing key of a commit (`failures`, `failed`). */
const CommitFailureSchema = z.object({
  kind: z.enum(['value', 'list']),
  key: z.string(),
  reason: z.enum(['version', 'count', 'hash', 'fenced']),
  currentVersion: z.optional(z.nullable(z.string())),
  currentRevision: z.optional(z.nullable(z.int())),
  count: z.optional(z.int()),
  hash: z.optional(z.string()),
});

/** An RFC 9457 problem as the router writes it. */
export const Problem = z.object({
  type: z.string(),
  title: z.string(),
  status: z.int(),
  detail: z.string(),
  code: z.enum(PROBLEM_CODES),
  field: z.optional(z.string()),
  count: z.optional(z.int()),
  hash: z.optional(z.string()),
  holder: z.optional(z.string()),
  expiresAt: z.optional(z.string()),
  currentEtag: z.optional(z.nullable(z.string())),
  currentRevision: z.optional(z.nullable(z.int())),
  currentHash: z.optional(z.string()),
  currentCount: z.optional(z.int()),
  limit: z.optional(z.int()),
  requestId: z.optional(z.string()),
  corruptKey: z.optional(z.string()),
  commitId: z.optional(z.string()),
  failures: z.optional(z.array(CommitFailureSchema)),
  applied: z.optional(z.array(z.object({ kind: z.enum(['value', 'list']), key: z.string() }))),
  failed: z.optional(z.array(CommitFailureSchema)),
  kind: z.optional(z.enum(['value', 'list', 'commit'])),
  key: z.optional(z.string()),
});

/** What the client accepts as a problem body: any member may be missing, an unknown code is kept. */
const ProblemAnswer = z.extend(z.partial(Problem), {
  code: z.optional(z.string()),
  /** API Gateway's own answers: `{"message": "..."}`. */
  message: z.optional(z.string()),
});

/** The problem code of a body, when it is a problem with a known code. */
export function problemCodeOf(body: unknown): ProblemCode | undefined {
  const code = (body as { code?: unknown } | null | undefined)?.code;
  return isProblemCode(code) ? code : undefined;
}

/**
 * The typed error of an answer that is not a success: the table's error for its problem code, else
 * (a gateway's own answer, a code this client does not know) one for its status. It carries the
 * answer's request id.
 */
export function problemError(status: number, body: unknown, requestId?: string): StoreError {
  const parsed = ProblemAnswer.safeParse(body);
  const p = parsed.success ? parsed.data : {};
  const detail = p.detail ?? p.message ?? `HTTP ${status}`;
  const error = isProblemCode(p.code)
    ? PROBLEMS[p.code].error(p, detail, status)
    : status === 401 || status === 403
      ? new UnauthorizedError(detail)
      : status === 413
        ? new PayloadTooLargeError(detail)
        : status === 404 || status === 405
          ? new ProtocolError(detail, status)
          : new BackendError(detail, status >= 500 || status === 429);
  if (requestId !== undefined) error.requestId = requestId;
  return error;
}
