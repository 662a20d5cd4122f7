/**
 * What a route declares, and the helpers routes share. A route declares its method and path (a
 * pattern from lib/protocol/paths.ts), whether it needs an identity, the schemas of its body,
 * headers and query (lib/protocol/schemas.ts), its answers (status → body schema, and the headers
 * they carry) and the problem codes it may answer besides the ones every route may
 * (`COMMON_PROBLEMS`). The router validates the inputs from those declarations, so a handler
 * receives them parsed and typed. The documentation fields (operation id, tag, summary,
 * description) only feed the OpenAPI document (lib/http/openapi.ts).
 */
import type * as z from 'zod/mini';
import type { CorsOrigins } from '../../config.js';
import { chainHash } from '../../contract/hash.js';
import type { SessionLock } from '../../contract/lock.js';
import type { ListPage, SessionStore, StateStore } from '../../contract/types.js';
import type { PathParams } from '../../protocol/paths.js';
import type { ProblemCode } from '../../protocol/problems.js';
import { REVISION_HEADER } from '../../protocol/schemas.js';
import type { Authenticator } from '../auth.js';
import type { HttpRequest, HttpResponse } from '../types.js';

/** What the router needs. */
export interface RouterDeps {
  readonly store: StateStore;
  readonly lock: SessionLock;
  readonly auth: Authenticator;
  /** Largest request body, and largest answer (list pages are cut to fit); default 4 MiB. */
  readonly bodyLimitBytes?: number;
  /** The origins browsers may call from (CORS_ORIGINS); none: no CORS (lib/http/cors.ts). */
  readonly cors?: CorsOrigins;
  /** The OpenAPI document served at /v1/openapi.json. */
  readonly openapi?: () => unknown;
  /** The readiness check of `/v1/ready` (lib/http/readiness.ts); by default the store's and the lock's, cached per router. */
  readonly ready?: () => Promise<void>;
  /** Called once per request, after the answer is made (logs, metrics). */
  readonly onResponse?: (info: {
    request: HttpRequest;
    route: string;
    response: HttpResponse;
    error?: unknown;
    ms: number;
  }) => void;
}

/** Problem codes any route may answer (a bad id, no identity, the backend, the router itself). */
export const COMMON_PROBLEMS = [
  'invalid-request',
  'unauthorized',
  'user-mismatch',
  'not-found',
  'method-not-allowed',
  'payload-too-large',
  'backend-unavailable',
  'backend-misconfigured',
  'internal',
] as const satisfies readonly ProblemCode[];

/**
 * What a route without `auth` may answer of `COMMON_PROBLEMS`: it needs no identity, and it does
 * not reach the backend.
 */
export const OPEN_PROBLEMS = [
  'invalid-request',
  'method-not-allowed',
  'payload-too-large',
  'internal',
] as const satisfies readonly (typeof COMMON_PROBLEMS)[number][];

/**
 * What a route that writes to the store may answer besides: other writers kept winning
 * (`contended`), or the backend failed the write-condition probe (`backend-unsafe`).
 */
export const WRITE_PROBLEMS = [
  'contended',
  'backend-unsafe',
  'reference-id-unsupported',
] as const satisfies readonly ProblemCode[];

/** Every problem code a route may answer: the common ones, and its own. */
export function problemsOf(route: Pick<Route, 'auth' | 'problems'>): ProblemCode[] {
  return [...new Set([...(route.auth ? COMMON_PROBLEMS : OPEN_PROBLEMS), ...(route.problems ?? [])])];
}

/** What a write route says of `Fencing-Token` (docs/DESIGN.md, "The write path"). */
export const FENCING_NOTE =
  "With `Fencing-Token`, refused (409 `fenced`, nothing written) unless the lock granted that token to a live lease: a token below the lock's, above it, or of an expired or released lease.";

/** The resources of the API (the OpenAPI document's tags), and what each is. */
export const TAGS = {
  meta: 'The API itself: health, readiness, capabilities and this document (no identity needed).',
  sessions: "The caller's sessions: list them, ask whether one exists, delete one or all.",
  state:
    'Single values under a key: any I-JSON value, versioned by an entity tag, saved optionally on a condition.',
  lists: 'Append-only lists: appended at an expected count, read by page, versioned by a chain hash.',
  archives: 'What a list held before it was rewritten or deleted, kept as read-only archives.',
  workspaces:
    'Opaque blobs of a session (for example a tarball of files), moved straight to and from the object store.',
  uploads:
    'Direct uploads to the object store through presigned URLs: workspaces, and values too large for a request body.',
  lock: 'The session lock: leases with fencing tokens that store writes check (Fencing-Token).',
  turns:
    'A whole agent turn in two calls: begin (the lease and a snapshot of the keys it reads), commit (every change, the lease released). Per-key atomic, not a cross-key transaction.',
} as const;

/** A tag of the document. */
export type Tag = keyof typeof TAGS;

/**
 * The headers an answer may carry besides the ones the document adds itself (`X-Request-Id` on
 * every answer, `Allow` on a 405, `Retry-After` on the problems whose code says so).
 */
export const ANSWER_HEADERS = ['ETag', REVISION_HEADER, 'Location', 'Retry-After'] as const;

/** A header an answer carries (see `ANSWER_HEADERS`). */
export type AnswerHeader = (typeof ANSWER_HEADERS)[number];

/** An answer that is not a problem, in full: its body's schema (null: no body), what it means, its headers. */
export interface AnswerSpec {
  readonly body: z.ZodMiniType | null;
  readonly description?: string;
  readonly headers?: readonly AnswerHeader[];
}

export type Method = 'GET' | 'HEAD' | 'PUT' | 'POST' | 'DELETE';

