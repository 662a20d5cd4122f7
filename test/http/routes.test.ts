/**
 * The route contract (routes-suite.ts), through each adapter: local node:http, API Gateway v2
 * events, FC 3 events, on memory; then local bearer tokens and the committed OpenAPI document.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { openApiDocument } from '../../lib/http/openapi.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { API_REFERENCE_FILE, apiReferenceBlock, withApiReference } from '../../scripts/api-reference.js';
import { contractHarnesses, hsToken, memoryBackend, nodeHarness, SECRET } from './harness.js';
import { routesSuite } from './routes-suite.js';

for (const h of contractHarnesses(memoryBackend)) routesSuite(h);

describe('local bearer tokens', () => {
  it('refuses invalid, expired, unsigned and wrongly signed tokens', async () => {
    const api = await nodeHarness({ driver: createMemoryDriver(), lock: createMemoryLock() });
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"sub":"alice"}').toString('base64url')}.`;
    for (const authorization of [
      'Bearer not.a.jwt',
      `Bearer ${await hsToken({ sub: 'alice' }, '-1s')}`,
      `Bearer ${none}`,
      `Bearer ${await hsToken({ sub: 'alice' }, '1h', `${SECRET}-other`)}`,
      `Bearer ${await hsToken({ sub: '' })}`,
      `Bearer ${await hsToken({ name: 'no sub' })}`,
      'Basic YWxpY2U6cHc=',
    ]) {
      const res = await api.call('alice', 'GET', '/v1/sessions', { authorization });
      expect(res.status).toBe(401);
      expect(res.json().code).toBe('unauthorized');
    }
    await api.close();
  });
});

describe('OpenAPI document', () => {
  it('the committed openapi.json is the one the code generates (npm run openapi)', async () => {
    const committed = JSON.parse(await readFile(new URL('../../openapi.json', import.meta.url), 'utf8'));
    expect(committed).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
  });

  it('docs/http-api.md holds the route index and problem codes they generate (npm run openapi)', async () => {
    const page = await readFile(new URL(`../../${API_REFERENCE_FILE}`, import.meta.url), 'utf8');
    expect(page).toContain(apiReferenceBlock());
    // Every operation has its row: the check would fail on a page missing one.
    const operations = Object.values(openApiDocument().paths ?? {}).flatMap((item) =>
      Object.values(item as Record<string, { operationId?: string }>).filter((op) => op?.operationId),
    );
    expect(operations.length).toBeGreaterThan(20);
    for (const op of operations) expect(page).toContain(`\`${op.operationId}\``);
    expect(() => withApiReference('no markers')).toThrow(/markers/);
  });
});
