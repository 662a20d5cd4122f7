/** Routes about the API itself: health, readiness and the OpenAPI document (no identity needed). */
import { PATHS } from '../../protocol/paths.js';
import { schemas } from '../../protocol/schemas.js';
import { READY_CACHE_MS } from '../readiness.js';
import { json, route } from './route.js';

export const META_ROUTES = [
  route({
    method: 'GET',
    pattern: PATHS.health,
    operationId: 'getHealth',
    tag: 'meta',
    summary: 'Health check',
    description:
      'Answers `{"status":"ok"}` when the function runs. It needs no identity and does not reach the backend.',
    auth: false,
    answers: { 200: schemas.Health },
    handle: async () => json(200, { status: 'ok' }),
  }),
  route({
    method: 'GET',
    pattern: PATHS.ready,
    operationId: 'getReady',
    tag: 'meta',
    summary: 'Readiness: the store and the lock can be reached',
    description: `Answers \`{"status":"ok"}\` when the function can reach its storage (one GET of a fixed name) and its lock (one DescribeTable on DynamoDB), with its own credentials; a 503 problem naming the failing \`dependency\` (\`store\` or \`lock\`) otherwise: \`backend-misconfigured\` for a missing bucket or table or refused credentials (no Retry-After: retrying does not help), \`backend-unavailable\` with Retry-After for anything transient. One check per function instance per ${READY_CACHE_MS / 1000} s answers every request meanwhile, failures too. It needs no identity.`,
    auth: false,
    answers: { 200: schemas.Ready },
    handle: async (c) => {
      await c.deps.ready?.();
      return json(200, { status: 'ok' });
    },
  }),
  route({
    method: 'GET',
    pattern: PATHS.openapi,
    operationId: 'getOpenApi',
    tag: 'meta',
    summary: 'This OpenAPI 3.1 document',
    description:
      'This document, generated from the route declarations (the repository commits it as `openapi.json`). It needs no identity.',
    auth: false,
    answers: { 200: { body: null, description: 'the OpenAPI 3.1 document (application/json)' } },
    handle: async (c) => json(200, c.deps.openapi?.() ?? {}),
  }),
];
