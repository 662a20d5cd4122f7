/**
 * Configuration, read from the environment and validated once at cold start. A bad deploy fails at
 * start with the variable's name. Every variable is listed in docs/configuration.md.
 */

import * as z from 'zod';
import { DEFAULTS } from './contract/defaults.js';
import type { BackendResource } from './contract/errors.js';

const bool = z.enum(['true', 'false']).transform((v) => v === 'true');

/** The origins browsers may call the API from (CORS_ORIGINS): any (`*`), or these exact origins. */
export type CorsOrigins = '*' | readonly string[];

/**
 * Reads CORS_ORIGINS: `*` alone, or a comma-separated list of exact origins, each as a browser
 * sends it in `Origin` (`scheme://host[:port]`: http or https, lowercase host, no default port, no
 * path, no trailing slash). Throws an Error saying what is wrong with the first bad entry, named by
 * its position; with `quote` (the deployment parameter, checked by this function at package time),
 * by its value, with the origin to write instead.
 */
export function parseCorsOrigins(raw: string, { quote = false } = {}): CorsOrigins {
  const entries = raw.split(',').map((entry) => entry.trim());
  if (entries.length === 1 && entries[0] === '*') return '*';
  const origins: string[] = [];
  for (const [index, entry] of entries.entries()) {
    const which = quote ? JSON.stringify(entry) : `origin ${index + 1}`;
    if (entry === '') throw new Error(`${which} is empty (a stray comma?)`);
    if (entry === '*') throw new Error(`${which} is *, which allows every origin and must stand alone`);
    const url = URL.canParse(entry) ? new URL(entry) : undefined;
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:'))
      throw new Error(`${which} is not an http(s) origin (scheme://host[:port])`);
    if (url.origin !== entry)
      throw new Error(
        `${which} is not an origin as browsers send it (lowercase host, no default port, no path, no trailing slash)${quote ? `: write ${JSON.stringify(url.origin)}` : ''}`,
      );
    if (!origins.includes(entry)) origins.push(entry);
  }
  return origins;
}

