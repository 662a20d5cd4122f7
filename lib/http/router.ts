/**
 * The one router every platform adapter calls. A route only parses, calls the store or the lock,
 * and shapes the answer; one error map (problems.ts) turns typed errors into RFC 9457 responses.
 */
import type * as z from 'zod';
import type { SessionLock } from '../lock/types.js';
import { ValidationError } from '../store/errors.js';
import { parseIJson } from '../store/ijson.js';
import type { StateStore } from '../store/store.js';
import type { SaveOptions, SessionStore, WorkspaceInfo } from '../store/types.js';
import type { Authenticator } from './auth.js';
import { HttpProblem, toProblem } from './problems.js';
import { type SchemaName, schemas } from './schemas.js';
import type { HttpHandler, HttpRequest, HttpResponse } from './types.js';
import { decodeUrlId } from './url-ids.js';

/** What the router needs. */
export interface RouterDeps {
  readonly store: StateStore;
  readonly lock: SessionLock;
  readonly auth: Authenticator;
  /** Largest request body, and largest answer (list pages are cut to fit); default 4 MiB. */
  readonly bodyLimitBytes?: number;
  /** The OpenAPI document served at /v1/openapi.json. */
  readonly openapi?: () => unknown;
  /** Called once per request, after the answer is made (logs, metrics). */
  readonly onResponse?: (info: {
    request: HttpRequest;
    route: string;
    response: HttpResponse;
    error?: unknown;
    ms: number;
  }) => void;
}

/** A route: its method and path pattern, and (for the OpenAPI document) what it takes and answers. */
export interface Route {
  readonly method: string;
  readonly pattern: string;
  readonly summary: string;
  readonly auth: boolean;
  readonly body?: SchemaName;
  readonly answers: Readonly<Record<number, SchemaName | null>>;
  readonly query?: readonly string[];
  readonly headers?: readonly string[];
  readonly handle: (ctx: RouteContext) => Promise<HttpResponse>;
}

interface RouteContext {
  readonly request: HttpRequest;
  readonly params: Record<string, string>;
  readonly user: SessionStore;
  readonly userId: string | null;
  readonly deps: RouterDeps;
  readonly limit: number;
}

const DEFAULT_LIMIT = 4 * 1024 * 1024;

function json(status: number, value: unknown, headers: Record<string, string> = {}): HttpResponse {
  return {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(value),
  };
}

const noContent = (): HttpResponse => ({ status: 204, headers: { 'cache-control': 'no-store' } });

/** Parses an I-JSON body (ijson.ts) and validates it; an empty lock or renew body is `{}`. */
function parseBody<S extends SchemaName>(request: HttpRequest, name: S): z.infer<(typeof schemas)[S]> {
  const body = request.body;
  let value: unknown;
  if (body?.some((b) => b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d)) value = parseIJson(body);
  else if (name === 'LockRequest' || name === 'RenewRequest') value = {};
  else throw new ValidationError('body', 'a JSON body is required');
  const parsed = schemas[name].safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.length ? issue.path.join('.') : 'body';
    throw new ValidationError(field, issue?.message ?? 'invalid');
  }
  return parsed.data as z.infer<(typeof schemas)[S]>;
}

/** An optional non-negative integer query parameter. */
function intParam(request: HttpRequest, name: string, min: number, max: number): number | undefined {
  const raw = request.query[name];
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ValidationError(name, `must be an integer from ${min} to ${max}`);
  }
  return Number(raw);
}

/** The `Fencing-Token` header, when present. */
function fencingToken(request: HttpRequest): number | undefined {
  const raw = request.headers['fencing-token'];
  if (raw === undefined) return undefined;
  if (!/^\d{1,16}$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new ValidationError('Fencing-Token', 'must be a decimal integer below 2^53');
  }
  return Number(raw);
}

