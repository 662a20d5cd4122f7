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

/** The JSON lines written to stdout while `act` runs. */
async function linesOf(act: () => Promise<unknown>): Promise<Array<Record<string, unknown>>> {
  const chunks: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  });
  try {
    await act();
  } finally {
    spy.mockRestore();
  }
  return chunks
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => !('_aws' in l));
}

const health = (requestId = 'req-h') => ({
  method: 'GET',
  path: '/v1/health',
  query: {},
  headers: {},
  requestId,
});

describe('the Powertools conventions', () => {
  /** The request lines of one GET /v1/health of an app configured by `env`. */
  const logged = (env: Record<string, string>) =>
    linesOf(async () => {
      const config = loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, ...env });
      const app = createApp(config, { driver: createMemoryDriver(), lock: createMemoryLock() });
      await app.handle(health());
    });

  it('POWERTOOLS_SERVICE_NAME names the service (default agent-state)', async () => {
    expect((await logged({ POWERTOOLS_SERVICE_NAME: 'state-x' }))[0]).toMatchObject({
      service: 'state-x',
      message: 'request',
    });
    expect((await logged({}))[0]).toMatchObject({ service: 'agent-state', level: 'INFO' });
  });

  it('the level: AWS_LAMBDA_LOG_LEVEL, then POWERTOOLS_LOG_LEVEL, then LOG_LEVEL, then INFO', async () => {
    expect(await logged({ LOG_LEVEL: 'WARN' })).toEqual([]);
    expect(await logged({ LOG_LEVEL: 'INFO', POWERTOOLS_LOG_LEVEL: 'error' })).toEqual([]);
    expect(await logged({ LOG_LEVEL: 'SILENT', POWERTOOLS_LOG_LEVEL: 'INFO' })).toHaveLength(1);
    expect(await logged({ POWERTOOLS_LOG_LEVEL: 'ERROR', AWS_LAMBDA_LOG_LEVEL: 'DEBUG' })).toHaveLength(1);
    expect(await logged({ POWERTOOLS_LOG_LEVEL: 'DEBUG', AWS_LAMBDA_LOG_LEVEL: 'FATAL' })).toEqual([]);
    expect(() => loadConfig({ ALLOW_ANONYMOUS: 'true', POWERTOOLS_LOG_LEVEL: 'LOUD' })).toThrow(
      /POWERTOOLS_LOG_LEVEL/,
    );
  });
});

describe('request log lines', () => {
  const app = () =>
    createApp(loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, LOG_LEVEL: 'INFO' }), {
      driver: createMemoryDriver(),
      lock: createMemoryLock(),
    });

  it('name the route of an OPTIONS on a matched path (CORS off: 405), not unmatched', async () => {
    const a = app();
    const [line] = await linesOf(() =>
      a.handle({ ...health(), method: 'OPTIONS', path: '/v1/sessions/s/state/plan' }),
    );
    expect(line).toMatchObject({
      route: 'OPTIONS /v1/sessions/{sessionId}/state/{key}',
      status: 405,
      code: 'method-not-allowed',
    });
  });

  it('carry the platform id beside the request id', async () => {
    const a = app();
    const [line] = await linesOf(() => a.handle({ ...health('client-1'), platformRequestId: 'apigw-1' }));
    expect(line).toMatchObject({ requestId: 'client-1', platformRequestId: 'apigw-1' });
  });
});
