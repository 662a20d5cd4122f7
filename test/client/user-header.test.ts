/**
 * The client's `userId` option: every API call carries `Agent-State-User` (the URL id form), so a
 * token of another user is refused (`UserMismatchError`, 403 `user-mismatch`) instead of acting
 * in that user's sessions; without the option no header is sent. A framework adapter sends it
 * through the client it is given (the OpenAI Agents session here).
 */
import { describe, expect, it } from 'vitest';
import { createHttpClient, UserMismatchError } from '../../lib/client/index.js';
import { ValidationError } from '../../lib/contract/errors.js';
import { OpenAIAgentsSession } from '../../lib/entries/openai-agents.js';
import { hsToken } from '../http/harness.js';
import { fakeFetch, localApi } from './helpers.js';

const ok = async () => new Response('{"status":"ok"}', { status: 200 });

describe('client userId option', () => {
  it('sends Agent-State-User in its URL id form with every API call; none without the option', async () => {
    const { calls, fetch } = fakeFetch(() => new Response(null, { status: 404 }));
    const plain = createHttpClient({ baseUrl: 'http://127.0.0.1:1', fetch, userId: 'alice' });
    const odd = createHttpClient({ baseUrl: 'http://127.0.0.1:1', fetch, userId: 'a/b' });
    const none = createHttpClient({ baseUrl: 'http://127.0.0.1:1', fetch });
    await plain.exists('s');
    await odd.exists('s');
    await none.exists('s');
    expect(calls.map((c) => c.headers['agent-state-user'])).toEqual(['alice', '~YS9i', undefined]);
    expect(() => createHttpClient({ baseUrl: 'http://127.0.0.1:1', fetch: () => ok(), userId: ' ' })).toThrow(
      ValidationError,
    );
  });

  it("another user's token: UserMismatchError, nothing written; the right token works", async () => {
    const api = await localApi();
    try {
      const wrong = createHttpClient({
        baseUrl: api.baseUrl,
        token: () => hsToken({ sub: 'bob' }),
        userId: 'alice',
      });
      const error = await wrong.save('s1', 'plan', { a: 1 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UserMismatchError);
      expect(error).toMatchObject({ status: 403, code: 'user-mismatch' });
      const bob = createHttpClient({ baseUrl: api.baseUrl, token: () => hsToken({ sub: 'bob' }) });
      expect(await bob.exists('s1')).toBe(false);
      const right = api.client({ userId: 'alice' });
      await right.save('s1', 'plan', { a: 1 });
      expect(await api.store.get('s1', 'plan')).toEqual({ a: 1 });
      // A framework adapter given that client sends it too.
      const session = new OpenAIAgentsSession({ store: wrong, sessionId: 's2' });
      await expect(session.getItems()).rejects.toBeInstanceOf(UserMismatchError);
      await expect(new OpenAIAgentsSession({ store: right, sessionId: 's2' }).getItems()).resolves.toEqual(
        [],
      );
    } finally {
      await api.close();
    }
  });
});
