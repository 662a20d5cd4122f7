/**
 * The typed client's revisions (docs/DESIGN.md, "Revisions"), against the local server: a save
 * answers the new revision, `getVersioned` and `listKeys` read it, `ifRevision` goes on the wire as
 * `If-Revision` and a stale one is `PreconditionFailedError` with `currentRevision`; a turn sends
 * the snapshot's revision beside the version it saw (`seenRevision`), so its commit writes the
 * next revision without reading the value, and an `ifRevision` of the turn is the commit's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommitPreconditionError, PreconditionFailedError } from '../../lib/contract/errors.js';
import { localApi } from './helpers.js';

type Api = Awaited<ReturnType<typeof localApi>>;

/** A fetch that records each request's method, path, If-Revision and body. */
function recording() {
  const sent: Array<{ method: string; path: string; ifRevision: string | null; body: unknown }> = [];
  const wrapped: typeof fetch = async (input, init) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const headers = new Headers(init?.headers);
    sent.push({
      method: init?.method ?? 'GET',
      path: url.pathname,
      ifRevision: headers.get('if-revision'),
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
    });
    return fetch(input, init);
  };
  return { sent, fetch: wrapped };
}

describe('typed client: revisions', () => {
  let api: Api;
  beforeAll(async () => {
    api = await localApi();
  });
  afterAll(() => api.close());

  it('saves answer the revision, reads carry it, ifRevision is If-Revision, a stale one names the current', async () => {
    const wire = recording();
    const alice = api.client({ fetch: wire.fetch });
    expect((await alice.save('rev-1', 'plan', 'A')).revision).toBe(1);
    expect((await alice.save('rev-1', 'plan', 'A')).revision).toBe(2);
    expect(await alice.getVersioned('rev-1', 'plan')).toMatchObject({ value: 'A', revision: 2 });
    expect((await alice.save('rev-1', 'plan', 'B', { ifRevision: 2 })).revision).toBe(3);
    expect(wire.sent.filter((r) => r.method === 'PUT').map((r) => r.ifRevision)).toEqual([null, null, '2']);
    const stale = await alice.save('rev-1', 'plan', 'C', { ifRevision: 2 }).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(PreconditionFailedError);
    expect((stale as PreconditionFailedError).currentRevision).toBe(3);
    expect((await alice.listKeys('rev-1')).values).toEqual([
      expect.objectContaining({ key: 'plan', revision: 3 }),
    ]);
    expect(await alice.get('rev-1', 'plan')).toBe('B');
  });

  it('a turn sends the revision it read beside the version; its ifRevision is the commit precondition', async () => {
    const wire = recording();
    const alice = api.client({ fetch: wire.fetch });
    await alice.save('rev-2', 'plan', 'A');
    const turn = await alice.beginTurn('rev-2', { leaseMs: 5000, values: ['plan'] });
    const result = await turn.save('plan', 'B').commit({ release: true });
    expect(result.values).toEqual([{ key: 'plan', etag: expect.any(String), revision: 2 }]);
    const sent = wire.sent.find((r) => r.path.endsWith('/commits'))?.body as {
      values: Array<Record<string, unknown>>;
    };
    expect(sent.values[0]).toMatchObject({ key: 'plan', seenVersion: expect.any(String), seenRevision: 1 });
    const next = await alice.beginTurn('rev-2', { leaseMs: 5000, values: ['plan'] });
    const refused = await next
      .save('plan', 'C', { ifRevision: 1 })
      .commit({ release: true })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CommitPreconditionError);
    expect((refused as CommitPreconditionError).failures).toEqual([
      expect.objectContaining({ key: 'plan', currentRevision: 2 }),
    ]);
    expect(await alice.getVersioned('rev-2', 'plan')).toMatchObject({ value: 'B', revision: 2 });
  });
});
