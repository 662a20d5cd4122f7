/**
 * The OpenAPI 3.1 document, generated from the route declarations (routes/) and the protocol's
 * schemas and problem table (committed as openapi.json; `npm run openapi` writes it). Each route
 * gives its operation id, tag, summary and description; its answers give their bodies and headers;
 * every problem code it may answer (routes/route.ts `problemsOf`) is listed under its status, in the
 * response's description and as `x-problem-codes`. Every answer documents `X-Request-Id`. Error
 * responses that several operations share are put once in `components.responses`.
 */
import * as z from 'zod/mini';
import { PLAIN_ID } from '../contract/ids.js';
import { type PathParam, patternSegments } from '../protocol/paths.js';
import { PROBLEMS, type ProblemCode } from '../protocol/problems.js';
import {
  HEADER_NAMES,
  type HeaderKey,
  REQUEST_ID_HEADER,
  REVISION_HEADER,
  schemaName,
  schemas,
} from '../protocol/schemas.js';
import { COMPRESS_MIN_BYTES } from './compression.js';
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS, CORS_METHODS } from './cors.js';
import { ROUTES } from './router.js';
import { type AnswerHeader, type AnswerSpec, problemsOf, type Route, TAGS } from './routes/index.js';

/** What each problem code means, as the document explains it (its members, what to do). */
const PROBLEM_NOTES: Record<ProblemCode, string> = {
  'invalid-request':
    "a path parameter, query parameter, header or body is malformed; `field` names it (a truncate that asks to keep more items than the list has: `field` `count`, with `count` asked and `currentCount`, the list's)",
  unauthorized: 'no valid bearer token',
  'user-mismatch':
    "`Agent-State-User` names another user than the bearer token's (or any user, for an anonymous caller); nothing was read or written. The answer names neither user",
  'not-found': 'no such resource',
  'method-not-allowed': 'the path takes other methods, which `Allow` lists',
  'append-conflict':
    'the list does not have `expectedCount` items (or not `expectedHash`): `count` and `hash` are what it has; nothing was written',
  fenced:
    'the Fencing-Token is stale (a newer one has been seen) or not granted (the lock holds no live lease with it); nothing was written',
  'lock-held':
    'another owner holds the lock: `holder`, `expiresAt`; Retry-After is the seconds left of its lease',
  'lock-lost': 'the lease named is not held any more',
  'precondition-failed':
    'the condition does not hold: `currentEtag` (a value; null when there is none) or `currentHash` (a list); of a commit, `commitId` and `failures` (each failing key); nothing was written',
  'commit-conflict':
    'a list of the commit does not have its expected count: `commitId` and `failures` (each failing key with its current `currentVersion`, or `count` and `hash`, and the `reason`); nothing was written',
  'commit-partial':
    'a commit without a lease found a condition failing at write time: `applied` keys were written, `failed` were not; retry with the same `commitId` after reading the failed keys',
  'commit-mismatch':
    'the `commitId` was applied to `key` (`kind` `value` or `list`) with another body, or recorded with another body (`kind` `commit`); nothing was written',
  'reference-id-unsupported':
    'the session was written by the AgentScope reference under a user or session segment this store does not write (adoption on); nothing was written: `npm run adopt` rewrites it',
  'idempotency-key-reused':
    'the Idempotency-Key names another request to this list (other items, count or hash); nothing was written: send a new key with a new request',
  'payload-too-large': 'the request body is over `limit` bytes',
  'precondition-unsupported': 'the backend cannot evaluate this condition; nothing was written',
  'backend-unavailable': 'the storage backend is unavailable; retry after Retry-After',
  'backend-misconfigured':
    "the deployment's bucket or lock table is missing or refuses the service's credentials, or the backend refuses the credentials (the server's log names which, and as whom); no Retry-After: retrying does not help until the deployment is fixed",
  'backend-unsafe':
    'the backend failed the write-condition probe, so the server makes no write; retrying does not help',
  contended: 'other writers kept winning; nothing was written; retry after Retry-After',
  'upload-mismatch': 'what the object store received does not have the declared sizes or digests',
  unsupported: 'the backend cannot presign direct transfers',
  internal: 'an unexpected error: `requestId` (and `corruptKey` when a stored value is corrupt)',
};

