/** The OpenAPI 3.1 document, generated from the route table and the zod schemas (committed as openapi.json). */
import * as z from 'zod';
import { ROUTES } from './router.js';
import { schemas } from './schemas.js';

const GATEWAY_ERRORS = {
  '401': 'API Gateway JWT authorizer: {"message":"Unauthorized"}',
  '413': 'API Gateway: payload over 10 MB ({"message":"Request Entity Too Large"})',
  '429': 'API Gateway throttling ({"message":"Too Many Requests"})',
  '503':
    'RFC 9457 problem `backend-unavailable` (Retry-After) or, for a write, `backend-unsafe`; or API Gateway: {"message":"Service Unavailable"}',
  '504': 'API Gateway: integration timeout after 30 s ({"message":"Endpoint request timed out"})',
};

const PARAMS: Record<string, { in: 'query' | 'header'; schema: unknown; description: string }> = {
  limit: { in: 'query', schema: { type: 'integer', minimum: 0 }, description: 'page size' },
  offset: { in: 'query', schema: { type: 'integer', minimum: 0 }, description: 'first item' },
  cursor: { in: 'query', schema: { type: 'string' }, description: 'nextCursor of the previous page' },
  all: { in: 'query', schema: { type: 'string', enum: ['true'] }, description: 'must be true' },
  'If-Match': {
    in: 'header',
    schema: { type: 'string' },
    description: 'a quoted entity tag: "<etag>" or "<hash>"',
  },
  'If-None-Match': { in: 'header', schema: { type: 'string', enum: ['*'] }, description: 'create only' },
  'Fencing-Token': {
    in: 'header',
    schema: { type: 'string', pattern: '^[0-9]{1,16}$' },
    description: 'the lease token',
  },
  'Lock-Owner': {
    in: 'header',
    schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
    description: 'lease owner',
  },
};

/** Builds the document. */
export function openApiDocument(): Record<string, unknown> {
  const components = Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [
      name,
      z.toJSONSchema(schema, { target: 'draft-2020-12', unrepresentable: 'any' }),
    ]),
  );
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    const pathParams = [...route.pattern.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
      description:
        m[1] === 'archiveId'
          ? 'decimal archive id, as listed; an id that names no archive, whatever its form, is 404'
          : 'the id itself when made of [A-Za-z0-9._-] (not . or ..), else ~ + unpadded base64url of its UTF-8',
    }));
    const others = [...(route.query ?? []), ...(route.headers ?? [])].map((name) => ({
      name,
      ...PARAMS[name],
    }));
    const responses: Record<string, unknown> = {};
    for (const [status, schema] of Object.entries(route.answers)) {
      responses[status] = {
        description: status.startsWith('2') ? 'success' : 'RFC 9457 problem',
        ...(schema
          ? {
              content: {
                [schema === 'Problem' ? 'application/problem+json' : 'application/json']: {
                  schema: { $ref: `#/components/schemas/${schema}` },
                },
              },
            }
          : {}),
      };
    }
    const problemContent = {
      'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
    };
    if (route.auth && route.method !== 'GET' && route.method !== 'HEAD') {
      const contended = '`contended`: other writers kept winning; nothing was written; Retry-After';
      const known = responses['409'] as { description: string } | undefined;
      responses['409'] = {
        description: known ? `${known.description}; ${contended}` : `RFC 9457 problem ${contended}`,
        content: problemContent,
      };
    }
    responses.default = {
      description: 'RFC 9457 problem; `code` is one of the stable codes',
      content: problemContent,
    };
    if (route.auth)
      for (const [status, description] of Object.entries(GATEWAY_ERRORS))
        responses[status] ??= { description };
    paths[route.pattern] ??= {};
    (paths[route.pattern] as Record<string, unknown>)[route.method.toLowerCase()] = {
      summary: route.summary,
      operationId: `${route.method.toLowerCase()}${route.pattern.replace(/[^A-Za-z]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
      ...(route.auth ? {} : { security: [] }),
      parameters: [...pathParams, ...others],
      ...(route.body
        ? {
            requestBody: {
              required: route.body !== 'LockRequest' && route.body !== 'RenewRequest',
              content: { 'application/json': { schema: { $ref: `#/components/schemas/${route.body}` } } },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent state store',
      version: '1.0.0',
      description:
        'Agent state (single values, append-only lists with archives, session locks with fencing tokens) on S3 or OSS. Errors are RFC 9457 problem documents with a stable `code`.',
    },
    servers: [{ url: 'http://127.0.0.1:8787' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas: components,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    },
  };
}
