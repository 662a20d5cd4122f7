/**
 * The client's `capabilities()`: one `GET /v1/capabilities` for the client's life, every later call
 * answered from it; a failed read is asked again; a malformed answer is a `ProtocolError`.
 */
import { describe, expect, it } from 'vitest';
import { createHttpClient } from '../../lib/client/index.js';
import { ProtocolError } from '../../lib/contract/errors.js';
import { fakeFetch, localApi, problem } from './helpers.js';

describe('client capabilities()', () => {
  it('asks the server once, then answers from that answer', async () => {
    const api = await localApi();
    try {
      const sent: string[] = [];
      const client = api.client({
        fetch: (input, init) => {
          sent.push(`${init?.method} ${new URL(String(input)).pathname}`);
          return fetch(input, init);
        },
      });
      const first = await client.capabilities();
      expect(first).toEqual({
        versioning: true,
        revisions: true,
        conditionalOverwrite: true,
        ranges: true,
        presignedTransfer: false,
        atomicCommits: false,
      });
      expect(await Promise.all([client.capabilities(), client.capabilities()])).toEqual([first, first]);
      expect(sent).toEqual(['GET /v1/capabilities']);
    } finally {
      await api.close();
    }
  });

  it('a failed read is asked again; a malformed answer is a ProtocolError', async () => {
    const answers = [
      () => problem(500, 'internal'),
      () => new Response(JSON.stringify({ versioning: 'yes' }), { status: 200 }),
      () =>
        new Response(
          JSON.stringify({
            versioning: true,
            revisions: true,
            conditionalOverwrite: false,
            ranges: true,
            presignedTransfer: true,
            atomicCommits: false,
          }),
          { status: 200 },
        ),
    ];
    const { calls, fetch } = fakeFetch((_, n) => (answers[n - 1] ?? answers[2])?.() as Response);
    const client = createHttpClient({ baseUrl: 'http://127.0.0.1:1', fetch, attempts: 1 });
    await expect(client.capabilities()).rejects.toMatchObject({ status: 500 });
    await expect(client.capabilities()).rejects.toBeInstanceOf(ProtocolError);
    expect((await client.capabilities()).conditionalOverwrite).toBe(false);
    expect((await client.capabilities()).conditionalOverwrite).toBe(false);
    expect(calls.map((c) => `${c.method} ${new URL(c.url).pathname}`)).toEqual(
      Array(3).fill('GET /v1/capabilities'),
    );
  });
});
