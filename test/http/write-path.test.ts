/**
 * The write path's protocol rules (write-path-suite.ts) through each adapter (local node:http, API
 * Gateway v2 events, FC 3 events) on memory; then repeated Authorization headers on node:http.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { contractHarnesses, hsToken, memoryBackend, nodeHarness } from './harness.js';
import { writePathSuite } from './write-path-suite.js';

for (const h of contractHarnesses(memoryBackend)) writePathSuite(h);

describe('repeated Authorization headers on node:http', () => {
  it('are refused with 400, not served as the first', async () => {
    const driver = createMemoryDriver();
    const api = await nodeHarness({ driver, lock: createMemoryLock() });
    const server = createNodeServer(api.app.handle, 1024 * 1024);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const tokens = [`Bearer ${await hsToken({ sub: 'alice' })}`, `Bearer ${await hsToken({ sub: 'bob' })}`];
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const r = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: '/v1/sessions/s/state/k',
          // Raw headers: Node adds no Host of its own to them (a request without one is 400 before
          // any handler runs).
          headers: [
            'host',
            `127.0.0.1:${port}`,
            'authorization',
            tokens[0] as string,
            'authorization',
            tokens[1] as string,
          ],
        },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      r.on('error', reject);
      r.end();
    });
    // The router's refusal (a problem naming the header), not Node's own.
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'invalid-request', field: 'Authorization' });
    await new Promise<void>((r) => server.close(() => r()));
    await api.close();
  });
});