/** API Gateway's own answers (`{"message": ...}`, no X-Request-Id), and whether only routes with `auth` get it. */
const GATEWAY_ANSWERS: Record<number, { readonly text: string; readonly auth?: true }> = {
  401: { text: 'the JWT authorizer refused the token', auth: true },
  413: { text: 'the request is over 10 MB' },
  429: { text: 'throttled' },
  503: { text: 'the integration is unavailable' },
  504: { text: 'the integration timed out after 30 s' },
};

/** What a declared answer means when its route does not say. */
const ANSWER_DESCRIPTIONS: Record<number, string> = {
  200: 'OK',
  201: 'created',
  202: 'accepted: ask again after Retry-After',
  204: 'done (no body)',
  303: 'see Location',
  304: 'not modified: If-None-Match names the current version (no body)',
  404: 'not found',
};

/** The problem codes whose answers carry Retry-After. */
const RETRY_AFTER_CODES = Object.entries(PROBLEMS)
  .filter(([, spec]) => 'retryAfter' in spec)
  .map(([code]) => `\`${code}\``)
  .join(', ');

/** The reusable answer headers (components.headers), by name. */
const HEADERS: Record<AnswerHeader | typeof REQUEST_ID_HEADER | 'Allow', Record<string, unknown>> = {
  [REQUEST_ID_HEADER]: {
    description:
      "The request's id: the `X-Request-Id` the client sent, when it is 1 to 128 visible ASCII characters (0x21-0x7E), otherwise one the server generates (the platform's own id is logged beside it). Every answer the router makes carries it (an `internal` problem repeats it as `requestId`), and the client's typed errors carry it: quote it when you report a problem.",
    schema: { type: 'string' },
  },
  ETag: {
    description:
      'The version as a strong entity tag: `"<etag>"` of a value (send it back as If-Match to save over exactly that version), or `"<hash>"` of a list (its chain hash, for If-Match on a read or a whole-list save). Send it as If-None-Match on a read to be answered 304 while it is current. A compressed answer keeps it: it names the version, not the bytes.',
    schema: { type: 'string' },
  },
  [REVISION_HEADER]: {
    description:
      "A value's revision: 1 when it was created, +1 on every write since (identical content included); a deleted value written again starts at 1. Send it back as `If-Revision` to save over exactly that revision (not on OSS, which cannot evaluate it).",
    schema: { type: 'integer', minimum: 1 },
  },
  Location: {
    description:
      'A presigned URL to read the value straight from the object store (also `download.url` in the body).',
    schema: { type: 'string', format: 'uri' },
  },
  'Retry-After': {
    description: `Seconds to wait before asking again: on a 202 (a restore in progress) and on the problems ${RETRY_AFTER_CODES}.`,
    schema: { type: 'integer', minimum: 0 },
  },
  Allow: {
    description:
      'The methods the path takes, comma-separated. The local server also answers `OPTIONS *` with 204 and every method of the API in Allow.',
    schema: { type: 'string' },
  },
};

/** What every route does alike (lib/http/cors.ts, compression.ts, the router), for the document's description. */
const HTTP_CONVENTIONS = [
  '**HTTP conventions.**',
  `- CORS: with \`CORS_ORIGINS\` set (exact origins, or \`*\`; off by default), a preflight (\`OPTIONS\` with \`Origin\` and \`Access-Control-Request-Method\`) from an allowed origin is answered 204 with \`Access-Control-Allow-Origin\` (the origin, with \`Vary: Origin\`), \`Access-Control-Allow-Methods: ${CORS_METHODS.join(', ')}\`, \`Access-Control-Allow-Headers: ${CORS_ALLOWED_HEADERS.join(', ')}\` and \`Access-Control-Max-Age: ${CORS_MAX_AGE_SECONDS}\`; the answers to an allowed origin carry \`Access-Control-Allow-Origin\` and \`Access-Control-Expose-Headers: ${CORS_EXPOSED_HEADERS.join(', ')}\`. Another origin gets no CORS headers, and OPTIONS is then answered as an unknown method (405). On AWS, API Gateway answers preflights itself from the same settings; on Function Compute, the HTTP trigger's JWT check refuses preflights (they carry no token).`,
  `- Compression: a GET answer (2xx) of more than ${COMPRESS_MIN_BYTES} bytes is compressed when \`Accept-Encoding\` accepts \`br\` or \`gzip\` (q-values honoured; \`br\` when both are equally acceptable), with \`Content-Encoding\`; the ETag is unchanged. Every answer of a GET operation carries \`Vary: Accept-Encoding\`. 204, 304 and HEAD answers are never compressed.`,
  '- Conditional reads: `If-None-Match` on getValue and getList (and their HEAD) answers 304 without a body, with the ETag, while it names the current version (weak comparison; `*` matches any current version). A list\'s ETag is `"<hash>"` whatever page was read.',
  "- HEAD on a value (headValue): what GET answers, without the body, with the body's Content-Length.",
].join('\n');

