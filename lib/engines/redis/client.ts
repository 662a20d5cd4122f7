/**
 * The Redis connection of the engine and its lock (docs/backends.md, "Redis"): Standalone
 * (`redis://`, `rediss://`), Cluster (a seed list of nodes) or Sentinel (the Sentinels and the
 * master's name), through ioredis, an optional peer loaded only when Redis is configured. The
 * scripts are defined on the client once (`defineCommand`: EVALSHA, and EVAL when the server answers
 * NOSCRIPT, after a restart or a failover); with WAIT configured, a script that writes is sent with
 * its WAIT in one pipeline. The start-up check (`checkRedisServer`) and the script load of
 * `npm run bootstrap` (`loadScripts`) are here too.
 */
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { BackendError, MisconfiguredBackendError } from '../../contract/errors.js';
import { requirePeer } from '../../util/peer.js';

/** A Standalone or Cluster client. */
export type RedisClient = Redis | Cluster;

/** ioredis's module. */
export type IoRedis = typeof import('ioredis');

/** Where Redis is: a URL (Standalone), Cluster seed nodes, or Sentinels and the master's name. */
export interface RedisConnection {
  /** Standalone: the server. With `sentinels`: only its password, user, database and TLS (`rediss:`) apply. */
  readonly url?: string;
  readonly clusterNodes?: readonly string[];
  /** Sentinels (`host:port`), asked where the master named `sentinelName` is (REDIS_SENTINELS). */
  readonly sentinels?: readonly string[];
  readonly sentinelName?: string;
  /** Replicas that must acknowledge every mutating script (`WAIT`, pipelined with it); 0: no WAIT. */
  readonly waitReplicas?: number;
  /** How long WAIT waits for them, in ms; default `DEFAULT_WAIT_MS`. */
  readonly waitMs?: number;
  /** ioredis, when the caller bundles it (the function entries); else it is loaded as an optional peer. */
  readonly ioredis?: IoRedis;
}

/** REDIS_WAIT_MS's default. */
export const DEFAULT_WAIT_MS = 100;

/** What a client was made with (for the start-up check and WAIT), and the scripts defined on it. */
interface ClientFacts {
  connection?: RedisConnection;
  ioredis?: IoRedis;
  wait?: { replicas: number; ms: number };
  readonly scripts: Map<string, { lua: string; sha: string; keys: number; waits: boolean }>;
}
const facts = new WeakMap<RedisClient, ClientFacts>();
const factsOf = (client: RedisClient): ClientFacts => {
  let found = facts.get(client);
  if (!found) {
    found = { scripts: new Map() };
    facts.set(client, found);
  }
  return found;
};

const hostPort = (node: string) => {
  const at = node.lastIndexOf(':');
  return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
};

