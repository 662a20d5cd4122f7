/**
 * The Redis connection of the engine and its lock: Standalone (`redis://`, `rediss://`) or Cluster
 * (a seed list of nodes), through ioredis, an optional peer loaded only when Redis is configured.
 * The scripts are defined on the client once (`defineCommand`: EVALSHA, and EVAL when the server
 * answers NOSCRIPT, after a restart or a failover).
 */
import type { Cluster, Redis } from 'ioredis';
import { BackendError, MisconfiguredBackendError } from '../../contract/errors.js';
import { requirePeer } from '../../util/peer.js';

/** A Standalone or Cluster client. */
export type RedisClient = Redis | Cluster;

/** ioredis's module. */
export type IoRedis = typeof import('ioredis');

/** Where Redis is: a URL (Standalone) or Cluster seed nodes (`host:port`). */
export interface RedisConnection {
  readonly url?: string;
  readonly clusterNodes?: readonly string[];
  /** ioredis, when the caller bundles it (the function entries); else it is loaded as an optional peer. */
  readonly ioredis?: IoRedis;
}

/** Connects to Redis as configured (ioredis loaded on first use). */
export function connectRedis(connection: RedisConnection): RedisClient {
  const ioredis =
    connection.ioredis ?? requirePeer<IoRedis>('agent-state-store (STORE_BACKEND=redis)', 'ioredis');
  const options = { maxRetriesPerRequest: 2, enableAutoPipelining: false } as const;
  if (connection.clusterNodes && connection.clusterNodes.length > 0) {
    const nodes = connection.clusterNodes.map((node) => {
      const at = node.lastIndexOf(':');
      return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
    });
    return new ioredis.Cluster(nodes, { redisOptions: options });
  }
  if (!connection.url) throw new MisconfiguredBackendError('redis', 'credentials', 'REDIS_URL is not set');
  return new ioredis.Redis(connection.url, options);
}

/** Defines the scripts on a client once (ioredis keeps them per client). */
export function defineScripts(
  client: RedisClient,
  scripts: Readonly<Record<string, { lua: string; keys: number; readOnly?: boolean }>>,
): void {
  const defined = client as unknown as Record<string, unknown>;
  for (const [name, { lua, keys, readOnly }] of Object.entries(scripts)) {
    if (typeof defined[name] === 'function') continue;
    client.defineCommand(name, { lua, numberOfKeys: keys, ...(readOnly ? { readOnly } : {}) });
  }
}

/** Calls a defined script. */
export function callScript(client: RedisClient, name: string, args: ReadonlyArray<string | Buffer>) {
  const fn = (
    client as unknown as Record<string, (...a: ReadonlyArray<string | Buffer>) => Promise<unknown>>
  )[name];
  if (!fn) throw new Error(`script ${name} is not defined`);
  return fn.apply(client, [...args]).catch((error: unknown) => {
    throw redisError(error);
  });
}

/** A Redis failure as a store error: a refused login is the deployment's, anything else retryable. */
export function redisError(error: unknown): unknown {
  if (error instanceof BackendError || !(error instanceof Error)) return error;
  const message = error.message;
  if (/NOAUTH|WRONGPASS|NOPERM/.test(message))
    return new MisconfiguredBackendError(
      'redis',
      'credentials',
      `redis refused the credentials: ${message}`,
      {
        cause: error,
      },
    );
  if (error.name === 'ReplyError' && !/BUSY|LOADING|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|READONLY/.test(message))
    return new BackendError(`redis: ${message}`, false, { cause: error });
  return new BackendError(`redis: ${message}`, true, { cause: error });
}
