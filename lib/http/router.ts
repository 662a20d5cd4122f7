/**
 * The one router every platform adapter calls. The route table (routes/) is compiled once, when the
 * router is created: each pattern is split into segments once and put in a tree keyed by segment,
 * so a request costs one map lookup per segment of its path. The router then validates what the
 * matched route declares (path parameters, body, query, headers) and calls its handler with the
 * parsed inputs; one error map (problems.ts) turns typed errors into RFC 9457 responses. Every
 * answer carries `X-Request-Id`. The HTTP conventions are applied here, on every platform alike:
 * CORS (cors.ts), compression and `Vary: Accept-Encoding` on GET routes (compression.ts), and HEAD
 * on a GET route that declares `head` (its answer without the body, with the body's Content-Length).
 */

import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import { DEFAULTS } from '../contract/defaults.js';
import { ValidationError } from '../contract/errors.js';
import { parseIJson } from '../contract/json.js';
import { PATH_PARAMS, type PathParam, patternSegments } from '../protocol/paths.js';
import { HEADER_NAMES, type HeaderKey, REQUEST_ID_HEADER } from '../protocol/schemas.js';
import { decodeUrlId } from '../protocol/url-ids.js';
import { authenticate } from './auth.js';
import { negotiated } from './compression.js';
import { preflight, withCors } from './cors.js';
import { HttpProblem, toProblem } from './problems.js';
import { readinessOf } from './readiness.js';
import { methodsOf, ROUTES, type Route, type RouterDeps } from './routes/index.js';
import type { HttpHandler, HttpRequest, HttpResponse } from './types.js';

export type { Route, RouterDeps };
export { ROUTES };

// Refusals name what was expected (zod/mini carries no messages of its own; classic zod sets the same).
z.config(en());

const REQUEST_ID = REQUEST_ID_HEADER.toLowerCase();

/** A node of the compiled table: children by literal segment, one parameter child, and the routes ending here. */
export interface RouteTree {
  readonly literal: Map<string, RouteTree>;
  param?: { readonly name: PathParam; readonly node: RouteTree };
  /** The routes of the pattern ending at this node, by method. */
  methods?: Map<string, Route>;
  pattern?: string;
}

const node = (): RouteTree => ({ literal: new Map() });

/**
 * Compiles a route table into a tree. Refuses, at start, a method declared twice for a pattern, a
 * parameter unknown to the protocol, and a segment that is a literal in one pattern and a parameter
 * in another at the same place: then no path matches two patterns, and a lookup never backtracks.
 */
export function compileRoutes(routes: readonly Route[]): RouteTree {
  const root = node();
  for (const route of routes) {
    let at = root;
    for (const segment of patternSegments(route.pattern)) {
      if ('text' in segment) {
        if (at.param)
          throw new Error(`${route.pattern}: "${segment.text}" where another pattern has a parameter`);
        const next = at.literal.get(segment.text) ?? node();
        at.literal.set(segment.text, next);
        at = next;
      } else {
        if (at.literal.size > 0 || (at.param && at.param.name !== segment.param))
          throw new Error(`${route.pattern}: {${segment.param}} where another pattern has another segment`);
        at.param ??= { name: segment.param, node: node() };
        at = at.param.node;
      }
    }
    at.methods ??= new Map();
    at.pattern ??= route.pattern;
    if (route.head && route.method !== 'GET')
      throw new Error(`${route.method} ${route.pattern}: head on a route that is not a GET`);
    for (const method of methodsOf(route)) {
      if (at.methods.has(method)) throw new Error(`${method} ${route.pattern} is declared twice`);
      at.methods.set(method, route);
    }
  }
  return root;
}

/** The node a path's segments end at, with the raw parameters on the way; undefined when none. */
function lookup(
  root: RouteTree,
  segments: readonly string[],
): { node: RouteTree; raw: Array<[PathParam, string]> } | undefined {
  const raw: Array<[PathParam, string]> = [];
  let at = root;
  for (const segment of segments) {
    const literal = at.literal.get(segment);
    if (literal) at = literal;
    else if (at.param) {
      raw.push([at.param.name, segment]);
      at = at.param.node;
    } else return undefined;
  }
  return at.methods ? { node: at, raw } : undefined;
}

/** The first issue of a failed parse as a ValidationError naming `field(path)`. */
function refusal(error: z.core.$ZodError, field: (path: PropertyKey[]) => string): ValidationError {
  const issue = error.issues[0];
  return new ValidationError(field(issue?.path ?? []), issue?.message ?? 'invalid');
}

/** Parses an I-JSON body (lib/contract/json.ts) and validates it; an empty body is the route's `emptyBody`, if any. */
function parseBody(request: HttpRequest, route: Route & { body: z.ZodMiniType }): unknown {
  const body = request.body;
  let value: unknown;
  if (body?.some((b) => b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d)) value = parseIJson(body);
  else if (route.emptyBody !== undefined) value = route.emptyBody;
  else throw new ValidationError('body', 'a JSON body is required');
  const parsed = route.body.safeParse(value);
  if (!parsed.success) throw refusal(parsed.error, (path) => (path.length ? path.join('.') : 'body'));
  return parsed.data;
}

