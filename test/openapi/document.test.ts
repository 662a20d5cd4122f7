/**
 * openapi.json says what the server does: each route's operation id, tag, description and
 * security; every problem code a route may answer, under its status; and the headers answers carry,
 * checked both in the document and against the answers of a local server (memory storage).
 */
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { openApiDocument } from '../../lib/http/openapi.js';
import { problemsOf, ROUTES, TAGS } from '../../lib/http/routes/index.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { PROBLEMS } from '../../lib/protocol/problems.js';
import { schemas } from '../../lib/protocol/schemas.js';
import { hsToken, SECRET } from '../http/harness.js';

interface Header {
  $ref: string;
}
interface Response {
  description: string;
  headers?: Record<string, Header>;
  content?: Record<string, unknown>;
  'x-problem-codes'?: string[];
}
interface Operation {
  operationId: string;
  tags: string[];
  summary: string;
  description: string;
  security?: unknown[];
  parameters: Array<{ name: string; in: string; schema: Record<string, unknown> }>;
  responses: Record<string, Response>;
}
interface Document {
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { headers: Record<string, unknown>; responses: Record<string, Response> };
}

const doc = openApiDocument() as unknown as Document;
// The responses operations share are in components.responses: read them in place.
for (const methods of Object.values(doc.paths))
  for (const op of Object.values(methods))
    for (const [status, response] of Object.entries(op.responses)) {
      const name = (response as { $ref?: string }).$ref?.replace('#/components/responses/', '');
      if (name !== undefined) op.responses[status] = doc.components.responses[name] as Response;
    }
const operation = (method: string, pattern: string) =>
  doc.paths[pattern]?.[method.toLowerCase()] as Operation;

/** The answer headers the document speaks of (content-type and cache-control aside). */
const DOCUMENTED_HEADERS = ['x-request-id', 'etag', 'location', 'retry-after', 'allow'];

