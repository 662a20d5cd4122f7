/**
 * A conditional save (If-None-Match: *, If-Match) whose answer is lost after the server applied it
 * is sent again and meets its own write (412): the client reads the value back, and when it is the
 * value it sent, the save succeeded; a value someone else wrote is still a failed precondition.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PreconditionFailedError } from '../../lib/contract/errors.js';
import { localApi } from './helpers.js';

type Api = Awaited<ReturnType<typeof localApi>>;

/** A fetch to the real server that loses the answer of the first PUT, after the server applied it. */
function losingFirstPut() {
  let puts = 0;
  const statuses: number[] = [];
  const wrapped: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if ((init?.method ?? 'GET') !== 'PUT') return response;
    statuses.push(response.status);
    if (++puts === 1) {
      await response.arrayBuffer();
      throw new TypeError('fetch failed', { cause: new Error('socket hang up') });
    }
    return response;
  };
  return { statuses, fetch: wrapped };
}

describe('typed client: a conditional save whose answer was lost', () => {
  let api: Api;
  beforeAll(async () => {
    api = await localApi();
  });
  afterAll(() => api.close());

  it('create-only: the retry meets its own value (412) and reports the save done', async () => {
    const wire = losingFirstPut();
    const alice = api.client({ fetch: wire.fetch });
    const saved = await alice.save('cond-1', 'plan', { step: 1 }, { ifAbsent: true });
    expect(wire.statuses).toEqual([200, 412]);
    expect(saved.version).toBe((await api.store.getVersioned('cond-1', 'plan'))?.version);
  });

  it('If-Match: the same, from the version it replaced', async () => {
    const { version } = await api.store.save('cond-2', 'plan', { step: 1 });
    const wire = losingFirstPut();
    const saved = await api
      .client({ fetch: wire.fetch })
      .save('cond-2', 'plan', { step: 2 }, { ifVersion: version });
    expect(wire.statuses).toEqual([200, 412]);
    expect(await api.store.getVersioned('cond-2', 'plan')).toEqual({
      value: { step: 2 },
      version: saved.version,
      revision: 2,
    });
    expect(saved.revision).toBe(2);
  });

  it('a value someone else wrote is still a failed precondition', async () => {
    await api.store.save('cond-3', 'plan', { theirs: true });
    const wire = losingFirstPut();
    const error = await api
      .client({ fetch: wire.fetch })
      .save('cond-3', 'plan', { mine: true }, { ifAbsent: true })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PreconditionFailedError);
    expect(wire.statuses).toEqual([412, 412]);
  });
});