/** The JSON Schema of a zod schema, as the document embeds it (without `$schema` or `$id`). */
const jsonSchema = (schema: z.core.$ZodType, io: 'input' | 'output' = 'output') => {
  const {
    $schema: _,
    $id: __,
    ...rest
  } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    unrepresentable: 'any',
    io,
  });
  return rest as Record<string, unknown>;
};

/** The parameters of a route's query or headers schema (a parameter's description is lifted out of its schema). */
function parametersOf(
  shape: Readonly<Record<string, z.core.$ZodType>> | undefined,
  where: 'query' | 'header',
) {
  return Object.entries(shape ?? {}).map(([key, schema]) => {
    const { description, ...rest } = jsonSchema(schema, 'input');
    return {
      name: where === 'header' ? HEADER_NAMES[key as HeaderKey] : key,
      in: where,
      ...(z.safeParse(schema, undefined).success ? {} : { required: true }),
      schema: rest,
      ...(description ? { description } : {}),
    };
  });
}

/** The path parameters of a pattern. */
const pathParameters = (pattern: string) =>
  patternSegments(pattern).flatMap((segment) =>
    'param' in segment
      ? [
          {
            name: segment.param,
            in: 'path',
            required: true,
            schema: { type: 'string' },
            description: ISSUED_IDS[segment.param] ?? ENCODED_ID,
          },
        ]
      : [],
  );

/** How an id in a path is written (see lib/protocol/url-ids.ts). */
const ENCODED_ID = `the id itself when it matches ${PLAIN_ID.source} (not . or ..), else ~ + unpadded base64url of its UTF-8`;
/** The path parameters that are not encoded ids but ids the API issued. */
const ISSUED_IDS: Partial<Record<PathParam, string>> = {
  archiveId: 'decimal archive id, as listed; an id that names no archive, whatever its form, is 404',
  uploadId: 'the `uploadId` the upload was started with',
};

/**
 * The request header every operation that needs an identity takes (a shared parameter): the user
 * the client means, checked against the token's by the authentication step (lib/http/auth.ts).
 */
const USER_PARAMETER = {
  name: HEADER_NAMES.user,
  in: 'header',
  required: false,
  schema: { type: 'string' },
  description: `the user the client means, in the URL id form (${ENCODED_ID}); checked after the token (401 first): not a valid id form is 400 \`invalid-request\`, another user than the token's is 403 \`user-mismatch\`, nothing read or written; without it, the token's user`,
};

/** The `$ref` of a component. */
const ref = (kind: 'schemas' | 'headers', name: string) => ({ $ref: `#/components/${kind}/${name}` });

/** A body schema's `$ref`. */
const bodyRef = (schema: z.core.$ZodType) => {
  const name = schemaName(schema);
  if (!name) throw new Error('a route declares a body schema that is not a named component');
  return ref('schemas', name);
};

const PROBLEM_CONTENT = { 'application/problem+json': { schema: ref('schemas', 'Problem') } };

/** One response of an operation, as it is put together from answers, problems and gateway answers. */
interface Response {
  readonly description: string[];
  readonly content: Record<string, unknown>;
  readonly headers: Set<string>;
  readonly codes: ProblemCode[];
  /** Whether the router makes answers of this status (then they carry X-Request-Id). */
  router: boolean;
}