/** What a handler receives: the request, its decoded path parameters, and its parsed inputs. */
export interface RouteContext<P extends string = string, B = unknown, H = unknown, Q = unknown> {
  readonly request: HttpRequest;
  readonly params: PathParams<P>;
  /** The caller's store (the anonymous user's on a route without `auth`). */
  readonly user: SessionStore;
  readonly userId: string | null;
  readonly deps: RouterDeps;
  /** The answer limit in bytes. */
  readonly limit: number;
  readonly body: B;
  readonly headers: H;
  readonly query: Q;
}

type Output<S> = S extends z.ZodMiniType ? z.output<S> : undefined;
type Input<S> = S extends z.ZodMiniType ? z.input<S> : never;

/** A route as declared (`route()` infers the types of its inputs). */
export interface RouteSpec<
  P extends string,
  B extends z.ZodMiniType | undefined,
  H extends z.ZodMiniObject | undefined,
  Q extends z.ZodMiniObject | undefined,
> {
  readonly method: Method;
  readonly pattern: P;
  /** The OpenAPI operation id (a verb and the resource: `getList`, `appendListItems`). */
  readonly operationId: string;
  readonly tag: Tag;
  /** One line, for a list of operations. */
  readonly summary: string;
  /** What it does, what it answers and when; Markdown. */
  readonly description: string;
  /** Whether the route needs an identity. */
  readonly auth: boolean;
  /**
   * A GET route that also answers HEAD: the same answer without its body, with the body's
   * Content-Length (the router makes it; this documents it as an operation of its own).
   */
  readonly head?: { readonly operationId: string; readonly summary: string; readonly description: string };
  /** The body's schema; a route without one ignores any body. */
  readonly body?: B;
  /** The body of a request that sends none (or only white space); without it, a body is required. */
  readonly emptyBody?: Input<B>;
  /** Headers, by `HEADER_NAMES` key. */
  readonly headers?: H;
  readonly query?: Q;
  /** Each answer that is not a problem: its status and its body's schema (null: no body), or all of it. */
  readonly answers: Readonly<Record<number, z.ZodMiniType | null | AnswerSpec>>;
  /** The problem codes it may answer besides `COMMON_PROBLEMS`. */
  readonly problems?: readonly ProblemCode[];
  readonly handle: (c: RouteContext<P, Output<B>, Output<H>, Output<Q>>) => Promise<HttpResponse>;
}

/** A route of the table. */
export type Route = Omit<
  RouteSpec<string, z.ZodMiniType | undefined, z.ZodMiniObject | undefined, z.ZodMiniObject | undefined>,
  'handle' | 'emptyBody'
> & {
  readonly emptyBody?: unknown;
  // biome-ignore lint/suspicious/noExplicitAny: the router passes each route the inputs it declared
  readonly handle: (c: RouteContext<string, any, any, any>) => Promise<HttpResponse>;
};

/** Declares a route. */
export function route<
  const P extends string,
  B extends z.ZodMiniType | undefined = undefined,
  H extends z.ZodMiniObject | undefined = undefined,
  Q extends z.ZodMiniObject | undefined = undefined,
>(spec: RouteSpec<P, B, H, Q>): Route {
  return spec as unknown as Route;
}

/** A JSON answer. */
export function json(status: number, value: unknown, headers: Record<string, string> = {}): HttpResponse {
  return {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(value),
  };
}

/** A 204 answer. */
export const noContent = (): HttpResponse => ({ status: 204, headers: { 'cache-control': 'no-store' } });

/**
 * Whether a parsed `If-None-Match` (`*`, or opaque tags) matches the current version `etag`: the
 * weak comparison of RFC 9110 8.8.3.2 (`W/` is already gone, so the opaque tags are compared).
 * `*` matches any current representation (the caller only asks when there is one).
 */
export const noneMatch = (tags: '*' | readonly string[] | undefined, etag: string): boolean =>
  tags === '*' || (tags?.includes(etag) ?? false);

/** The 304 of a read whose `If-None-Match` names the current version: no body, the ETag. */
export const notModified = (etag: string): HttpResponse => ({
  status: 304,
  headers: { etag: `"${etag}"`, 'cache-control': 'no-store' },
});

/** The methods a route answers: its own, and HEAD for a GET route that declares `head`. */
export const methodsOf = (route: Pick<Route, 'method' | 'head'>): readonly Method[] =>
  route.head ? [route.method, 'HEAD'] : [route.method];

/** Cuts a page so that its JSON fits the answer limit. */
export function fitPage<T>(page: ListPage<T>, limit: number, keep: 'old' | 'new'): ListPage<T> {
  const { items } = page;
  let size = 128;
  const order = keep === 'old' ? items.map((_, i) => i) : items.map((_, i) => items.length - 1 - i);
  for (const i of order) {
    size += Buffer.byteLength(JSON.stringify(items[i])) + 1;
    if (size <= limit) continue;
    // Cut from the end the page keeps least: its new end, or (for `last`) its old end.
    if (keep === 'old') return { ...page, items: items.slice(0, i) };
    return {
      ...page,
      items: items.slice(i + 1),
      offset: page.offset + i + 1,
      baseHash: chainHash(page.baseHash, items.slice(0, i + 1)),
    };
  }
  return page;
}

/** The page options of a parsed `offset` and `limit` (an offset of 0 is the default). */
export const pageOf = (q: {
  offset?: number | undefined;
  limit?: number | undefined;
  last?: number | undefined;
}) => ({
  ...(q.offset ? { offset: q.offset } : {}),
  ...(q.limit !== undefined ? { limit: q.limit } : {}),
  ...(q.last !== undefined ? { last: q.last } : {}),
});
