/** Answers that say what happened: `contended` when other writers keep winning; 404 for any unknown archive id. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectConditionFailedError } from '../../lib/drivers/errors.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import type { ObjectStoreDriver, PutOptions } from '../../lib/drivers/types.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { type ApiHarness, nodeHarness } from '../http/harness.js';

/** A memory driver on which, while `losing` matches, every conditional write loses its race. */
function alwaysLosing(inner: ObjectStoreDriver) {
  const state = { losing: undefined as RegExp | undefined, lost: 0 };
  const driver: ObjectStoreDriver = {
    ...inner,
    async put(key: string, body: Uint8Array | string, options?: PutOptions) {
      if (state.losing?.test(key) && (options?.ifMatch || options?.ifNoneMatch)) {
        state.lost++;
        throw new ObjectConditionFailedError(key, inner.name);
      }
      return inner.put(key, body, options);
    },
  };
  return { driver, state };
}

describe('answers that say what happened', () => {
  const { driver, state } = alwaysLosing(createMemoryDriver());
  let api: ApiHarness;
  beforeAll(async () => {
    api = await nodeHarness({ driver, lock: createMemoryLock() });
  });
  afterAll(() => api.close());

  it('an append that keeps losing to other writers is 409 contended with Retry-After, and wrote nothing', async () => {
    const path = '/v1/sessions/busy/lists/memory';
    const append = (items: unknown[], expectedCount: number) =>
      api.call('alice', 'POST', `${path}/items`, { body: JSON.stringify({ items, expectedCount }) });
    expect((await append([1], 0)).status).toBe(200);
    state.losing = /\.list(~|\.hash$)/;
    const lost = await append([2], 1);
    state.losing = undefined;
    expect(lost.status).toBe(409);
    expect(lost.headers['content-type']).toBe('application/problem+json');
    expect(lost.headers['retry-after']).toMatch(/^\d+$/);
    expect(lost.json()).toMatchObject({ code: 'contended', status: 409 });
    expect(state.lost).toBeGreaterThan(1);
    expect((await api.call('alice', 'GET', path)).json()).toMatchObject({ items: [1], count: 1 });
    // Once the others stop winning, the same append goes through.
    expect((await append([2], 1)).json()).toMatchObject({ action: 'appended', count: 2 });
  });

  it('a fenced save of a value that keeps losing its race is 409 contended, and wrote nothing', async () => {
    const path = '/v1/sessions/busy/state/plan';
    const { token } = (await api.call('alice', 'POST', '/v1/sessions/busy/lock', { body: '{}' })).json();
    const save = (body: string) =>
      api.call('alice', 'PUT', path, { body, headers: { 'fencing-token': String(token) } });
    expect((await save('{"v":1}')).status).toBe(200);
    state.losing = /plan\.json$/;
    const lost = await save('{"v":2}');
    state.losing = undefined;
    expect(lost.json()).toMatchObject({ code: 'contended' });
    expect(lost.headers['retry-after']).toBeDefined();
    expect((await api.call('alice', 'GET', path)).json()).toEqual({ v: 1 });
  });

  it('an archive id that names no archive is 404, whatever its form', async () => {
    const base = '/v1/sessions/archived/lists/notes';
    expect((await api.call('bob', 'PUT', base, { body: '[1,2,3]' })).status).toBe(200);
    expect((await api.call('bob', 'PUT', base, { body: '[9]' })).json()).toMatchObject({
      action: 'rewritten',
    });
    const { archives } = (await api.call('bob', 'GET', `${base}/archives`)).json();
    expect(archives).toHaveLength(1);
    expect((await api.call('bob', 'GET', `${base}/archives/${archives[0].archiveId}`)).json()).toMatchObject({
      items: [1, 2, 3],
    });
    for (const id of ['never-was', '999', '-1', 'x'.repeat(40), '12345678901234567890']) {
      const answer = await api.call('bob', 'GET', `${base}/archives/${id}`);
      expect(answer.status, id).toBe(404);
      expect(answer.json(), id).toMatchObject({ code: 'not-found' });
    }
  });
});
