/**
 * The write path's protocol rules, given an adapter over a backend (test/http/harness.ts): the
 * lock is the authority over every Fencing-Token (a stale holder, a token never granted),
 * Idempotency-Keys, a partial session DELETE (where the backend can be made to fail deletes), a
 * value GET evaluates If-Match, one Authorization header per request.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ContractApi, type ContractHarness, hsToken } from './harness.js';

/** The write path through one adapter over one backend. */
export function writePathSuite(h: ContractHarness): void {
  describe(`the write path via ${h.name}`, () => {
    let api: ContractApi;
    let clock = 0;
    const json = (value: unknown, headers: Record<string, string> = {}) => ({
      body: JSON.stringify(value),
      headers: { 'content-type': 'application/json', ...headers },
    });
    const sid = () => `s-${randomUUID()}`;
    const value = (s: string, k: string) => `/v1/sessions/${s}/state/${k}`;
    const fencing = (token: number) => ({ 'fencing-token': String(token) });

    beforeAll(async () => {
      api = await h.make({ now: () => Date.now() + clock });
    });
    afterAll(() => api.close());

    /** A (whose lease expired) and B (who holds it now and wrote `plan`). */
    async function holders(s: string) {
      const key = { userId: 'alice', sessionId: s };
      const a = await api.lock.acquire(key, { leaseMs: 1000 });
      expect((await api.call('alice', 'PUT', value(s, 'plan'), json('by A', fencing(a.token)))).status).toBe(
        200,
      );
      clock += 2000;
      const b = await api.lock.acquire(key);
      const put = await api.call('alice', 'PUT', value(s, 'plan'), json('by B', fencing(b.token)));
      expect(put.status).toBe(200);
      return { a, b, etag: put.json().etag as string };
    }
    const plan = async (s: string) => (await api.call('alice', 'GET', value(s, 'plan'))).json();

    it('a stale holder: PUT with If-Match, a commit with ifVersion (the fast path), an unconditional commit, a session DELETE — all 409 fenced, nothing changed', async () => {
      const s = sid();
      const { a, b, etag } = await holders(s);
      const stale = [
        await api.call(
          'alice',
          'PUT',
          value(s, 'plan'),
          json('stale', { ...fencing(a.token), 'if-match': `"${etag}"` }),
        ),
        await api.call(
          'alice',
          'POST',
          `/v1/sessions/${s}/commits`,
          json({
            commitId: 'c1',
            token: a.token,
            values: [{ key: 'plan', value: 'stale', ifVersion: etag }],
          }),
        ),
        await api.call(
          'alice',
          'POST',
          `/v1/sessions/${s}/commits`,
          json({ commitId: 'c2', token: a.token, values: [{ key: 'plan', value: 'stale' }] }),
        ),
        await api.call('alice', 'DELETE', `/v1/sessions/${s}`, { headers: fencing(a.token) }),
      ];
      for (const answer of stale) {
        expect(answer.status).toBe(409);
        expect(answer.json().code).toBe('fenced');
      }
      expect(await plan(s)).toBe('by B');
      // The holder writes on (its token was never lowered).
      const next = await api.call('alice', 'PUT', value(s, 'plan'), json('by B again', fencing(b.token)));
      expect(next.status).toBe(200);
    });

    it('a token the lock never granted is 409 fenced, "token not granted", and the real holder writes on', async () => {
      const s = sid();
      const { b } = await holders(s);
      const forged = await api.call('alice', 'PUT', value(s, 'plan'), json('forged', fencing(b.token + 1e9)));
      expect(forged.status).toBe(409);
      expect(forged.json()).toMatchObject({ code: 'fenced' });
      expect(forged.json().detail).toMatch(/token not granted/);
      expect(await plan(s)).toBe('by B');
      expect((await api.call('alice', 'PUT', value(s, 'plan'), json('ok', fencing(b.token)))).status).toBe(
        200,
      );
    });

    it('an Idempotency-Key reused for another append or truncate is 422 idempotency-key-reused, nothing written; the same request replays', async () => {
      const s = sid();
      const items = `/v1/sessions/${s}/lists/l/items`;
      const key = { 'idempotency-key': 'k1' };
      const first = await api.call('alice', 'POST', items, json({ items: ['first'], expectedCount: 0 }, key));
      expect(first.json()).toMatchObject({ action: 'created', count: 1 });
      const reused = await api.call(
        'alice',
        'POST',
        items,
        json({ items: ['second'], expectedCount: 1 }, key),
      );
      expect(reused.status).toBe(422);
      expect(reused.json()).toMatchObject({ code: 'idempotency-key-reused' });
      const replay = await api.call(
        'alice',
        'POST',
        items,
        json({ items: ['first'], expectedCount: 0 }, key),
      );
      expect(replay.json()).toEqual(first.json());
      expect((await api.call('alice', 'GET', `/v1/sessions/${s}/lists/l`)).json().items).toEqual(['first']);
      const grown = await api.call('alice', 'POST', items, json({ items: ['more'], expectedCount: 1 }));
      const cut = { 'idempotency-key': 't1' };
      const truncate = `/v1/sessions/${s}/lists/l/truncate`;
      const once = await api.call(
        'alice',
        'POST',
        truncate,
        json({ count: 1, expectedHash: grown.json().hash }, cut),
      );
      expect(once.json()).toMatchObject({ action: 'truncated', count: 1 });
      const again = await api.call(
        'alice',
        'POST',
        truncate,
        json({ count: 0, expectedHash: once.json().hash }, cut),
      );
      expect(again.status).toBe(422);
      expect(again.json()).toMatchObject({ code: 'idempotency-key-reused' });
      expect((await api.call('alice', 'GET', `/v1/sessions/${s}/lists/l`)).json().items).toEqual(['first']);
    });

    // Only a backend that can be made to fail deletes (an object store's DELETE is many requests).
    it.runIf(h.backend.deleteFaults)(
      'a session DELETE that leaves objects behind is 409 contended (the session is gone already); a retried DELETE finishes',
      async () => {
        const s = sid();
        await api.call('alice', 'PUT', value(s, 'a'), json(1));
        await api.call('alice', 'PUT', value(s, 'stuck'), json(2));
        api.failDeletes?.(`${s}/stuck`);
        const partial = await api.call('alice', 'DELETE', `/v1/sessions/${s}`);
        api.failDeletes?.(undefined);
        expect(partial.status).toBe(409);
        expect(partial.json()).toMatchObject({ code: 'contended' });
        expect(partial.headers['retry-after']).toBeDefined();
        expect((await api.call('alice', 'HEAD', `/v1/sessions/${s}`)).status).toBe(404);
        expect((await api.call('alice', 'GET', value(s, 'stuck'))).status).toBe(404);
        expect((await api.call('alice', 'DELETE', `/v1/sessions/${s}`)).status).toBe(204);
      },
    );

    it('a value GET evaluates If-Match first: 412 with currentEtag on a mismatch, 200 on a match, 412 for an absent value', async () => {
      const s = sid();
      const put = await api.call('alice', 'PUT', value(s, 'k'), json({ a: 1 }));
      const etag = put.json().etag as string;
      const wrong = await api.call('alice', 'GET', value(s, 'k'), {
        headers: { 'if-match': '"nope"', 'if-none-match': `"${etag}"` },
      });
      expect(wrong.status).toBe(412);
      expect(wrong.json()).toMatchObject({ code: 'precondition-failed', currentEtag: etag });
      const right = await api.call('alice', 'GET', value(s, 'k'), { headers: { 'if-match': `"${etag}"` } });
      expect(right.status).toBe(200);
      expect(right.json()).toEqual({ a: 1 });
      expect(
        (await api.call('alice', 'GET', value(s, 'none'), { headers: { 'if-match': '*' } })).status,
      ).toBe(412);
    });

    it('two bearer tokens in one Authorization header (as platforms join repeated headers) are 400, nothing read', async () => {
      const s = sid();
      const one = await hsToken({ sub: 'alice' });
      const other = await hsToken({ sub: 'bob' });
      const joined = `Bearer ${one}, Bearer ${other}`;
      const answer = await api.call('alice', 'GET', value(s, 'k'), {
        authorization: joined,
        headers: { authorization: joined },
      });
      expect(answer.status).toBe(400);
      expect(answer.json()).toMatchObject({ code: 'invalid-request', field: 'Authorization' });
    });
  });
}
