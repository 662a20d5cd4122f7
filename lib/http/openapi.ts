/** The OpenAPI 3.1 document, generated from the route table and the zod schemas (committed as openapi.json). */
import * as z from 'zod';
import { PROBLEMS, type ProblemCode } from '../protocol/problems.js';
import { HEADER_NAMES, type HeaderKey, schemaName, schemas } from '../protocol/schemas.js';
import { PLAIN_ID } from '../store/ids.js';
import { ROUTES } from './router.js';

const GATEWAY_ERRORS = {
  '401': 'API Gateway JWT authorizer: {"message":"Unauthorized"}',
  '413': 'API Gateway: payload over 10 MB ({"message":"Request Entity Too Large"})',
  '429': 'API Gateway throttling ({"message":"Too Many Requests"})',
  '503':
    'RFC 9457 problem `backend-unavailable` (Retry-After) or, for a write, `backend-unsafe`; or API Gateway: {"message":"Service Unavailable"}',
  '504': 'API Gateway: integration timeout after 30 s ({"message":"Endpoint request timed out"})',
};

/** The JSON Schema of a zod schema, as the document embeds it. */
const jsonSchema = (schema: z.core.$ZodType, io: 'input' | 'output' = 'output') => {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, {
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

/** The `$ref` of a body schema. */
const ref = (schema: z.core.$ZodType) => ({ $ref: `#/components/schemas/${schemaName(schema) ?? 'Value'}` });

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
          : `the id itself when it matches ${PLAIN_ID.source} (not . or ..), else ~ + unpadded base64url of its UTF-8`,
    }));
    const others = [
      ...parametersOf(route.query?.shape, 'query'),
      ...parametersOf(route.headers?.shape, 'header'),
    ];
    const responses: Record<string, unknown> = {};
    for (const [status, schema] of Object.entries(route.answers)) {
      responses[status] = {
        description: status.startsWith('2')
          ? 'success'
          : status === '303'
            ? 'too large for an answer: read it from the URL in Location'
            : 'not found',
        ...(schema ? { content: { 'application/json': { schema: ref(schema) } } } : {}),
      };
    }
    const problemContent = {
      'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
    };
    const byStatus = new Map<number, ProblemCode[]>();
    for (const code of route.problems ?? []) {
      const status = PROBLEMS[code].status;
      byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
    }
    for (const [status, codes] of byStatus) {
      responses[status] = {
        description: `RFC 9457 problem ${codes.map((c) => `\`${c}\``).join(', ')}`,
        content: problemContent,
      };
    }
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
              required: route.emptyBody === undefined,
              content: { 'application/json': { schema: ref(route.body) } },
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