const corsOrigins = z.string().transform((raw, ctx): CorsOrigins => {
  try {
    return parseCorsOrigins(raw);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});
/** One of `levels`, in any case (Powertools reads its variables so). */
const upper = <const L extends readonly [string, ...string[]]>(levels: L) =>
  z
    .string()
    .transform((v) => v.toUpperCase())
    .pipe(z.enum(levels));
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** `host:port` entries, comma-separated (REDIS_CLUSTER_NODES, REDIS_SENTINELS). */
const redisNodes = z
  .string()
  .transform((raw) => raw.split(',').map((node) => node.trim()))
  .pipe(z.array(z.string().regex(/^[^\s:,]+:\d{1,5}$/, 'must be host:port entries, comma-separated')).min(1));

const schema = z
  .object({
    PORT: int(0, 65535).default(8787),
    HOST: z.string().default('127.0.0.1'),
    PUBLIC_URL: z.url().optional(),
    STORE_BACKEND: z.enum(['fs', 'memory', 's3', 'oss', 'redis', 'mysql']).default('fs'),
    DATA_DIR: z.string().min(1).default('./.data'),
    STATE_PREFIX: z.string().default(DEFAULTS.prefix),
    RETENTION_DAYS: z.coerce.number().positive().default(DEFAULTS.retentionDays),
    KEEPALIVE_MS: int(1000, 7 * 24 * 3600 * 1000).default(DEFAULTS.keepAliveMs),
    STATE_GRACE_DAYS: int(1, 30).default(DEFAULTS.stateGraceDays),
    S3_BUCKET: z.string().optional(),
    S3_ENDPOINT: z.url().optional(),
    S3_REGION: z.string().optional(),
    S3_DIALECT: z.enum(['aws', 'ceph-rgw']).default('aws'),
    OSS_BUCKET: z
      .string()
      .regex(
        /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/,
        'an OSS bucket name is 3 to 63 lowercase letters, digits and hyphens, starting and ending with a letter or digit',
      )
      .optional(),
    OSS_REGION: z.string().optional(),
    OSS_ENDPOINT: z.url().optional(),
    OSS_ACCESS_KEY_ID: z.string().optional(),
    OSS_ACCESS_KEY_SECRET: z.string().optional(),
    OSS_STS_TOKEN: z.string().optional(),
    LOCK_BACKEND: z.enum(['memory', 'dynamodb', 'redis', 'mysql']).default('memory'),
    // Where an engine store (redis, mysql) keeps workspaces and, on Redis, archives
    // (lib/http/backends/blobs.ts): none, the S3 or OSS bucket above, or DATA_DIR (fs, local only).
    BLOB_BACKEND: z.enum(['none', 's3', 'oss', 'fs']).default('none'),
    // Redis (STORE_BACKEND=redis, LOCK_BACKEND=redis): one server, or the seed nodes of a Cluster.
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\/\S+$/, 'must be a redis:// or rediss:// URL')
      .optional(),
    REDIS_CLUSTER_NODES: redisNodes.optional(),
    // Or Sentinels and the name of the master they watch (REDIS_URL then gives only the password,
    // user, database and TLS of the data connections).
    REDIS_SENTINELS: redisNodes.optional(),
    REDIS_SENTINEL_NAME: z.string().regex(/^\S+$/, 'must be a master name (no spaces)').optional(),
    // Replicas that must acknowledge every write (WAIT after each mutating script); 0: none asked.
    REDIS_WAIT_REPLICAS: int(0, 64).default(0),
    // Unset: the engine's default (DEFAULT_WAIT_MS of lib/engines/redis/client.ts).
    REDIS_WAIT_MS: int(1, 60_000).optional(),
    // MySQL or MariaDB (STORE_BACKEND=mysql, LOCK_BACKEND=mysql): the database the schema is in.
    MYSQL_URL: z
      .string()
      .regex(
        /^mysql:\/\/[^\s/]+\/[A-Za-z_][A-Za-z0-9_]{0,63}(\?\S*)?$/,
        'must be a mysql://user:password@host:port/database URL (a database name of letters, digits and _)',
      )
      .optional(),
    LOCK_TABLE: z.string().optional(),
    DYNAMODB_ENDPOINT: z.url().optional(),
    DYNAMODB_REGION: z.string().optional(),
    LOCK_CLOCK_SKEW_MS: int(0, 60_000).default(DEFAULTS.lockClockSkewMs),
    // The local server's sweep (lib/lifecycle/sweep.ts): every this many minutes (fractions too); 0: off.
    SWEEP_INTERVAL_MINUTES: z.coerce
      .number()
      .min(0)
      .max(7 * 24 * 60)
      .default(60),
    AUTH_JWT_SECRET: z.string().optional(),
    AUTH_JWKS_URL: z.url().optional(),
    AUTH_ISSUER: z.string().optional(),
    AUTH_AUDIENCE: z.string().optional(),
    AUTH_USER_CLAIM: z.string().min(1).default('sub'),
    ALLOW_ANONYMOUS: bool.default(false),
    // Off when unset: no answer carries CORS headers and OPTIONS is answered as any other method.
    CORS_ORIGINS: corsOrigins.optional(),
    BODY_LIMIT_BYTES: int(1024, 32 * 1024 * 1024).default(DEFAULTS.bodyLimitBytes),
    PRESIGN_EXPIRES_SECONDS: int(60, 7 * 24 * 3600).default(DEFAULTS.presignExpiresSeconds),
    ARCHIVE_ENCODING: z.enum(['identity', 'gzip', 'br']).default(DEFAULTS.archiveEncoding),
    // `reference`: also keep each list's whole array as `<key>.list.json` (the reference's layout).
    LIST_JSON: z.enum(['off', 'reference']).default(DEFAULTS.listJson),
    // `true`: sessions written by the AgentScope reference's OSS store are adopted on first access.
    ADOPT_REFERENCE: bool.default(DEFAULTS.adoptReference),
    RESTORE_DAYS: int(1, 30).default(DEFAULTS.restoreDays),
    MAX_VALUE_BYTES: int(1024, 1024 * 1024 * 1024).default(DEFAULTS.maxValueBytes),
    MAX_BLOB_BYTES: int(1024, 4 * 1024 * 1024 * 1024).default(1024 * 1024 * 1024),
    LOG_LEVEL: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']).default(DEFAULTS.logLevel),
    // The Powertools conventions (logLevelOf says which level wins): given, they name the service,
    // the log level and the metrics' namespace.
    POWERTOOLS_SERVICE_NAME: z.string().min(1).default(DEFAULTS.serviceName),
    POWERTOOLS_LOG_LEVEL: upper(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT']).optional(),
    POWERTOOLS_METRICS_NAMESPACE: z.string().min(1).default(DEFAULTS.metricsNamespace),
    // Lambda's advanced logging controls set it; FATAL is Powertools' CRITICAL.
    AWS_LAMBDA_LOG_LEVEL: upper(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'])
      .transform((level) => (level === 'FATAL' ? 'CRITICAL' : level))
      .optional(),
    // Lambda only: X-Ray traces through Powertools Tracer (functions/aws/api.ts).
    TRACING: bool.default(false),
    // Set by the platforms themselves.
    AWS_LAMBDA_FUNCTION_NAME: z.string().optional(),
    FC_FUNCTION_NAME: z.string().optional(),
    ALIBABA_CLOUD_ACCESS_KEY_ID: z.string().optional(),
    ALIBABA_CLOUD_ACCESS_KEY_SECRET: z.string().optional(),
    ALIBABA_CLOUD_SECURITY_TOKEN: z.string().optional(),
  })
  .superRefine((c, ctx) => {
    const need = (name: keyof typeof c, why: string) => {
      if (!c[name]) ctx.addIssue({ code: 'custom', path: [name], message: `required ${why}` });
    };
    const cloud = Boolean(c.AWS_LAMBDA_FUNCTION_NAME || c.FC_FUNCTION_NAME);
    if (cloud && (c.STORE_BACKEND === 'fs' || c.STORE_BACKEND === 'memory')) {
      ctx.addIssue({
        code: 'custom',
        path: ['STORE_BACKEND'],
        message: 'fs and memory are refused on Lambda and Function Compute',
      });
    }
    if (cloud && c.LOCK_BACKEND === 'memory') {
      ctx.addIssue({
        code: 'custom',
        path: ['LOCK_BACKEND'],
        message: 'the in-process lock is refused on Lambda and Function Compute',
      });
    }
    if (c.STORE_BACKEND === 's3') need('S3_BUCKET', 'when STORE_BACKEND=s3');
    if (c.STORE_BACKEND === 'oss') {
      need('OSS_BUCKET', 'when STORE_BACKEND=oss');
      if (!c.OSS_REGION && !c.OSS_ENDPOINT) need('OSS_REGION', 'when STORE_BACKEND=oss (or OSS_ENDPOINT)');
    }
    if (c.LOCK_BACKEND === 'dynamodb') need('LOCK_TABLE', 'when LOCK_BACKEND=dynamodb');
    if (c.BLOB_BACKEND === 's3') need('S3_BUCKET', 'when BLOB_BACKEND=s3');
    if (c.BLOB_BACKEND === 'oss') {
      need('OSS_BUCKET', 'when BLOB_BACKEND=oss');
      if (!c.OSS_REGION && !c.OSS_ENDPOINT) need('OSS_REGION', 'when BLOB_BACKEND=oss (or OSS_ENDPOINT)');
    }
    if (cloud && c.BLOB_BACKEND === 'fs')
      ctx.addIssue({
        code: 'custom',
        path: ['BLOB_BACKEND'],
        message: 'fs is refused on Lambda and Function Compute',
      });
    const onRedis = c.STORE_BACKEND === 'redis' || c.LOCK_BACKEND === 'redis';
    if (onRedis && !c.REDIS_URL && !c.REDIS_CLUSTER_NODES && !c.REDIS_SENTINELS)
      need(
        'REDIS_URL',
        'when STORE_BACKEND or LOCK_BACKEND is redis (or REDIS_CLUSTER_NODES, or REDIS_SENTINELS)',
      );
    if (c.REDIS_SENTINELS) need('REDIS_SENTINEL_NAME', "with REDIS_SENTINELS (the master's name)");
    if (c.REDIS_SENTINEL_NAME) need('REDIS_SENTINELS', 'with REDIS_SENTINEL_NAME');
    if (c.REDIS_SENTINELS && c.REDIS_CLUSTER_NODES)
      ctx.addIssue({
        code: 'custom',
        path: ['REDIS_SENTINELS'],
        message: 'cannot be combined with REDIS_CLUSTER_NODES (a Cluster fails over by itself)',
      });
    if ((c.STORE_BACKEND === 'mysql' || c.LOCK_BACKEND === 'mysql') && !c.MYSQL_URL)
      need('MYSQL_URL', 'when STORE_BACKEND or LOCK_BACKEND is mysql');
    if (c.FC_FUNCTION_NAME)
      need('AUTH_JWKS_URL', 'on Function Compute (the function verifies the JWT itself)');
    if (!cloud && !c.ALLOW_ANONYMOUS)
      need('AUTH_JWT_SECRET', 'for the local server (or ALLOW_ANONYMOUS=true)');
  });

/** The validated configuration. */
export type Config = Readonly<z.infer<typeof schema>>;

/** The environment was refused: one line per bad variable (never its value, which may be a secret). */
export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
  }
}