function lockOwner(request: HttpRequest): string {
  const owner = request.headers['lock-owner'];
  if (!owner || !/^[A-Za-z0-9._:-]{1,128}$/.test(owner)) {
    throw new ValidationError('Lock-Owner', 'must be 1 to 128 characters of [A-Za-z0-9._:-]');
  }
  return owner;
}

function lockToken(request: HttpRequest): number {
  const token = fencingToken(request);
  if (token === undefined) throw new ValidationError('Fencing-Token', 'is required');
  return token;
}

/** A strong entity tag from a header: `"v"` (or `*` where allowed). */
function entityTag(request: HttpRequest, header: 'if-match' | 'if-none-match'): string | undefined {
  const raw = request.headers[header];
  if (raw === undefined) return undefined;
  if (raw === '*') return '*';
  const match = /^"([^"]*)"$/.exec(raw.trim());
  if (!match)
    throw new ValidationError(
      header === 'if-match' ? 'If-Match' : 'If-None-Match',
      'must be a quoted entity tag',
    );
  return match[1];
}

/** The conditions of a save: If-Match, If-None-Match: * and Fencing-Token. */
function saveConditions(request: HttpRequest): SaveOptions {
  const ifMatch = entityTag(request, 'if-match');
  const ifNoneMatch = entityTag(request, 'if-none-match');
  if (ifNoneMatch !== undefined && ifNoneMatch !== '*')
    throw new ValidationError('If-None-Match', 'only * is supported');
  if (ifMatch === '*') throw new ValidationError('If-Match', 'must be an entity tag');
  return {
    token: fencingToken(request),
    ...(ifMatch !== undefined ? { ifVersion: ifMatch } : {}),
    ...(ifNoneMatch ? { ifAbsent: true } : {}),
  };
}

/** A workspace as JSON. */
function workspaceJson(w: WorkspaceInfo) {
  return {
    name: w.name,
    size: w.size,
    storageClass: w.storageClass,
    lastModified: w.lastModified.toISOString(),
    ...(w.contentEncoding ? { contentEncoding: w.contentEncoding } : {}),
  };
}

/** Cuts a page so that its JSON fits the answer limit. */
function fitPage(items: unknown[], limit: number): unknown[] {
  let size = 64;
  for (let i = 0; i < items.length; i++) {
    size += Buffer.byteLength(JSON.stringify(items[i])) + 1;
    if (size > limit) return items.slice(0, i);
  }
  return items;
}

const session = (c: RouteContext) => c.params.sessionId as string;
const keyOf = (c: RouteContext) => c.params.key as string;
const nameOf = (c: RouteContext) => c.params.name as string;

