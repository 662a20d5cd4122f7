/**
 * serverless.yml and the HTTP conventions, as osls resolves it (`serverless
 * print`, offline: the resolution `serverless package` runs): the HTTP API's CORS follows the
 * `corsOrigins` parameter (off by default, the lists of lib/http/cors.ts, a malformed origin refused
 * with the parameter's name) and so do the functions' CORS_ORIGINS; every operation of the API has
 * its route, to a function with the JWT authorizer where it needs an identity: HEAD on a value too,
 * which would otherwise fall to the public function's catch-all route, without an authorizer.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseCorsOrigins } from '../../lib/config.js';
import { apiGatewayCors } from '../../lib/http/cors.js';
import { methodsOf, ROUTES } from '../../lib/http/routes/index.js';
import { PATHS } from '../../lib/protocol/paths.js';

const run = promisify(execFile);

interface Printed {
  provider: { httpApi: { cors: unknown }; environment: Record<string, unknown> };
  functions: Record<
    string,
    { events: Array<{ httpApi: string | { method: string; path: string; authorizer?: string } }> }
  >;
}

/** `serverless print` of serverless.yml with these parameters: the exit code, the output and the resolved configuration. */
const print = (...params: string[]) =>
  run(
    'npx',
    ['serverless', 'print', '--stage', 'dev', '--format', 'json', ...params.flatMap((p) => ['--param', p])],
    {
      env: { ...process.env, SLS_TELEMETRY_DISABLED: '1', SLS_NOTIFICATIONS_MODE: 'off' },
      timeout: 60_000,
    },
  ).then(
    (out) => {
      const text = out.stdout;
      return {
        code: 0,
        output: text + out.stderr,
        config: JSON.parse(text.slice(text.indexOf('{'))) as Printed,
      };
    },
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      output: error.stdout + error.stderr,
      config: undefined,
    }),
  );

describe('serverless.yml: CORS and the routes of the HTTP conventions', () => {
  let printed: Awaited<ReturnType<typeof print>>[];
  const ORIGINS = 'https://console.example.com,http://localhost:5173';

  beforeAll(async () => {
    // The renderer osls calls for `${file(infra/aws/deployment.cjs):…}`.
    await run('node', ['scripts/build.mjs', 'sls-deployment']);
    printed = await Promise.all([
      print(),
      print(`corsOrigins=${ORIGINS}`),
      print('corsOrigins=*'),
      print('corsOrigins=https://console.example.com/'),
    ]);
  });

  it('has no CORS by default: httpApi.cors false, CORS_ORIGINS empty', () => {
    const [off] = printed;
    expect(off?.code, off?.output).toBe(0);
    expect(off?.config?.provider.httpApi.cors).toBe(false);
    expect(off?.config?.provider.environment.CORS_ORIGINS).toBe('');
  });

  it("configures the HTTP API's CORS from corsOrigins, with lib/http/cors.ts's lists, and the functions' CORS_ORIGINS alike", () => {
    const [, two, any] = printed;
    expect(two?.code, two?.output).toBe(0);
    const cors = two?.config?.provider.httpApi.cors;
    expect(cors).toEqual(apiGatewayCors(parseCorsOrigins(ORIGINS)));
    expect(cors).toMatchObject({
      allowedOrigins: ['https://console.example.com', 'http://localhost:5173'],
      allowedHeaders: expect.arrayContaining([
        'Authorization',
        'If-Match',
        'If-None-Match',
        'Idempotency-Key',
      ]),
      exposedResponseHeaders: expect.arrayContaining(['ETag', 'Location', 'Retry-After']),
      allowedMethods: expect.arrayContaining(['GET', 'HEAD', 'PUT', 'POST', 'DELETE']),
    });
    expect((cors as { maxAge: number }).maxAge).toBeGreaterThan(0);
    expect(two?.config?.provider.environment.CORS_ORIGINS).toBe(ORIGINS);
    expect(any?.config?.provider.httpApi.cors).toMatchObject({ allowedOrigins: ['*'] });
    expect(any?.config?.provider.environment.CORS_ORIGINS).toBe('*');
  });

  it('refuses a malformed origin at package time, naming the parameter and what to write', () => {
    const bad = printed[3];
    expect(bad?.code).not.toBe(0);
    expect(bad?.output).toContain('parameter corsOrigins:');
    expect(bad?.output).toContain('write "https://console.example.com"');
  });

  it('routes every operation, HEAD on a value included, to an authorized function where it needs an identity', () => {
    const config = printed[0]?.config as Printed;
    const routes = new Map<string, { fn: string; authorizer?: string }>();
    for (const [fn, { events }] of Object.entries(config.functions))
      for (const { httpApi } of events)
        if (typeof httpApi === 'object')
          routes.set(`${httpApi.method} ${httpApi.path}`, { fn, authorizer: httpApi.authorizer });
    for (const route of ROUTES)
      for (const method of methodsOf(route)) {
        const routed = routes.get(`${method} ${route.pattern}`);
        expect(routed, `${method} ${route.pattern}`).toBeDefined();
        expect(routed?.authorizer, `${method} ${route.pattern}`).toBe(route.auth ? 'jwt' : undefined);
        if (route.auth) expect(routed?.fn, `${method} ${route.pattern}`).not.toBe('public');
      }
    // The value's HEAD goes where its GET goes: the state function, behind the JWT authorizer.
    expect(routes.get(`HEAD ${PATHS.value}`)).toEqual({ fn: 'state', authorizer: 'jwt' });
    expect(routes.get(`GET ${PATHS.value}`)?.fn).toBe('state');
    // Anything unrouted falls to the public function's catch-all, which has no authorizer.
    expect(config.functions.public?.events.map((e) => e.httpApi)).toContain('*');
  });
});
