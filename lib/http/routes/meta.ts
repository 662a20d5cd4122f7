/** Routes about the API itself: health and the OpenAPI document (no identity needed). */
import { PATHS } from '../../protocol/paths.js';
import { schemas } from '../../protocol/schemas.js';
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
