/** Routes about the API itself: health and the OpenAPI document (no identity needed). */
import { PATHS } from '../../protocol/paths.js';
import { schemas } from '../../protocol/schemas.js';
import { json, route } from './route.js';

export const META_ROUTES = [
  route({
    method: 'GET',
    pattern: PATHS.health,
    summary: 'Health check',
    auth: false,
    answers: { 200: schemas.Health },
    handle: async () => json(200, { status: 'ok' }),
  }),
  route({
    method: 'GET',
    pattern: PATHS.openapi,
    summary: 'This OpenAPI 3.1 document',
    auth: false,
    answers: { 200: null },
    handle: async (c) => json(200, c.deps.openapi?.() ?? {}),
  }),
];