/** Reads and validates the environment; throws a `ConfigError` naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const defined = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(defined);
  if (!parsed.success) {
    const byVariable = new Map<string, string[]>();
    for (const issue of parsed.error.issues) {
      const name = issue.path.join('.');
      byVariable.set(name, [...(byVariable.get(name) ?? []), issue.message]);
    }
    throw new ConfigError([...byVariable].map(([name, messages]) => `${name}: ${messages.join('; ')}`));
  }
  return Object.freeze(parsed.data);
}

/**
 * The configuration of an entry point: on a `ConfigError`, one readable line per variable on
 * stderr and exit status 1 (no stack trace into a minified bundle).
 */
export function loadConfigOrExit(env: Record<string, string | undefined> = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const line of error.problems) console.error(`invalid configuration: ${line}`);
    process.exit(1);
  }
}

/** What configures a backend resource, for the log line of a missing bucket or table or refused credentials. */
export function configuredBy(config: Config, backend: string, resource: BackendResource): string {
  if (backend === 'redis')
    return resource === 'credentials'
      ? 'the password in REDIS_URL'
      : config.REDIS_SENTINELS
        ? 'REDIS_SENTINELS / REDIS_SENTINEL_NAME'
        : config.REDIS_CLUSTER_NODES
          ? 'REDIS_CLUSTER_NODES'
          : 'REDIS_URL';
  if (backend === 'mysql')
    return resource === 'credentials' ? 'the user and password in MYSQL_URL' : "MYSQL_URL's database";
  if (resource === 'credentials') {
    return backend === 'oss'
      ? 'OSS_ACCESS_KEY_ID / OSS_ACCESS_KEY_SECRET / OSS_STS_TOKEN (or the function role)'
      : 'the AWS credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or the function role)';
  }
  const name = resource === 'table' ? 'LOCK_TABLE' : backend === 'oss' ? 'OSS_BUCKET' : 'S3_BUCKET';
  return `${name}=${config[name] ?? '(unset)'}`;
}

