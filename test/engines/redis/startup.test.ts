/**
 * The Redis engine's start-up check (lib/engines/redis/client.ts, `checkRedisServer`), as the local
 * server runs it at start and `GET /v1/ready` answers it: a Cluster node behind REDIS_URL, a
 * standalone server behind REDIS_CLUSTER_NODES and a server that refuses EVAL are each 503
 * `backend-unavailable` (store) with one ERROR line naming what is wrong and the variable (a refused
 * password: `backend-misconfigured`, naming the password in REDIS_URL); the
 * Redis variables' validation; `npm run bootstrap`'s Redis step checking the server and loading
 * the scripts. (A Redis older than 7 is not installed here: its refusal is not exercised.)
 */
import type { AddressInfo } from 'node:net';
import { Logger } from '@aws-lambda-powertools/logger';
import { Cluster, Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { type ConfigError, loadConfig } from '../../../lib/config.js';
import {
  checkRedisServer,
  connectRedis,
  type IoRedis,
  loadScripts,
  redisEngine,
} from '../../../lib/engines/redis/index.js';
import { createNodeServer } from '../../../lib/http/adapters/node.js';
import { createApp } from '../../../lib/http/app.js';
import { engineFrom, redisConnectionFrom } from '../../../lib/http/backends/engines.js';
import { BootstrapError, bootstrap } from '../../../lib/lifecycle/bootstrap.js';
import { SECRET } from '../../http/harness.js';
import { startRedis } from '../../servers/redis.js';

/** ioredis, keeping every client the app makes (to disconnect them: a Cluster client retries forever), its error events expected. */
const made: Array<{ disconnect(): void }> = [];
class TrackedRedis extends Redis {
  constructor(...args: unknown[]) {
    super(...(args as []));
    this.on('error', () => {});
    made.push(this);
  }
}
class TrackedCluster extends Cluster {
  constructor(...args: unknown[]) {
    super(...(args as [[]]));
    this.on('error', () => {});
    made.push(this);
  }
}
const ioredis = { Redis: TrackedRedis, Cluster: TrackedCluster } as unknown as IoRedis;

const refused = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('the Redis variables', () => {
  const base = { ALLOW_ANONYMOUS: 'true', STORE_BACKEND: 'redis', LOCK_BACKEND: 'redis' };
  it('Sentinels need the master name (and the name Sentinels), exclusive with Cluster nodes; WAIT bounded', () => {
    const problems = (env: Record<string, string>) =>
      (refused(() => loadConfig({ ...base, ...env })) as ConfigError | undefined)?.problems;
    expect(problems({ REDIS_SENTINELS: '127.0.0.1:26379' })).toEqual([
      "REDIS_SENTINEL_NAME: required with REDIS_SENTINELS (the master's name)",
    ]);
    expect(problems({ REDIS_URL: 'redis://h:1', REDIS_SENTINEL_NAME: 'm' })).toEqual([
      'REDIS_SENTINELS: required with REDIS_SENTINEL_NAME',
    ]);
    expect(
      problems({ REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_NAME: 'm', REDIS_CLUSTER_NODES: 'b:2' }),
    ).toEqual([
      'REDIS_SENTINELS: cannot be combined with REDIS_CLUSTER_NODES (a Cluster fails over by itself)',
    ]);
    expect(problems({ REDIS_SENTINELS: 'a', REDIS_SENTINEL_NAME: 'm' })?.[0]).toMatch(
      /^REDIS_SENTINELS\.0: must be host:port entries/,
    );
    expect(problems({ REDIS_URL: 'redis://h:1', REDIS_WAIT_REPLICAS: '-1' })?.[0]).toMatch(
      /^REDIS_WAIT_REPLICAS/,
    );
    expect(problems({ REDIS_URL: 'redis://h:1', REDIS_WAIT_MS: '0' })?.[0]).toMatch(/^REDIS_WAIT_MS/);
    expect(problems({})).toEqual([
      'REDIS_URL: required when STORE_BACKEND or LOCK_BACKEND is redis (or REDIS_CLUSTER_NODES, or REDIS_SENTINELS)',
    ]);
    const config = loadConfig({
      ...base,
      REDIS_SENTINELS: '10.0.0.1:26379, 10.0.0.2:26379',
      REDIS_SENTINEL_NAME: 'agentstate',
      REDIS_URL: 'rediss://:pw@ignored:6379/2',
      REDIS_WAIT_REPLICAS: '1',
    });
    expect(redisConnectionFrom(config)).toEqual({
      url: 'rediss://:pw@ignored:6379/2',
      sentinels: ['10.0.0.1:26379', '10.0.0.2:26379'],
      sentinelName: 'agentstate',
      waitReplicas: 1,
    });
    expect(redisConnectionFrom(loadConfig({ ...base, REDIS_URL: 'redis://h:1' }))).toEqual({
      url: 'redis://h:1',
      waitReplicas: 0,
    });
  });
});

describe('the start-up check', () => {
  const servers: Array<{ close(): Promise<void> }> = [];
  afterEach(() => {
    for (const client of made.splice(0)) client.disconnect();
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  /** The app on `env`, served: what GET /v1/ready answers, the ERROR lines, and checkReady's refusal. */
  const readyOf = async (env: Record<string, string>) => {
    const config = loadConfig({
      STORE_BACKEND: 'redis',
      LOCK_BACKEND: 'redis',
      AUTH_JWT_SECRET: SECRET,
      LOG_LEVEL: 'SILENT',
      ...env,
    });
    const logger = new Logger({ logLevel: 'SILENT' });
    const errors = vi.spyOn(logger, 'error');
    const app = createApp(config, { engine: engineFrom(config, { ioredis }), logger });
    // What the local server logs at start (functions/local/server.ts): the check's message.
    const atStart = await app.store.checkReady().catch((e: Error) => e);
    const server = createNodeServer(app.handle, 1024 * 1024);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const answer = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/ready`);
      return {
        status: answer.status,
        retryAfter: answer.headers.get('retry-after'),
        body: (await answer.json()) as Record<string, unknown>,
        errors: errors.mock.calls.map(([line, extra]) => ({
          line: String(line),
          error: String((extra as { error?: Error } | undefined)?.error?.message),
        })),
        atStart,
      };
    } finally {
      await new Promise((r) => server.close(r));
    }
  };

  const cases = [
    {
      what: 'a Cluster node behind REDIS_URL',
      args: ['--cluster-enabled', 'yes'],
      env: (url: string) => ({ REDIS_URL: url }),
      message:
        /^redis: the server is a Cluster node, configured as REDIS_URL; set REDIS_CLUSTER_NODES instead \(check REDIS_URL\)$/,
    },
    {
      what: 'a standalone server behind REDIS_CLUSTER_NODES',
      args: [],
      env: (url: string) => ({ REDIS_CLUSTER_NODES: new URL(url).host }),
      message:
        /^redis: REDIS_CLUSTER_NODES names a standalone server, not a Cluster node; set REDIS_URL instead \(check REDIS_CLUSTER_NODES\)$/,
    },
    {
      what: 'a server that refuses EVAL (rename-command EVAL "")',
      args: ['--rename-command', 'EVAL', ''],
      env: (url: string) => ({ REDIS_URL: url }),
      message:
        /^redis: the server refuses scripts \(EVAL: ERR unknown command 'eval'.*the engine runs every write as a script \(check REDIS_URL\)$/,
    },
  ];

  for (const c of cases)
    it(`${c.what}: GET /v1/ready is 503 backend-unavailable (store), one ERROR line saying so`, async () => {
      const redis = await startRedis({ args: c.args });
      servers.push(redis);
      const ready = await readyOf(c.env(redis.url));
      expect(ready.status).toBe(503);
      expect(ready.retryAfter).not.toBeNull();
      expect(ready.body).toMatchObject({ code: 'backend-unavailable', dependency: 'store' });
      expect(ready.errors).toHaveLength(1);
      expect(ready.errors[0]?.error).toMatch(c.message);
      expect((ready.atStart as Error).message).toMatch(c.message);
    });

  it('a refused password is 503 backend-misconfigured, its ERROR line naming the password in REDIS_URL', async () => {
    const redis = await startRedis();
    servers.push(redis);
    const admin = new Redis(redis.url);
    await admin.config('SET', 'requirepass', 'right');
    admin.disconnect();
    const ready = await readyOf({ REDIS_URL: redis.url.replace('redis://', 'redis://:wrong@') });
    expect(ready.status).toBe(503);
    expect(ready.retryAfter).toBeNull();
    expect(ready.body).toMatchObject({ code: 'backend-misconfigured', dependency: 'store' });
    expect(ready.errors).toHaveLength(1);
    expect(ready.errors[0]?.line).toMatch(
      /^redis refused the credentials: .*: check the password in REDIS_URL$/,
    );
  });

  it('a good server passes; bootstrap checks it and loads the scripts (SCRIPT LOAD), a refusing one stops bootstrap', async () => {
    const good = await startRedis();
    servers.push(good);
    const config = loadConfig({
      ALLOW_ANONYMOUS: 'true',
      STORE_BACKEND: 'redis',
      LOCK_BACKEND: 'redis',
      REDIS_URL: good.url,
    });
    const { client } = redisEngine({
      ...redisConnectionFrom(config),
      prefix: 'boot/',
      retentionDays: 30,
      keepAliveMs: 3_600_000,
      maxValueBytes: 1024 * 1024,
      metrics: { count: () => {} },
      store: true,
      lock: true,
    });
    made.push(client);
    expect(await checkRedisServer(client)).toEqual({
      version: expect.stringMatching(/^7\./),
      mode: 'standalone',
    });
    const cached = async () =>
      Number(/number_of_cached_scripts:(\d+)/.exec(await (client as Redis).info('memory'))?.[1]);
    // The check's own EVAL (`return 1`) is cached; nothing else yet.
    expect(await cached()).toBe(1);
    const steps = await bootstrap({
      config,
      clients: { redis: { check: () => checkRedisServer(client), loadScripts: () => loadScripts(client) } },
    });
    const step = steps.find((s) => s.step === 'redis server');
    expect(step).toMatchObject({ status: 'checked' });
    const loaded = Number(/, (\d+) scripts loaded$/.exec(step?.detail ?? '')?.[1]);
    expect(step?.detail).toMatch(/^Redis 7\.\d+\.\d+, standalone, \d+ scripts loaded$/);
    expect(loaded).toBeGreaterThan(10);
    expect(await cached()).toBe(1 + loaded);

    const refusing = await startRedis({ args: ['--rename-command', 'EVAL', ''] });
    servers.push(refusing);
    const other = connectRedis({ url: refusing.url });
    made.push(other);
    const failed = await bootstrap({
      config,
      clients: { redis: { check: () => checkRedisServer(other), loadScripts: () => loadScripts(other) } },
    }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(BootstrapError);
    expect((failed as Error).message).toMatch(/^redis server: redis: the server refuses scripts/);
  });
});