/** Every route of the API. */
export const ROUTES: readonly Route[] = [
  {
    method: 'GET',
    pattern: '/v1/health',
    summary: 'Health check',
    auth: false,
    answers: { 200: 'Health' },
    handle: async () => json(200, { status: 'ok' }),
  },
  {
    method: 'GET',
    pattern: '/v1/openapi.json',
    summary: 'This OpenAPI 3.1 document',
    auth: false,
    answers: { 200: null },
    handle: async (c) => json(200, c.deps.openapi?.() ?? {}),
  },
  {
    method: 'GET',
    pattern: '/v1/sessions',
    summary: "List the caller's sessions",
    auth: true,
    query: ['limit', 'cursor'],
    answers: { 200: 'SessionPage' },
    handle: async (c) => {
      const limit = intParam(c.request, 'limit', 1, 1000);
      const cursor = c.request.query.cursor;
      const page = await c.user.listSessionIds({
        ...(limit ? { limit } : {}),
        ...(cursor !== undefined ? { cursor } : {}),
      });
      return json(200, {
        sessions: page.sessions.map((s) => ({
          sessionId: s.sessionId,
          lastActivity: s.lastActivity.toISOString(),
        })),
        nextCursor: page.nextCursor,
      });
    },
  },
  {
    method: 'DELETE',
    pattern: '/v1/sessions',
    summary: 'Delete every session of the caller (requires all=true)',
    auth: true,
    query: ['all'],
    answers: { 204: null },
    handle: async (c) => {
      if (c.request.query.all !== 'true')
        throw new ValidationError('all', 'must be true to delete every session');
      await c.user.deleteAllSessions();
      return noContent();
    },
  },
  {
    method: 'HEAD',
    pattern: '/v1/sessions/{sessionId}',
    summary: 'Whether the session exists',
    auth: true,
    answers: { 200: null, 404: null },
    handle: async (c) => ({
      status: (await c.user.exists(session(c))) ? 200 : 404,
      headers: { 'cache-control': 'no-store' },
    }),
  },
  {
    method: 'DELETE',
    pattern: '/v1/sessions/{sessionId}',
    summary: 'Delete the session and everything it owns (also when absent)',
    auth: true,
    headers: ['Fencing-Token'],
    answers: { 204: null },
    handle: async (c) => {
      await c.user.delete(session(c), { token: fencingToken(c.request) });
      return noContent();
    },
  },
  {
    method: 'PUT',
    pattern: '/v1/sessions/{sessionId}/state/{key}',
    summary: 'Save a single value (optionally If-Match or If-None-Match: *)',
    auth: true,
    body: 'Value',
    headers: ['If-Match', 'If-None-Match', 'Fencing-Token'],
    answers: { 200: 'Etag' },
    handle: async (c) => {
      const value = parseBody(c.request, 'Value');
      const { version } = await c.user.save(session(c), keyOf(c), value, saveConditions(c.request));
      return json(200, { etag: version }, { etag: `"${version}"` });
    },
  },
  {
    method: 'GET',
    pattern: '/v1/sessions/{sessionId}/state/{key}',
    summary: 'Read a single value (303 to a presigned URL when it is larger than an answer may be)',
    auth: true,
    answers: { 200: 'Value', 303: 'ValueLocation', 404: 'Problem' },
    handle: async (c) => {
      const found = await c.user.getVersioned(session(c), keyOf(c));
      if (!found) throw new HttpProblem(404, 'not-found', 'no such value');
      const body = JSON.stringify(found.value);
      if (Buffer.byteLength(body) > c.limit) {
        // Too large for an answer: a URL to read it straight from the object store.
        const located = await c.user.locateValue(session(c), keyOf(c));
        if (!located) throw new HttpProblem(404, 'not-found', 'no such value');
        return json(
          303,
          {
            etag: located.version,
            size: located.size,
            download: located.download,
            expiresAt: located.expiresAt.toISOString(),
          },
          { location: located.download.url, etag: `"${located.version}"` },
        );
      }
      return {
        status: 200,
        headers: {
          'content-type': 'application/json',
          etag: `"${found.version}"`,
          'cache-control': 'no-store',
        },
        body,
      };
    },
  },
  {
    method: 'DELETE',
    pattern: '/v1/sessions/{sessionId}/state/{key}',
    summary: 'Delete a single value',
    auth: true,
    headers: ['Fencing-Token'],
    answers: { 204: null },
    handle: async (c) => {
      await c.user.deleteKey(session(c), keyOf(c), { token: fencingToken(c.request) });
      return noContent();
    },
  },
  {
    method: 'PUT',
    pattern: '/v1/sessions/{sessionId}/lists/{key}',
    summary: 'Save the whole list: unchanged, append, or (archived) rewrite',
    auth: true,
    body: 'WholeList',
    headers: ['Fencing-Token'],
    answers: { 200: 'ListWrite' },
    handle: async (c) => {
      const items = parseBody(c.request, 'WholeList');
      return json(
        200,
        await c.user.saveList(session(c), keyOf(c), items, { token: fencingToken(c.request) }),
      );
    },
  },
  {
    method: 'POST',
    pattern: '/v1/sessions/{sessionId}/lists/{key}/items',
    summary: 'Append 1 to 1,000 items at the expected count',
    auth: true,
    body: 'AppendRequest',
    headers: ['Fencing-Token'],
    answers: { 200: 'ListWrite', 409: 'Problem' },
    handle: async (c) => {
      const { items, expectedCount, expectedHash } = parseBody(c.request, 'AppendRequest');
      const result = await c.user.appendList(session(c), keyOf(c), items, {
        expectedCount,
        ...(expectedHash ? { expectedHash } : {}),
        token: fencingToken(c.request),
      });
      return json(200, result);
    },
  },
  {
    method: 'GET',
    pattern: '/v1/sessions/{sessionId}/lists/{key}',
    summary: 'Read a page of the list (If-Match: "<hash>" to read only that version)',
    auth: true,
    query: ['offset', 'limit'],
    headers: ['If-Match'],
    answers: { 200: 'ListPage', 412: 'Problem' },
    handle: async (c) => {
      const offset = intParam(c.request, 'offset', 0, Number.MAX_SAFE_INTEGER);
      const limit = intParam(c.request, 'limit', 0, Number.MAX_SAFE_INTEGER);
      const page = await c.user.getList(session(c), keyOf(c), {
        ...(offset ? { offset } : {}),
        ...(limit !== undefined ? { limit } : {}),
      });
      const expected = entityTag(c.request, 'if-match');
      if (expected !== undefined && expected !== '*' && expected !== page.hash) {
        throw new HttpProblem(412, 'precondition-failed', 'the list has another hash', {
          currentHash: page.hash,
        });
      }
      return json(
        200,
        { items: fitPage(page.items, c.limit), count: page.count, hash: page.hash },
        { etag: `"${page.hash}"` },
      );
    },
  },
  {
    method: 'DELETE',
    pattern: '/v1/sessions/{sessionId}/lists/{key}',
    summary: 'Archive the list, then remove it',
    auth: true,
    headers: ['Fencing-Token'],
    answers: { 204: null },
    handle: async (c) => {
      await c.user.deleteList(session(c), keyOf(c), { token: fencingToken(c.request) });
      return noContent();
    },
  },
  {
    method: 'GET',
    pattern: '/v1/sessions/{sessionId}/lists/{key}/archives',
    summary: 'The archives of a list',
    auth: true,
    answers: { 200: 'Archives' },
    handle: async (c) => {
      const archives = await c.user.listArchives(session(c), keyOf(c));
      return json(200, { archives: archives.map((a) => ({ ...a, archivedAt: a.archivedAt.toISOString() })) });
    },
  },
  {
    method: 'GET',
    pattern: '/v1/sessions/{sessionId}/lists/{key}/archives/{archiveId}',
    summary: 'A page of an archived list',
    auth: true,
    query: ['offset', 'limit'],
    answers: { 200: 'ListPage', 202: 'Restoring', 404: 'Problem' },
    handle: async (c) => {
      const offset = intParam(c.request, 'offset', 0, Number.MAX_SAFE_INTEGER);
      const limit = intParam(c.request, 'limit', 0, Number.MAX_SAFE_INTEGER);
      const archiveId = c.params.archiveId as string;
      const page = await c.user.getArchive(session(c), keyOf(c), archiveId, {
        ...(offset ? { offset } : {}),
        ...(limit !== undefined ? { limit } : {}),
      });
      if (!page) throw new HttpProblem(404, 'not-found', 'no such archive');
      return json(200, { items: fitPage(page.items, c.limit), count: page.count, hash: page.hash });
    },
  },
  {
    method: 'POST',
    pattern: '/v1/sessions/{sessionId}/state/{key}/uploads',
    summary: 'Start a direct upload of a value too large for a request body',
    auth: true,
    body: 'ValueUploadRequest',
    answers: { 201: 'ValueUpload' },
    handle: async (c) => {
      const request = parseBody(c.request, 'ValueUploadRequest');
      const started = await c.user.createValueUpload(session(c), keyOf(c), request);
      return json(201, { ...started, expiresAt: started.expiresAt.toISOString() });
    },
  },
  {
    method: 'POST',
    pattern: '/v1/sessions/{sessionId}/state/{key}/uploads/{uploadId}',
    summary: 'Commit an uploaded value as a save (If-Match, If-None-Match: *, Fencing-Token apply)',
    auth: true,
    headers: ['If-Match', 'If-None-Match', 'Fencing-Token'],
    answers: { 200: 'Etag', 404: 'Problem', 412: 'Problem' },
    handle: async (c) => {
      const { version } = await c.user.commitValueUpload(
        session(c),
        keyOf(c),
        c.params.uploadId as string,
        saveConditions(c.request),
      );
      return json(200, { etag: version }, { etag: `"${version}"` });
    },
  },
  {
    method: 'GET',
    pattern: '/v1/sessions/{sessionId}/workspaces',
    summary: "The session's workspaces",
    auth: true,
    answers: { 200: 'Workspaces' },
    handle: async (c) => {
      const list = await c.user.listWorkspaces(session(c));
      return json(200, { workspaces: list.map(workspaceJson) });
    },
  },
  {
    method: 'POST',
    pattern: '/v1/sessions/{sessionId}/workspaces/{name}/uploads',
    summary: 'Start a direct upload of a workspace: one presigned PUT, or presigned parts',
    auth: true,
    body: 'WorkspaceUploadRequest',
    headers: ['Fencing-Token'],
    answers: { 201: 'WorkspaceUpload', 501: 'Problem' },
    handle: async (c) => {
      const request = parseBody(c.request, 'WorkspaceUploadRequest');
      const upload = await c.user.createWorkspaceUpload(session(c), nameOf(c), request, {
        token: fencingToken(c.request),
      });
      return json(201, { ...upload, expiresAt: upload.expiresAt.toISOString() });
    },
  },
  {
    method: 'POST',
    pattern: '/v1/sessions/{sessionId}/workspaces/{name}/uploads/{uploadId}',
    summary: 'Complete an upload: sizes and digests are checked against what was declared',
    auth: true,
    headers: ['Fencing-Token'],
    answers: { 200: 'Workspace', 404: 'Problem', 422: 'Problem' },
    handle: async (c) => {
      const info = await c.user.completeWorkspaceUpload(session(c), nameOf(c), c.params.uploadId as string, {
        token: fencingToken(c.request),
      });
      return json(200, workspaceJson(info));
    },
  },
  {
    method: 'GET',
    pattern: '/v1/sessions/{sessionId}/workspaces/{name}',
    summary: 'A presigned URL to download the workspace; 202 while an archived one is restored',
    auth: true,
    answers: { 200: 'WorkspaceDownload', 202: 'Restoring', 404: 'Problem' },
    handle: async (c) => {
      const found = await c.user.getWorkspace(session(c), nameOf(c));
      if (!found) throw new HttpProblem(404, 'not-found', 'no such workspace');
      if (found.status === 'restoring') {
        return json(
          202,
          { ...workspaceJson(found), status: 'restoring', detail: 'archived; a restore is in progress' },
          { 'retry-after': '60' },
        );
      }
      return json(200, {
        ...workspaceJson(found),
        download: found.download,
        expiresAt: found.expiresAt.toISOString(),
        status: 'ready',
      });
    },
  },
  {
    method: 'DELETE',
    pattern: '/v1/sessions/{sessionId}/workspaces/{name}',
    summary: 'Delete a workspace (and its unfinished upload)',
    auth: true,
    headers: ['Fencing-Token'],
    answers: { 204: null },
    handle: async (c) => {
      await c.user.deleteWorkspace(session(c), nameOf(c), { token: fencingToken(c.request) });
      return noContent();
    },
  },
  {
    method: 'POST',
    pattern: '/v1/sessions/{sessionId}/lock',
    summary: 'Acquire the session lock (does not create the session)',
    auth: true,
    body: 'LockRequest',
    answers: { 200: 'Lease', 409: 'Problem' },
    handle: async (c) => {
      const body = parseBody(c.request, 'LockRequest');
      const lease = await c.deps.lock.acquire({ userId: c.userId, sessionId: session(c) }, body);
      return json(200, { ...lease, expiresAt: lease.expiresAt.toISOString() });
    },
  },
  {
    method: 'PUT',
    pattern: '/v1/sessions/{sessionId}/lock',
    summary: 'Renew the lease (Lock-Owner and Fencing-Token headers)',
    auth: true,
    body: 'RenewRequest',
    headers: ['Lock-Owner', 'Fencing-Token'],
    answers: { 200: 'Lease', 409: 'Problem' },
    handle: async (c) => {
      const body = parseBody(c.request, 'RenewRequest');
      const lease = await c.deps.lock.renew(
        { userId: c.userId, sessionId: session(c) },
        lockOwner(c.request),
        lockToken(c.request),
        body,
      );
      return json(200, { ...lease, expiresAt: lease.expiresAt.toISOString() });
    },
  },
  {
    method: 'DELETE',
    pattern: '/v1/sessions/{sessionId}/lock',
    summary: 'Release the lease (Lock-Owner and Fencing-Token headers)',
    auth: true,
    headers: ['Lock-Owner', 'Fencing-Token'],
    answers: { 204: null, 409: 'Problem' },
    handle: async (c) => {
      await c.deps.lock.release(
        { userId: c.userId, sessionId: session(c) },
        lockOwner(c.request),
        lockToken(c.request),
      );
      return noContent();
    },
  },
];