/** The responses of a route, by status, then `default`. */
function responsesOf(route: Route): Record<string, unknown> {
  const byStatus = new Map<number, Response>();
  const at = (status: number) => {
    let r = byStatus.get(status);
    if (!r) {
      r = { description: [], content: {}, headers: new Set(), codes: [], router: false };
      byStatus.set(status, r);
    }
    return r;
  };
  for (const [status, declared] of Object.entries(route.answers)) {
    const spec: AnswerSpec = declared && 'body' in declared ? declared : { body: declared };
    const r = at(Number(status));
    r.router = true;
    r.description.push(spec.description ?? ANSWER_DESCRIPTIONS[Number(status)] ?? 'answer');
    if (spec.body) r.content['application/json'] = { schema: bodyRef(spec.body) };
    for (const header of spec.headers ?? []) r.headers.add(header);
  }
  for (const code of problemsOf(route)) {
    const spec: { status: number; retryAfter?: true } = PROBLEMS[code];
    const r = at(spec.status);
    r.router = true;
    r.codes.push(code);
    Object.assign(r.content, PROBLEM_CONTENT);
    if (spec.retryAfter) r.headers.add('Retry-After');
    if (code === 'method-not-allowed') r.headers.add('Allow');
  }
  for (const r of byStatus.values()) {
    if (r.codes.length === 0) continue;
    const lines = r.codes.map((c) => `- \`${c}\`: ${PROBLEM_NOTES[c]}`);
    r.description.push(`RFC 9457 problem (application/problem+json) with \`code\`:\n\n${lines.join('\n')}`);
  }
  for (const [status, gateway] of Object.entries(GATEWAY_ANSWERS)) {
    if (gateway.auth && !route.auth) continue;
    const r = at(Number(status));
    r.description.push(`API Gateway: ${gateway.text} (\`{"message": ...}\`, without X-Request-Id)`);
    r.content['application/json'] = { schema: ref('schemas', 'GatewayError') };
  }
  const responses: Record<string, unknown> = {};
  for (const [status, r] of [...byStatus].sort(([a], [b]) => a - b)) {
    const headers: Record<string, unknown> = {};
    if (r.router) headers[REQUEST_ID_HEADER] = ref('headers', REQUEST_ID_HEADER);
    for (const name of r.headers) headers[name] = ref('headers', name);
    responses[status] = {
      description: r.description.join('\n\n'),
      ...(Object.keys(headers).length ? { headers } : {}),
      // A HEAD answer has no body.
      ...(route.method !== 'HEAD' && Object.keys(r.content).length ? { content: r.content } : {}),
      ...(r.codes.length ? { 'x-problem-codes': r.codes } : {}),
    };
  }
  responses.default = {
    description: 'Any other RFC 9457 problem (for example a 408 or 431 of the HTTP server)',
    headers: { [REQUEST_ID_HEADER]: ref('headers', REQUEST_ID_HEADER) },
    ...(route.method !== 'HEAD' ? { content: PROBLEM_CONTENT } : {}),
  };
  return responses;
}

/** An operation of the document. */
type Operation = Record<string, unknown> & { responses: Record<string, unknown> };

/** The operation of a route. */
function operationOf(route: Route): Operation {
  return {
    operationId: route.operationId,
    tags: [route.tag],
    summary: route.summary,
    description: route.description,
    ...(route.auth ? {} : { security: [] }),
    parameters: [
      ...pathParameters(route.pattern),
      ...(route.auth ? [{ $ref: '#/components/parameters/AgentStateUser' }] : []),
      ...parametersOf(route.query?.shape, 'query'),
      ...parametersOf(route.headers?.shape, 'header'),
    ],
    ...(route.body
      ? {
          requestBody: {
            required: route.emptyBody === undefined,
            content: { 'application/json': { schema: bodyRef(route.body) } },
          },
        }
      : {}),
    responses: responsesOf(route),
  };
}

/** `fenced` → `Fenced`, `backend-unavailable` → `BackendUnavailable`. */
const pascal = (code: string) => code.replace(/(?:^|-)(.)/g, (_, c: string) => c.toUpperCase());