describe('OpenAPI document: operations', () => {
  it('every route has its readable operation id, one tag of the top level, a summary and a description', () => {
    const ids = Object.fromEntries(
      ROUTES.map((r) => [`${r.method} ${r.pattern}`, operation(r.method, r.pattern).operationId]),
    );
    expect(ids).toEqual({
      'GET /v1/health': 'getHealth',
      'GET /v1/ready': 'getReady',
      'GET /v1/capabilities': 'getCapabilities',
      'GET /v1/openapi.json': 'getOpenApi',
      'GET /v1/sessions': 'listSessions',
      'DELETE /v1/sessions': 'deleteAllSessions',
      'HEAD /v1/sessions/{sessionId}': 'sessionExists',
      'GET /v1/sessions/{sessionId}/keys': 'listKeys',
      'DELETE /v1/sessions/{sessionId}': 'deleteSession',
      'PUT /v1/sessions/{sessionId}/state/{key}': 'putValue',
      'GET /v1/sessions/{sessionId}/state/{key}': 'getValue',
      'DELETE /v1/sessions/{sessionId}/state/{key}': 'deleteValue',
      'PUT /v1/sessions/{sessionId}/lists/{key}': 'saveList',
      'POST /v1/sessions/{sessionId}/lists/{key}/items': 'appendListItems',
      'POST /v1/sessions/{sessionId}/lists/{key}/truncate': 'truncateList',
      'GET /v1/sessions/{sessionId}/lists/{key}': 'getList',
      'DELETE /v1/sessions/{sessionId}/lists/{key}': 'deleteList',
      'GET /v1/sessions/{sessionId}/lists/{key}/archives': 'listArchives',
      'GET /v1/sessions/{sessionId}/lists/{key}/archives/{archiveId}': 'getArchive',
      'POST /v1/sessions/{sessionId}/state/{key}/uploads': 'startValueUpload',
      'POST /v1/sessions/{sessionId}/state/{key}/uploads/{uploadId}': 'commitValueUpload',
      'GET /v1/sessions/{sessionId}/workspaces': 'listWorkspaces',
      'POST /v1/sessions/{sessionId}/workspaces/{name}/uploads': 'startWorkspaceUpload',
      'POST /v1/sessions/{sessionId}/workspaces/{name}/uploads/{uploadId}': 'completeWorkspaceUpload',
      'GET /v1/sessions/{sessionId}/workspaces/{name}': 'getWorkspace',
      'DELETE /v1/sessions/{sessionId}/workspaces/{name}': 'deleteWorkspace',
      'POST /v1/sessions/{sessionId}/workspaces/{name}/snapshots': 'startWorkspaceSnapshot',
      'GET /v1/sessions/{sessionId}/workspaces/{name}/snapshots': 'listWorkspaceSnapshots',
      'POST /v1/sessions/{sessionId}/workspaces/{name}/snapshots/{snapshotId}': 'commitWorkspaceSnapshot',
      'GET /v1/sessions/{sessionId}/workspaces/{name}/snapshots/{snapshotId}': 'getWorkspaceSnapshot',
      'DELETE /v1/sessions/{sessionId}/workspaces/{name}/snapshots/{snapshotId}': 'deleteWorkspaceSnapshot',
      'GET /v1/sessions/{sessionId}/lock': 'getLock',
      'POST /v1/sessions/{sessionId}/lock': 'acquireLock',
      'PUT /v1/sessions/{sessionId}/lock': 'renewLock',
      'DELETE /v1/sessions/{sessionId}/lock': 'releaseLock',
      'POST /v1/sessions/{sessionId}/snapshot': 'readSnapshot',
      'POST /v1/sessions/{sessionId}/turns': 'beginTurn',
      'POST /v1/sessions/{sessionId}/commits': 'commitTurn',
    });
    expect(doc.tags.map((t) => t.name)).toEqual(Object.keys(TAGS));
    for (const tag of doc.tags) expect(tag.description, tag.name).not.toBe('');
    const used = new Set<string>();
    for (const route of ROUTES) {
      const op = operation(route.method, route.pattern);
      expect(op.tags, op.operationId).toEqual([route.tag]);
      used.add(route.tag);
      expect(op.summary.length, op.operationId).toBeGreaterThan(10);
      expect(op.description.length, op.operationId).toBeGreaterThan(40);
      // Open routes say so; the others inherit the document's bearer security.
      if (route.auth) expect(op.security, op.operationId).toBeUndefined();
      else expect(op.security, op.operationId).toEqual([]);
    }
    expect([...used].sort()).toEqual(Object.keys(TAGS).sort());
  });

  it('every problem code a route may answer is listed under its status, with what it means', () => {
    for (const route of ROUTES) {
      const op = operation(route.method, route.pattern);
      const listed = new Set<string>();
      for (const [status, response] of Object.entries(op.responses)) {
        for (const code of response['x-problem-codes'] ?? []) {
          expect(String(PROBLEMS[code as keyof typeof PROBLEMS].status), `${op.operationId} ${code}`).toBe(
            status,
          );
          expect(response.description, `${op.operationId} ${code}`).toContain(`\`${code}\`:`);
          listed.add(code);
        }
      }
      expect([...listed].sort(), op.operationId).toEqual(problemsOf(route).sort());
    }
    // Writes to the store may be contended, refused by an unsafe backend, or refused for a session the
    // reference wrote under names the store does not write; the lock's routes do not write to it.
    expect(operation('POST', '/v1/sessions/{sessionId}/lists/{key}/items').responses['409']).toMatchObject({
      'x-problem-codes': ['append-conflict', 'fenced', 'contended', 'reference-id-unsupported'],
    });
    expect(operation('POST', '/v1/sessions/{sessionId}/lock').responses['409']).toMatchObject({
      'x-problem-codes': ['lock-held'],
    });
    expect(operation('GET', '/v1/health').responses['401']).toBeUndefined();
  });

  it('answer headers: reusable components, X-Request-Id on every answer the router makes', () => {
    expect(Object.keys(doc.components.headers).sort()).toEqual(
      ['Agent-State-Revision', 'Allow', 'ETag', 'Location', 'Retry-After', 'X-Request-Id'].sort(),
    );
    const headersOf = (method: string, pattern: string, status: number) =>
      Object.keys(operation(method, pattern).responses[status]?.headers ?? {}).sort();
    for (const route of ROUTES) {
      const op = operation(route.method, route.pattern);
      for (const [status, response] of Object.entries(op.responses)) {
        for (const header of Object.values(response.headers ?? {}))
          expect(header.$ref).toMatch(/^#\/components\/headers\//);
        // Only API Gateway's own answers (a status the router never answers) lack X-Request-Id.
        const router = status === 'default' || status in route.answers || response['x-problem-codes'];
        expect(response.headers?.['X-Request-Id'] !== undefined, `${op.operationId} ${status}`).toBe(
          Boolean(router),
        );
      }
      expect(headersOf(route.method, route.pattern, 405)).toEqual(['Allow', 'X-Request-Id']);
      if (route.auth) expect(headersOf(route.method, route.pattern, 503)).toContain('Retry-After');
    }
    const value = '/v1/sessions/{sessionId}/state/{key}';
    const list = '/v1/sessions/{sessionId}/lists/{key}';
    expect(headersOf('GET', value, 200)).toEqual(['Agent-State-Revision', 'ETag', 'X-Request-Id']);
    expect(headersOf('GET', value, 202)).toEqual(['Retry-After', 'X-Request-Id']);
    expect(headersOf('GET', value, 303)).toEqual([
      'Agent-State-Revision',
      'ETag',
      'Location',
      'X-Request-Id',
    ]);
    expect(headersOf('PUT', value, 200)).toEqual(['Agent-State-Revision', 'ETag', 'X-Request-Id']);
    expect(headersOf('GET', list, 200)).toEqual(['ETag', 'X-Request-Id']);
    expect(headersOf('POST', '/v1/sessions/{sessionId}/lock', 409)).toEqual(['Retry-After', 'X-Request-Id']);
    expect(headersOf('GET', `${list}/archives/{archiveId}`, 202)).toEqual(['Retry-After', 'X-Request-Id']);
    // HEAD answers have no body.
    for (const response of Object.values(operation('HEAD', '/v1/sessions/{sessionId}').responses))
      expect(response.content).toBeUndefined();
  });

  it('a JSON value is any value ({} with a description), and its schema passes values through unchanged', () => {
    const components = (doc as unknown as { components: { schemas: Record<string, unknown> } }).components;
    expect(components.schemas.Value).toEqual({ description: 'any I-JSON value (RFC 7493)' });
    expect(components.schemas.WholeList).toEqual({
      type: 'array',
      items: { description: 'any I-JSON value (RFC 7493)' },
    });
    const value = JSON.parse('{"__proto__": {"polluted": true}, "list": [1, null, {"__proto__": []}]}');
    for (const parsed of [schemas.Value.parse(value), schemas.WholeList.parse([value])[0]]) {
      expect(parsed).toBe(value);
      expect(Object.hasOwn(parsed as object, '__proto__')).toBe(true);
    }
    const appended = schemas.AppendRequest.parse({ items: [value], expectedCount: 0 });
    expect(appended.items[0]).toBe(value);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('the append declares Idempotency-Key (1 to 64 of [A-Za-z0-9._:-]) and says what a replay answers', () => {
    const op = operation('POST', '/v1/sessions/{sessionId}/lists/{key}/items');
    const header = op.parameters.find((p) => p.name === 'Idempotency-Key');
    expect(header).toMatchObject({
      in: 'header',
      schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,64}$' },
    });
    expect(op.description).toMatch(/`Idempotency-Key`[\s\S]*answers the first answer again/);
  });
});

describe('OpenAPI document: what the local server answers', () => {
  let server: ReturnType<typeof createNodeServer>;
  let base: string;
  let token: string;
  const seen: string[] = [];

  beforeAll(async () => {
    const config = loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, LOG_LEVEL: 'SILENT' });
    const app = createApp(config, { driver: createMemoryDriver(), lock: createMemoryLock() });
    server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    token = await hsToken({ sub: 'alice' });
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  /** The route of a method and path (for a 405, any route of the path). */
  const routeOf = (method: string, path: string, status: number) => {
    const ofPath = ROUTES.filter((r) =>
      new RegExp(`^${r.pattern.replace(/\{\w+\}/g, '[^/]+').replace(/\./g, '\\.')}$`).test(
        path.split('?')[0] ?? '',
      ),
    );
    return ofPath.find((r) => r.method === method) ?? (status === 405 ? ofPath[0] : undefined);
  };

  /**
   * Calls the API and checks the answer against the document: its status is documented for the
   * operation (or covered by `default`), and each header it carries of DOCUMENTED_HEADERS is
   * documented for that status.
   */
  async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    const route = routeOf(method, path, response.status);
    const documented = route ? operation(route.method, route.pattern) : undefined;
    const where = `${method} ${path} ${response.status}`;
    const answer = documented?.responses[response.status];
    if (documented) expect(answer, `${where}: status documented`).toBeDefined();
    const names = Object.keys(answer?.headers ?? {}).map((h) => h.toLowerCase());
    for (const header of DOCUMENTED_HEADERS)
      if (response.headers.has(header)) expect(names, `${where}: ${header}`).toContain(header);
    if (documented) seen.push(`${documented.operationId} ${response.status}`);
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  }

  it('answers carry only documented headers, through a tour of the routes', async () => {
    const s = `/v1/sessions/doc-${Date.now()}`;
    expect((await call('GET', '/v1/health')).status).toBe(200);
    expect((await call('GET', '/v1/openapi.json')).status).toBe(200);
    expect((await call('POST', '/v1/health')).headers.get('allow')).toBe('GET');
    expect((await call('HEAD', s)).status).toBe(404);
    const put = await call('PUT', `${s}/state/plan`, { steps: [1] });
    expect(put.headers.get('etag')).toBe(`"${put.body.etag}"`);
    expect((await call('GET', `${s}/state/plan`)).headers.get('etag')).toBe(`"${put.body.etag}"`);
    expect((await call('PUT', `${s}/state/plan`, 2, { 'if-match': '"stale"' })).status).toBe(412);
    expect((await call('GET', `${s}/state/absent`)).status).toBe(404);
    expect((await call('HEAD', s)).status).toBe(200);
    expect((await call('GET', '/v1/sessions')).status).toBe(200);
    expect((await call('PUT', `${s}/lists/log`, ['a'])).body.action).toBe('created');
    const listed = await call('GET', `${s}/lists/log`);
    expect(listed.headers.get('etag')).toBe(`"${listed.body.hash}"`);
    expect((await call('GET', `${s}/lists/log`, undefined, { 'if-match': '"other"' })).status).toBe(412);
    expect((await call('POST', `${s}/lists/log/items`, { items: ['b'], expectedCount: 0 })).status).toBe(409);
    expect((await call('PUT', `${s}/lists/log`, ['c'])).body.action).toBe('rewritten');
    expect((await call('GET', `${s}/lists/log/archives`)).body.archives).toHaveLength(1);
    const [archive] = (await call('GET', `${s}/lists/log/archives`)).body.archives;
    expect((await call('GET', `${s}/lists/log/archives/${archive.archiveId}`)).body.items).toEqual(['a']);
    expect((await call('GET', `${s}/workspaces`)).status).toBe(200);
    const lease = await call('POST', `${s}/lock`, { owner: 'agent-1' });
    expect(lease.status).toBe(200);
    const held = await call('POST', `${s}/lock`, { owner: 'agent-2' });
    expect(held.status).toBe(409);
    expect(Number(held.headers.get('retry-after'))).toBeGreaterThan(0);
    const leaseHeaders = { 'lock-owner': 'agent-1', 'fencing-token': String(lease.body.token) };
    expect((await call('PUT', `${s}/lock`, {}, leaseHeaders)).status).toBe(200);
    expect((await call('DELETE', `${s}/lock`, undefined, leaseHeaders)).status).toBe(204);
    expect((await call('DELETE', `${s}/lists/log`)).status).toBe(204);
    expect((await call('DELETE', `${s}/state/plan`)).status).toBe(204);
    expect((await call('DELETE', s)).status).toBe(204);
    expect((await call('DELETE', '/v1/sessions?all=true')).status).toBe(204);
    expect(seen.length).toBeGreaterThan(25);
  });

  it('the append remembers its Idempotency-Key: a replay answers the first answer, even after other appends; a malformed one is refused', async () => {
    const s = `/v1/sessions/idem-${Date.now()}/lists/log/items`;
    const first = await call('POST', s, { items: [1], expectedCount: 0 }, { 'idempotency-key': 'a.b_c:d-1' });
    expect(first.body).toMatchObject({ action: 'created', count: 1 });
    const other = await call('POST', s, { items: [2], expectedCount: 1 }, { 'idempotency-key': 'other-1' });
    expect(other.body).toMatchObject({ action: 'appended', count: 2 });
    // The first key again, after another append: its first answer, and nothing is written.
    const retried = await call(
      'POST',
      s,
      { items: [1], expectedCount: 0 },
      { 'idempotency-key': 'a.b_c:d-1' },
    );
    expect(retried.body).toEqual(first.body);
    const longest = await call(
      'POST',
      s,
      { items: [3], expectedCount: 2 },
      { 'idempotency-key': 'k'.repeat(64) },
    );
    expect(longest.body).toMatchObject({ count: 3 });
    for (const key of ['k'.repeat(65), 'has space', 'slash/no', 'é', '']) {
      const refused = await call('POST', s, { items: [4], expectedCount: 3 }, { 'idempotency-key': key });
      expect(refused.status, key).toBe(400);
      expect(refused.body, key).toMatchObject({ code: 'invalid-request', field: 'Idempotency-Key' });
    }
  });

  it('OPTIONS * answers 204 with Allow: every method of the document, and OPTIONS', async () => {
    const answer = await new Promise<{ status: number; headers: Record<string, unknown> }>(
      (resolve, reject) => {
        const r = request(`${base}`, { method: 'OPTIONS', path: '*' }, (response) => {
          response.resume();
          response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers }));
        });
        r.on('error', reject);
        r.end();
      },
    );
    expect(answer.status).toBe(204);
    expect(answer.headers['x-request-id']).toBeTruthy();
    const methods = new Set(
      Object.values(doc.paths).flatMap((p) => Object.keys(p).map((m) => m.toUpperCase())),
    );
    expect(String(answer.headers.allow).split(', ').sort()).toEqual([...methods, 'OPTIONS'].sort());
  });
});