/** The connection settings a URL carries besides its host (for the data connections behind Sentinel). */
function urlSettings(url: string | undefined) {
  if (!url) return {};
  const parsed = new URL(url);
  const db = parsed.pathname.replace(/^\//, '');
  return {
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(db ? { db: Number(db) } : {}),
    ...(parsed.protocol === 'rediss:' ? { tls: {}, enableTLSForSentinelMode: true } : {}),
  };
}

/** Connects to Redis as configured (ioredis loaded on first use). */
export function connectRedis(connection: RedisConnection): RedisClient {
  const ioredis =
    connection.ioredis ?? requirePeer<IoRedis>('agent-state-store (STORE_BACKEND=redis)', 'ioredis');
  const options = { maxRetriesPerRequest: 2, enableAutoPipelining: false } as const;
  let client: RedisClient;
  if (connection.clusterNodes && connection.clusterNodes.length > 0) {
    client = new ioredis.Cluster(connection.clusterNodes.map(hostPort), { redisOptions: options });
  } else if (connection.sentinels && connection.sentinels.length > 0) {
    if (!connection.sentinelName)
      throw new MisconfiguredBackendError('redis', 'credentials', 'REDIS_SENTINEL_NAME is not set');
    client = new ioredis.Redis({
      ...options,
      ...urlSettings(connection.url),
      sentinels: connection.sentinels.map(hostPort),
      name: connection.sentinelName,
      // A failover is followed at once (the Sentinels' +switch-master), and a write refused by a
      // demoted master (READONLY) reconnects to the new one; that write fails, retryable.
      failoverDetector: true,
      reconnectOnError: (error) => (/READONLY/.test(error.message) ? 1 : false),
    });
  } else {
    if (!connection.url) throw new MisconfiguredBackendError('redis', 'credentials', 'REDIS_URL is not set');
    client = new ioredis.Redis(connection.url, options);
  }
  const known = factsOf(client);
  known.connection = connection;
  known.ioredis = ioredis;
  if (connection.waitReplicas)
    known.wait = { replicas: connection.waitReplicas, ms: connection.waitMs ?? DEFAULT_WAIT_MS };
  return client;
}

/** A script of the engine: its Lua, its number of keys; `reads`: it changes nothing (no WAIT after it). */
export interface ScriptDefinition {
  readonly lua: string;
  readonly keys: number;
  readonly readOnly?: boolean;
  readonly reads?: boolean;
}

/** Defines the scripts on a client once (ioredis keeps them per client). */
export function defineScripts(
  client: RedisClient,
  scripts: Readonly<Record<string, ScriptDefinition>>,
): void {
  const defined = client as unknown as Record<string, unknown>;
  const known = factsOf(client).scripts;
  for (const [name, { lua, keys, readOnly, reads }] of Object.entries(scripts)) {
    if (!known.has(name))
      known.set(name, {
        lua,
        sha: createHash('sha1').update(lua).digest('hex'),
        keys,
        waits: !(readOnly || reads),
      });
    if (typeof defined[name] === 'function') continue;
    client.defineCommand(name, { lua, numberOfKeys: keys, ...(readOnly ? { readOnly } : {}) });
  }
}

/** Loads every script defined on the client into the server's script cache (every master of a Cluster). */
export async function loadScripts(client: RedisClient): Promise<number> {
  const scripts = [...factsOf(client).scripts.values()];
  const nodes = 'isCluster' in client && client.isCluster ? (client as Cluster).nodes('master') : [client];
  try {
    for (const node of nodes) for (const { lua } of scripts) await node.script('LOAD', lua);
  } catch (error) {
    throw redisError(error);
  }
  return scripts.length;
}

/** What a script answers when it refused and wrote nothing (no WAIT verdict applies to it). */
const REFUSALS = new Set([
  'fenced',
  'pre',
  'conflict',
  'reused',
  'lpre',
  'stale',
  'short',
  'mismatch',
  'held',
  'lost',
]);

/**
 * Calls a defined script. With REDIS_WAIT_REPLICAS, a script that writes is followed by `WAIT
 * <replicas> <ms>` in the same write to the socket (a pipeline: one round trip; on a Cluster, to the
 * script's node, the slot of its keys); fewer replicas acknowledging is a retryable `BackendError`
 * (503 `backend-unavailable`): the write is on the master, it may or may not survive a failover.
 */
export function callScript(client: RedisClient, name: string, args: ReadonlyArray<string | Buffer>) {
  const known = facts.get(client);
  const script = known?.scripts.get(name);
  if (known?.wait && script?.waits) return scriptAndWait(client, script, args, known.wait);
  const fn = (
    client as unknown as Record<string, (...a: ReadonlyArray<string | Buffer>) => Promise<unknown>>
  )[name];
  if (!fn) throw new Error(`script ${name} is not defined`);
  return fn.apply(client, [...args]).catch((error: unknown) => {
    throw redisError(error);
  });
}

async function scriptAndWait(
  client: RedisClient,
  script: { lua: string; sha: string; keys: number },
  args: ReadonlyArray<string | Buffer>,
  wait: { replicas: number; ms: number },
): Promise<unknown> {
  // EVALSHA, and EVAL when the server does not have the script (NOSCRIPT: nothing ran, nothing
  // waited for); a Cluster's MOVED (the slot moved: nothing ran) is sent again once, to the new node.
  let byBody = false;
  for (let attempt = 0; ; attempt++) {
    const pipeline = client.pipeline();
    if (byBody) pipeline.eval(script.lua, script.keys, ...args);
    else pipeline.evalsha(script.sha, script.keys, ...args);
    pipeline.wait(wait.replicas, wait.ms);
    const results = (await pipeline.exec().catch((error: unknown) => {
      throw redisError(error);
    })) as Array<[Error | null, unknown]> | null;
    const [[scriptError, reply] = [null, undefined], [waitError, acked] = [null, undefined]] = results ?? [];
    if (scriptError) {
      if (attempt < 2 && /NOSCRIPT/.test(scriptError.message)) {
        byBody = true;
        continue;
      }
      if (attempt < 2 && /^MOVED /.test(scriptError.message) && 'isCluster' in client) {
        await new Promise<void>((resolve) => (client as Cluster).refreshSlotsCache(() => resolve()));
        continue;
      }
      throw redisError(scriptError);
    }
    if (Array.isArray(reply) && REFUSALS.has(String(reply[0]))) return reply;
    if (waitError || !(Number(acked) >= wait.replicas))
      throw new BackendError(
        `redis: WAIT ${wait.replicas} ${wait.ms}: ${waitError ? waitError.message : `${Number(acked)} replica(s) acknowledged`}; the write may or may not have been applied (a failover may lose what the replicas did not acknowledge): read it back, or retry it with the same commitId, writeId or Idempotency-Key`,
        true,
        waitError ? { cause: waitError } : {},
      );
    return reply;
  }
}

/** Where a deployment points at Redis, by its variables (for messages). */
function configuredAs(connection: RedisConnection | undefined, cluster: boolean): string {
  if (connection?.sentinels?.length) return 'REDIS_SENTINELS / REDIS_SENTINEL_NAME';
  return cluster ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL';
}

/** What the start-up check found: the server's version and mode. */
export interface RedisServerFacts {
  readonly version: string;
  readonly mode: 'standalone' | 'cluster';
}

/**
 * The start-up check (the local server at start, `GET /v1/ready`, `npm run bootstrap`): Redis ≥ 7
 * (INFO server's `redis_version`), scripts allowed (an EVAL), and the server's mode as configured
 * (a Cluster node behind REDIS_URL or REDIS_SENTINELS, or a standalone server behind
 * REDIS_CLUSTER_NODES, is refused). A Cluster is asked through a connection of its own to a seed
 * node (a Cluster client of a standalone server would wait for slots forever). Fails with a
 * retryable `BackendError` (503 `backend-unavailable`) naming what is wrong and the variable.
 */
export async function checkRedisServer(client: RedisClient): Promise<RedisServerFacts> {
  const known = facts.get(client);
  const cluster = 'isCluster' in client && Boolean(client.isCluster);
  const where = configuredAs(known?.connection, cluster);
  const seed = known?.connection?.clusterNodes?.[0];
  let node: Redis = client as Redis;
  let own: Redis | undefined;
  if (cluster) {
    const connected = (client as Cluster).nodes('master')[0];
    if (connected && connected.status === 'ready') node = connected;
    else if (seed && known?.ioredis) {
      own = new known.ioredis.Redis({
        ...hostPort(seed),
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
        connectTimeout: 5000,
      });
      own.on('error', () => {});
      node = own;
    }
  }
  const refuse = (what: string) => new BackendError(`redis: ${what} (check ${where})`, true);
  try {
    const info = await node.info('server');
    const version = /^redis_version:(\S+)/m.exec(info)?.[1] ?? '';
    const mode = /^redis_mode:(\S+)/m.exec(info)?.[1] ?? '';
    if (!(Number(version.split('.')[0]) >= 7))
      throw refuse(
        `the server is Redis ${version || '(unknown version)'}; the engine needs Redis 7 or later`,
      );
    if (mode === 'sentinel')
      throw refuse('the server is a Sentinel, not a data node; name Sentinels in REDIS_SENTINELS');
    if (mode === 'cluster' && !cluster)
      throw refuse(`the server is a Cluster node, configured as ${where}; set REDIS_CLUSTER_NODES instead`);
    if (mode !== 'cluster' && cluster)
      throw refuse(
        `REDIS_CLUSTER_NODES names a ${mode || 'standalone'} server, not a Cluster node; set REDIS_URL instead`,
      );
    try {
      await node.eval('return 1', 0);
    } catch (error) {
      throw refuse(
        `the server refuses scripts (EVAL: ${(error as Error).message}); the engine runs every write as a script`,
      );
    }
    return { version, mode: cluster ? 'cluster' : 'standalone' };
  } catch (error) {
    throw redisError(error);
  } finally {
    own?.disconnect();
  }
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
