/**
 * Revisions over HTTP, given an adapter over a backend (docs/DESIGN.md, "Revisions"):
 * `Agent-State-Revision` on every answer that carries a value's ETag (PUT, GET, HEAD, 304),
 * `If-Revision` as a save's precondition (412 with `currentEtag` and `currentRevision`, nothing
 * written; a malformed one 400 naming the header), `revision` in key listings, snapshots and commit
 * results; another user's value of the same names has revisions of its own.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ContractApi, ContractHarness } from './harness.js';

const REVISION = 'agent-state-revision';

/** Revisions through one adapter over one backend (a fresh backend per case). */
export function revisionsSuite(h: ContractHarness): void {
  describe(`revisions via ${h.name}`, () => {
    let api: ContractApi | undefined;
    afterEach(async () => {
      await api?.close();
      api = undefined;
    });
    // A session of its own per case (the backend's tables or keys may be shared by the file).
    let session = '';
    beforeEach(() => {
      session = `r-${randomUUID()}`;
    });
    const at = (p: string) => `/v1/sessions/${session}${p}`;
    const put = (user: string, body: string, headers: Record<string, string> = {}) =>
      (api as ContractApi).call(user, 'PUT', at('/state/plan'), {
        body,
        headers: { 'content-type': 'application/json', ...headers },
      });

    it('1 on create, +1 per save (the same body included), in the header and the body; GET, HEAD and 304 carry it', async () => {
      api = await h.make();
      const first = await put('alice', '{"a":1}');
      expect([first.status, first.headers[REVISION], first.json().revision]).toEqual([200, '1', 1]);
      const same = await put('alice', '{"a":1}');
      expect([same.headers[REVISION], same.json()]).toEqual(['2', { etag: expect.any(String), revision: 2 }]);
      const got = await api.call('alice', 'GET', at('/state/plan'));
      expect([got.status, got.headers[REVISION], got.headers.etag]).toEqual([
        200,
        '2',
        `"${same.json().etag}"`,
      ]);
      const head = await api.call('alice', 'HEAD', at('/state/plan'));
      expect([head.status, head.headers[REVISION]]).toEqual([200, '2']);
      const unchanged = await api.call('alice', 'GET', at('/state/plan'), {
        headers: { 'if-none-match': got.headers.etag ?? '' },
      });
      expect([unchanged.status, unchanged.headers[REVISION]]).toEqual([304, '2']);
      // Another user's value of the same session id and key is its own.
      expect((await put('bob', '{"b":1}')).headers[REVISION]).toBe('1');
      const keys = await api.call('alice', 'GET', at('/keys'));
      expect(keys.json().values).toEqual([expect.objectContaining({ key: 'plan', revision: 2 })]);
    });

    it('If-Revision: saves over that revision only; otherwise 412 with the current etag and revision, nothing written', async () => {
      api = await h.make();
      const first = await put('alice', '{"a":1}');
      const over = await put('alice', '{"a":2}', { 'if-revision': '1' });
      expect([over.status, over.json().revision]).toEqual([200, 2]);
      const stale = await put('alice', '{"a":3}', { 'if-revision': '1' });
      expect(stale.status).toBe(412);
      expect(stale.json()).toMatchObject({
        code: 'precondition-failed',
        currentEtag: over.json().etag,
        currentRevision: 2,
      });
      expect((await api.call('alice', 'GET', at('/state/plan'))).json()).toEqual({ a: 2 });
      const absent = await api.call('alice', 'PUT', at('/state/none'), {
        body: '1',
        headers: { 'content-type': 'application/json', 'if-revision': '1' },
      });
      expect([absent.status, absent.json().currentRevision]).toEqual([412, null]);
      for (const bad of ['0', '-1', '1.5', 'x', '9007199254740992']) {
        const refused = await put('alice', '{"a":9}', { 'if-revision': bad });
        expect([refused.status, refused.json().field], bad).toEqual([400, 'If-Revision']);
      }
      expect((await api.call('alice', 'GET', at('/state/plan'))).headers[REVISION]).toBe('2');
      expect(first.json().revision).toBe(1);
    });

    it('snapshots and commits answer revisions; a commit’s ifRevision is its precondition', async () => {
      api = await h.make();
      await put('alice', '{"a":1}');
      const snap = await api.call('alice', 'POST', at('/snapshot'), {
        body: JSON.stringify({ values: ['plan'] }),
        headers: { 'content-type': 'application/json' },
      });
      const seen = snap.json().values[0];
      expect(seen).toMatchObject({ key: 'plan', revision: 1 });
      const commit = (body: unknown) =>
        (api as ContractApi).call('alice', 'POST', at('/commits'), {
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
        });
      const done = await commit({
        commitId: 'c1',
        values: [{ key: 'plan', value: 2, seenVersion: seen.etag, seenRevision: seen.revision }],
      });
      expect([done.status, done.json().values]).toEqual([
        200,
        [{ key: 'plan', etag: expect.any(String), revision: 2 }],
      ]);
      const failed = await commit({ commitId: 'c2', values: [{ key: 'plan', value: 3, ifRevision: 1 }] });
      expect(failed.status).toBe(412);
      expect(failed.json().failures).toEqual([
        {
          kind: 'value',
          key: 'plan',
          reason: 'version',
          currentVersion: done.json().values[0].etag,
          currentRevision: 2,
        },
      ]);
      const unhinted = await commit({ commitId: 'c3', values: [{ key: 'plan', value: 4, seenRevision: 2 }] });
      expect([unhinted.status, unhinted.json().field]).toEqual([400, 'values[0].seenRevision']);
    });
  });
}