/** A level the logger takes. */
export type LogLevel = 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'CRITICAL' | 'SILENT';

/**
 * The log level: Lambda's `AWS_LAMBDA_LOG_LEVEL` (its advanced logging controls drop anything below
 * it anyway), then `POWERTOOLS_LOG_LEVEL`, then the project's `LOG_LEVEL`, then `DEFAULTS.logLevel`.
 */
export function logLevelOf(config: Config): LogLevel {
  return config.AWS_LAMBDA_LOG_LEVEL ?? config.POWERTOOLS_LOG_LEVEL ?? config.LOG_LEVEL;
}

/**
 * Whether the store and the lock are engines of their own (lib/engines/<name>/: Redis, MySQL), made
 * by lib/http/backends/engines.ts, rather than the object store's driver and a lock of lib/lock/.
 */
export function enginesOf(config: Config): { readonly store: boolean; readonly lock: boolean } {
  const engine = (backend: string) => backend === 'redis' || backend === 'mysql';
  return { store: engine(config.STORE_BACKEND), lock: engine(config.LOCK_BACKEND) };
}

/** Where the code runs. */
export function platformOf(config: Config): 'aws' | 'fc' | 'local' {
  if (config.AWS_LAMBDA_FUNCTION_NAME) return 'aws';
  if (config.FC_FUNCTION_NAME) return 'fc';
  return 'local';
}