/**
 * Moves the error responses that several operations share (the same status, codes and headers)
 * into `components.responses`, named by their problem codes, and refers to them.
 */
function shareResponses(operations: readonly Operation[]) {
  const shared = (status: string) => status === 'default' || /^[45]/.test(status);
  const uses = new Map<string, number>();
  for (const { responses } of operations)
    for (const [status, response] of Object.entries(responses)) {
      const key = JSON.stringify(response);
      if (shared(status)) uses.set(key, (uses.get(key) ?? 0) + 1);
    }
  const names = new Map<string, string>();
  const components: Record<string, unknown> = {};
  for (const { responses } of operations)
    for (const [status, response] of Object.entries(responses)) {
      const key = JSON.stringify(response);
      if (!shared(status) || (uses.get(key) ?? 0) < 2) continue;
      let name = names.get(key);
      if (!name) {
        const codes = (response as { 'x-problem-codes'?: string[] })['x-problem-codes'] ?? [];
        const kind =
          status === 'default'
            ? 'OtherProblem'
            : codes.length
              ? codes.map(pascal).join('Or')
              : `Gateway${status}`;
        // Only HEAD operations' error responses have no content.
        const base = 'content' in (response as object) ? kind : `${kind}OfHead`;
        name = base;
        for (let n = 2; name in components; n++) name = `${base}${n}`;
        names.set(key, name);
        components[name] = response;
      }
      responses[status] = { $ref: `#/components/responses/${name}` };
    }
  return components;
}

/** The table of problem codes, for the document's description. */
const problemTable = () =>
  [
    '| code | status | meaning |',
    '| --- | --- | --- |',
    ...Object.entries(PROBLEMS).map(
      ([code, spec]) => `| \`${code}\` | ${spec.status} | ${PROBLEM_NOTES[code as ProblemCode]} |`,
    ),
  ].join('\n');

/** Builds the document. */
export function openApiDocument(): Record<string, unknown> {
  const componentSchemas: Record<string, unknown> = Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [name, jsonSchema(schema)]),
  );
  componentSchemas.Problem = {
    description: 'An RFC 9457 problem; `code` is stable, the other members depend on it.',
    ...(componentSchemas.Problem as object),
  };
  componentSchemas.GatewayError = {
    description: "API Gateway's own answer (it carries no X-Request-Id)",
    type: 'object',
    properties: { message: { type: 'string' } },
    required: ['message'],
  };
  const paths: Record<string, Record<string, unknown>> = {};
  const operations: Operation[] = [];
  const ids = new Set<string>();
  for (const route of ROUTES) {
    paths[route.pattern] ??= {};
    // A GET route that answers HEAD too has a HEAD operation of its own: the same answers, no bodies.
    const heads = route.head ? [{ ...route, ...route.head, method: 'HEAD' as const }] : [];
    for (const r of [route, ...heads]) {
      if (ids.has(r.operationId)) throw new Error(`operationId ${r.operationId} is declared twice`);
      ids.add(r.operationId);
      const operation = operationOf(r);
      operations.push(operation);
      (paths[route.pattern] as Record<string, unknown>)[r.method.toLowerCase()] = operation;
    }
  }
  const responses = shareResponses(operations);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent state store',
      version: '1.0.0',
      description: [
        'Agent state (single values, append-only lists with archives, workspaces, session locks with fencing tokens) on S3 or OSS. Every route but health and this document needs a bearer token; each caller sees only its own sessions.',
        `Every answer the router makes carries \`${REQUEST_ID_HEADER}\`. Errors are RFC 9457 problem documents (\`application/problem+json\`) with a stable \`code\`; each operation lists the codes it may answer, under their status (and as \`x-problem-codes\`):`,
        problemTable(),
        'The local server also answers `OPTIONS *` with 204 and `Allow`: every method of the API.',
        HTTP_CONVENTIONS,
      ].join('\n\n'),
    },
    servers: [{ url: 'http://127.0.0.1:8787', description: 'the local server (npm start)' }],
    security: [{ bearer: [] }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      schemas: componentSchemas,
      responses,
      parameters: { AgentStateUser: USER_PARAMETER },
      headers: HEADERS,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    },
  };
}