const ID_PARAMS: Record<string, string> = { sessionId: 'sessionId', key: 'key', name: 'name' };
/** Parameters that are not encoded ids (checked by their routes). */
const RAW_PARAMS = new Set(['archiveId', 'uploadId']);

/** Matches a path against a route pattern; returns the decoded parameters. */
function match(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as string;
    const g = got[i] as string;
    if (w.startsWith('{')) {
      const name = w.slice(1, -1);
      params[name] = g;
    } else if (w !== g) return undefined;
  }
  return params;
}

/** Creates the router. */
export function createRouter(deps: RouterDeps): HttpHandler {
  const limit = deps.bodyLimitBytes ?? DEFAULT_LIMIT;
  return async (request) => {
    const started = performance.now();
    let route = 'unmatched';
    let error: unknown;
    let response: HttpResponse;
    try {
      const path = request.path.length > 1 ? request.path.replace(/\/+$/, '') : request.path;
      const candidates = ROUTES.map((r) => ({ r, params: match(r.pattern, path) })).filter((m) => m.params);
      if (candidates.length === 0) throw new HttpProblem(404, 'not-found', 'no such resource');
      const method = request.method.toUpperCase();
      const found = candidates.find((m) => m.r.method === method);
      if (!found) {
        const allow = candidates.map((m) => m.r.method).join(', ');
        throw new HttpProblem(405, 'method-not-allowed', `use ${allow}`, {}, { allow });
      }
      route = `${found.r.method} ${found.r.pattern}`;
      if (request.body && request.body.byteLength > limit) {
        throw new HttpProblem(413, 'payload-too-large', 'the request body is too large', { limit });
      }
      const params: Record<string, string> = {};
      for (const [name, raw] of Object.entries(found.params ?? {})) {
        params[name] = RAW_PARAMS.has(name) ? raw : decodeUrlId(raw, ID_PARAMS[name] ?? name);
      }
      const userId = found.r.auth ? await deps.auth(request) : null;
      const user = deps.store.forUser(userId);
      response = await found.r.handle({ request, params, user, userId, deps, limit });
    } catch (caught) {
      const mapped = toProblem(caught, request.requestId);
      response = mapped.response;
      if (mapped.internal || mapped.log) error = caught;
    }
    if (request.method.toUpperCase() === 'HEAD') response = { ...response, body: undefined };
    deps.onResponse?.({ request, route, response, error, ms: performance.now() - started });
    return response;
  };
}
