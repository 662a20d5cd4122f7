/** Logs: one structured JSON line per request with the request id; no bodies, no tokens, no ids. */
import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createApp } from '../../lib/http/app.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { hsToken, SECRET } from './harness.js';

describe('request logs', () => {
  it('carry the request id, route and outcome, and never the body, the token or the ids', async () => {
    const lines: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      const config = loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, LOG_LEVEL: 'INFO' });
      const app = createApp(config, { driver: createMemoryDriver(), lock: createMemoryLock() });
      const token = await hsToken({ sub: 'alice' });
      await app.handle({
        method: 'PUT',
        path: '/v1/sessions/secret-session-id/state/plan',
        query: {},
        headers: { authorization: `Bearer ${token}` },
        body: Buffer.from(JSON.stringify({ password: 'BODY-SECRET-VALUE' })),
        requestId: 'req-123',
      });
      await app.handle({ method: 'GET', path: '/v1/nope', query: {}, headers: {}, requestId: 'req-456' });
    } finally {
      spy.mockRestore();
    }
    const logs = lines.join('');
    const entries = logs
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries.map((e) => e.requestId)).toEqual(['req-123', 'req-456']);
    expect(entries[0]).toMatchObject({ route: 'PUT /v1/sessions/{sessionId}/state/{key}', status: 200 });
    expect(entries[1]).toMatchObject({ status: 404, code: 'not-found' });
    expect(logs).not.toContain('BODY-SECRET-VALUE');
    expect(logs).not.toContain('secret-session-id');
    expect(logs).not.toMatch(/eyJ[A-Za-z0-9_-]+\./);
  });
});