/** Validates the query parameters a route declares. */
function parseQuery(request: HttpRequest, schema: z.ZodMiniObject): unknown {
  const input: Record<string, string | undefined> = {};
  for (const name of Object.keys(schema.shape)) input[name] = request.query[name];
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw refusal(parsed.error, (path) => String(path[0] ?? 'query'));
  return parsed.data;
}

/** Validates the headers a route declares (by `HEADER_NAMES` key); a refusal names the header. */
function parseHeaders(request: HttpRequest, schema: z.ZodMiniObject): unknown {
  const input: Record<string, string | undefined> = {};
  for (const key of Object.keys(schema.shape))
    input[key] = request.headers[HEADER_NAMES[key as HeaderKey].toLowerCase()];
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw refusal(parsed.error, (path) => HEADER_NAMES[path[0] as HeaderKey] ?? 'headers');
  return parsed.data;
}

/** The API's route table, compiled when this module loads: a table that cannot be compiled stops the start. */
const TABLE = compileRoutes(ROUTES);

/** Creates the router (of the API's routes, or of `routes`, compiled here). */
export function createRouter(given: RouterDeps, routes: readonly Route[] = ROUTES): HttpHandler {
  const deps: RouterDeps = given.ready ? given : { ...given, ready: readinessOf(given.store, given.lock) };
  const limit = deps.bodyLimitBytes ?? DEFAULTS.bodyLimitBytes;
  const root = routes === ROUTES ? TABLE : compileRoutes(routes);
  return async (request) => {
    const started = performance.now();
    const method = request.method.toUpperCase();
    let route = 'unmatched';
    let matched: Route | undefined;
    let error: unknown;
    let response: HttpResponse;
    const dispatch = async (): Promise<HttpResponse> => {
      const path = request.path.length > 1 ? request.path.replace(/\/+$/, '') : request.path;
      const found = lookup(root, path.split('/'));
      if (!found) throw new HttpProblem('not-found', 'no such resource');
      const methods = found.node.methods as Map<string, Route>;
      const r = methods.get(method);
      if (!r) {
        // An OPTIONS names the route it asks about (a preflight or not); another method the path
        // does not take stays `unmatched`, so a client's invented methods add no route to the metrics.
        if (method === 'OPTIONS') route = `OPTIONS ${found.node.pattern}`;
        // A preflight from an allowed origin (CORS on); any other OPTIONS is a method like another.
        const answer = preflight(deps.cors, request);
        if (answer) return answer;
        const allow = [...methods.keys()].join(', ');
        throw new HttpProblem('method-not-allowed', `use ${allow}`, {}, { allow });
      }
      matched = r;
      route = `${method} ${r.pattern}`;
      if (request.body && request.body.byteLength > limit) {
        throw new HttpProblem('payload-too-large', 'the request body is too large', { limit });
      }
      const params: Record<string, string> = {};
      for (const [name, raw] of found.raw) {
        const spec: { id?: string } = PATH_PARAMS[name];
        params[name] = spec.id ? decodeUrlId(raw, name) : raw;
      }
      // One identity per request: repeated Authorization headers (joined with a comma by every
      // platform; a bearer token has none) are refused before anything is read.
      if (request.headers.authorization?.includes(','))
        throw new ValidationError('Authorization', 'one bearer token (a single Authorization header)');
      // The token, then the user the request says it means (auth.ts): before anything is read.
      const userId = r.auth ? await authenticate(deps.auth, request) : null;
      // The lock is the authority over every token a write carries (docs/DESIGN.md, "The write path").
      const user = deps.store.forUser(userId, { authority: deps.lock });
      const body = r.body ? parseBody(request, r as Route & { body: z.ZodMiniType }) : undefined;
      const query = r.query ? parseQuery(request, r.query) : undefined;
      const headers = r.headers ? parseHeaders(request, r.headers) : undefined;
      return r.handle({ request, params, user, userId, deps, limit, body, query, headers });
    };
    try {
      response = await dispatch();
    } catch (caught) {
      const mapped = toProblem(caught, request.requestId);
      response = mapped.response;
      error = mapped.logged;
    }
    if (matched?.method === 'GET')
      response = await negotiated(method, request.headers['accept-encoding'], response);
    if (method === 'HEAD') {
      // The answer GET would give, without its body (whose length Content-Length still says).
      const { body, ...head } = response;
      const headers: Record<string, string> = { ...head.headers };
      if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
      response = { ...head, headers };
    }
    response = withCors(response, deps.cors, request);
    response = { ...response, headers: { ...response.headers, [REQUEST_ID]: request.requestId } };
    deps.onResponse?.({ request, route, response, error, ms: performance.now() - started });
    return response;
  };
}
