/** Routes about the API itself: health, readiness, capabilities and the OpenAPI document (no identity needed). */
import { PATHS } from '../../protocol/paths.js';
import { schemas } from '../../protocol/schemas.js';
import { READY_CACHE_MS } from '../readiness.js';
import { json, route } from './route.js';

/** Seconds clients and caches may keep the capabilities: they change only with a deployment. */
export const CAPABILITIES_MAX_AGE_SECONDS = 300;

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
    pattern: PATHS.capabilities,
    operationId: 'getCapabilities',
    tag: 'meta',
    summary: "What the server's backend can do",
    description: `What this deployment's storage backend can do, derived from its driver: whether values carry versions, whether a save conditioned on a version is evaluated (\`conditionalOverwrite\`: false on OSS, where such a save is refused with 501 \`precondition-unsupported\`), ranges, presigned transfers, atomic commits. Clients read it once instead of assuming. It needs no identity, does not reach the backend, and may be cached for ${CAPABILITIES_MAX_AGE_SECONDS} s.`,
    auth: false,
    answers: { 200: schemas.Capabilities },
    handle: async (c) =>
      json(200, c.deps.store.capabilities, {
        'cache-control': `public, max-age=${CAPABILITIES_MAX_AGE_SECONDS}`,
      }),
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
