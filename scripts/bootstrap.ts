/**
 * `npm run bootstrap`: creates the bucket (private, encrypted, with the lifecycle rules) and the
 * DynamoDB lock table that the environment names, as the functions read it (STORE_BACKEND, S3_* or
 * OSS_*, S3_DIALECT, LOCK_BACKEND, LOCK_TABLE, DYNAMODB_*, the lifecycle deployment parameters,
 * STATE_PREFIX), idempotently, and ends by writing, reading and deleting one probe object under
 * STATE_PREFIX through the driver the functions use (lib/store/write-check.ts); prints one line per
 * step (lib/lifecycle/bootstrap.ts) and a last line saying whether anything changed. Exit status 1
 * when a step fails, after the lines of the steps before it.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type Config, loadConfigOrExit } from '../lib/config.js';
import { createOssClient, createOssDriver } from '../lib/drivers/oss.js';
import { createS3Client, createS3Driver } from '../lib/drivers/s3.js';
import type { ObjectStoreDriver } from '../lib/drivers/types.js';
import { connectMysql, type MysqlConnection } from '../lib/engines/mysql/index.js';
import { checkRedisServer, loadScripts, type RedisClient } from '../lib/engines/redis/index.js';
import { ossOptionsFrom } from '../lib/http/backends/aliyun.js';
import { redisEngineOf } from '../lib/http/backends/engines.js';
import {
  type BootstrapClients,
  BootstrapError,
  bootstrap,
  bucketBackendOf,
  deployedLifecycle,
  formatStep,
  summarize,
} from '../lib/lifecycle/bootstrap.js';
import { DeploymentParameterError } from '../lib/lifecycle/deployment.js';
import { writeReadDelete } from '../lib/store/write-check.js';

// Bootstrap serves no requests: the local server's authentication settings do not apply to it.
const config = loadConfigOrExit({ ...process.env, ALLOW_ANONYMOUS: 'true' });

/** The clients of the configured backends, built as the functions build theirs (lib/http/backends/). */
function clientsFor(
  c: Config,
  mysql: MysqlConnection | undefined,
  redis: RedisClient | undefined,
): BootstrapClients {
  // The object store's bucket, or an engine store's blob bucket (BLOB_BACKEND).
  const bucket = bucketBackendOf(c);
  return {
    ...(bucket === 's3' ? { s3: createS3Client({ endpoint: c.S3_ENDPOINT, region: c.S3_REGION }) } : {}),
    ...(bucket === 'oss'
      ? {
          oss: createOssClient(ossOptionsFrom(c)),
        }
      : {}),
    ...(c.LOCK_BACKEND === 'dynamodb'
      ? {
          dynamodb: new DynamoDBClient({
            region: c.DYNAMODB_REGION ?? process.env.AWS_REGION ?? 'us-east-1',
            ...(c.DYNAMODB_ENDPOINT ? { endpoint: c.DYNAMODB_ENDPOINT } : {}),
          }),
        }
      : {}),
    ...(mysql ? { mysql } : {}),
    ...(redis
      ? { redis: { check: () => checkRedisServer(redis), loadScripts: () => loadScripts(redis) } }
      : {}),
  };
}

/** The driver the functions write through (lib/http/backends/), on bootstrap's own client. */
function driverFor(c: Config, clients: BootstrapClients): ObjectStoreDriver | undefined {
  if (clients.s3)
    return createS3Driver({ bucket: c.S3_BUCKET as string, client: clients.s3, dialect: c.S3_DIALECT });
  if (clients.oss) return createOssDriver({ ...ossOptionsFrom(c), client: clients.oss });
  return undefined;
}

const where = {
  s3: `S3_BUCKET=${config.S3_BUCKET}${config.S3_ENDPOINT ? ` at ${config.S3_ENDPOINT}` : ''}`,
  oss: `OSS_BUCKET=${config.OSS_BUCKET} at ${config.OSS_ENDPOINT ?? config.OSS_REGION}`,
  fs: `DATA_DIR=${config.DATA_DIR}`,
  memory: 'in memory',
  // Nothing to create: the server is checked and the scripts loaded (else loaded on first use).
  redis: config.REDIS_SENTINELS
    ? `REDIS_SENTINELS, master ${config.REDIS_SENTINEL_NAME}`
    : config.REDIS_CLUSTER_NODES
      ? 'REDIS_CLUSTER_NODES'
      : 'REDIS_URL',
  // The tables (CREATE TABLE IF NOT EXISTS); the server verifies them at start and in GET /v1/ready.
  mysql: `MYSQL_URL at ${config.MYSQL_URL ? new URL(config.MYSQL_URL).host : '(unset)'}`,
}[config.STORE_BACKEND];
const lock =
  config.LOCK_BACKEND === 'dynamodb'
    ? `LOCK_TABLE=${config.LOCK_TABLE}${config.DYNAMODB_ENDPOINT ? ` at ${config.DYNAMODB_ENDPOINT}` : ''}`
    : config.LOCK_BACKEND === 'mysql'
      ? 'leases in the MySQL schema'
      : config.LOCK_BACKEND === 'redis'
        ? 'leases in Redis'
        : 'in-process';
console.log(
  `bootstrap: STORE_BACKEND=${config.STORE_BACKEND} (${where}), LOCK_BACKEND=${config.LOCK_BACKEND} (${lock})`,
);

const mysql =
  config.STORE_BACKEND === 'mysql' || config.LOCK_BACKEND === 'mysql'
    ? connectMysql({ url: config.MYSQL_URL as string })
    : undefined;
// The engine as the server makes it (its scripts defined on the client, to be loaded).
const redis =
  config.STORE_BACKEND === 'redis' || config.LOCK_BACKEND === 'redis'
    ? redisEngineOf(config, { count: () => {} }).client
    : undefined;
const clients = clientsFor(config, mysql, redis);
const driver = driverFor(config, clients);
try {
  const backend = bucketBackendOf(config) === 'oss' ? 'oss' : 's3';
  const steps = await bootstrap({
    config,
    clients,
    lifecycle: deployedLifecycle(backend),
    ...(driver ? { writeCheck: () => writeReadDelete(driver, config.STATE_PREFIX) } : {}),
    onStep: (step) => console.log(formatStep(step)),
  });
  console.log(`bootstrap: ${summarize(steps)}`);
} catch (error) {
  if (!(error instanceof BootstrapError || error instanceof DeploymentParameterError)) throw error;
  console.error(`bootstrap failed: ${error.message}`);
  process.exitCode = 1;
} finally {
  clients.s3?.destroy();
  clients.dynamodb?.destroy();
  await mysql?.close();
  redis?.disconnect();
}
