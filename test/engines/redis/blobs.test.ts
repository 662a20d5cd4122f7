/**
 * Redis with a blob store (docs/DESIGN.md, "What lives where"): BLOB_BACKEND=fs (the local
 * server's DATA_DIR) and BLOB_BACKEND=s3 (s3rver behind the S3 front) keep workspaces and
 * workspace snapshots, through the same routes and client as on object storage; another user stays
 * isolated; BLOB_BACKEND=none answers 501 `unsupported` naming it.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../lib/config.js';
import { createS3Client } from '../../../lib/drivers/s3.js';
import type { ObjectStoreDriver } from '../../../lib/drivers/types.js';
import { checkRedisServer, loadScripts } from '../../../lib/engines/redis/client.js';
import { bootstrap, bucketBackendOf } from '../../../lib/lifecycle/bootstrap.js';
import { layoutFor } from '../../../lib/store/layout.js';
import { startLocalBackends } from '../../servers/local-backends.js';
import { startRedis } from '../../servers/redis.js';
import {
  type EngineWithBlobs,
  redisArchivesInBlobs,
  refusedWithoutBlobs,
  sid,
  snapshotRoundTrip,
  startEngineWithBlobs,
  workspaceRoundTrip,
} from '../blob-harness.js';

let redis: Awaited<ReturnType<typeof startRedis>>;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(() => redis.close());

/** The keys of the Redis server matching a pattern. */
const keysOf = async (pattern: string) => {
  const client = new Redis(redis.url);
  try {
    return await client.keys(pattern);
  } finally {
    client.disconnect();
  }
};

const onRedis = { STORE_BACKEND: 'redis', LOCK_BACKEND: 'redis' };

describe('Redis with BLOB_BACKEND=fs', () => {
  let api: EngineWithBlobs;
  beforeAll(async () => {
    api = await startEngineWithBlobs({ ...onRedis, REDIS_URL: redis.url, BLOB_BACKEND: 'fs' });
  });
  afterAll(() => api.close());

  it("keeps a list's archives in the blob store, read back there, nothing of them in RAM", () =>
    redisArchivesInBlobs(api, keysOf));

  it('uploads and downloads a workspace, isolated from another user, deleted with its session', () =>
    workspaceRoundTrip(api));
  it('pushes and pulls a workspace snapshot', () => snapshotRoundTrip(api));
});

describe('Redis with BLOB_BACKEND=s3 (s3rver behind the S3 front)', () => {
  let api: EngineWithBlobs;
  let stop: () => Promise<void>;
  let endpoint = '';
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
  beforeAll(async () => {
    const bucket = 'engine-blobs';
    const local = await startLocalBackends(bucket);
    endpoint = local.s3Front.endpoint;
    // s3rver's own key pair, read by the SDK's default credentials (s3DriverFrom passes none).
    process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
    process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
    api = await startEngineWithBlobs({
      ...onRedis,
      REDIS_URL: redis.url,
      BLOB_BACKEND: 's3',
      S3_BUCKET: bucket,
      S3_ENDPOINT: endpoint,
      S3_REGION: 'us-east-1',
    });
    stop = async () => {
      await api.close();
      await local.stop();
      process.env.AWS_ACCESS_KEY_ID = saved.id;
      process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
    };
  });
  afterAll(() => stop());

  it('uploads and downloads a workspace, isolated from another user, deleted with its session', () =>
    workspaceRoundTrip(api));
  it('pushes and pulls a workspace snapshot', () => snapshotRoundTrip(api));
  it("keeps a list's archives in the blob store, read back there, nothing of them in RAM", () =>
    redisArchivesInBlobs(api, keysOf));

  it('npm run bootstrap creates the blob bucket (the bucket step of STORE_BACKEND=s3)', async () => {
    const client = createS3Client({ endpoint, region: 'us-east-1' });
    try {
      const config = loadConfig({
        ...onRedis,
        REDIS_URL: redis.url,
        BLOB_BACKEND: 's3',
        S3_BUCKET: 'engine-blobs-new',
        S3_ENDPOINT: endpoint,
        ALLOW_ANONYMOUS: 'true',
      });
      expect(bucketBackendOf(config)).toBe('s3');
      const onServer = new Redis(redis.url);
      // The Redis step checks the server and loads the scripts, as the server's would.
      const redisStep = { check: () => checkRedisServer(onServer), loadScripts: () => loadScripts(onServer) };
      try {
        const steps = await bootstrap({ config, clients: { s3: client, redis: redisStep } });
        expect(steps[0]).toEqual({ step: 'bucket s3://engine-blobs-new', status: 'created' });
        const again = await bootstrap({ config, clients: { s3: client, redis: redisStep } });
        expect(again[0]).toEqual({ step: 'bucket s3://engine-blobs-new', status: 'already there' });
        // Without a blob bucket, the step is skipped.
        const none = await bootstrap({
          config: { ...config, BLOB_BACKEND: 'none' },
          clients: { redis: redisStep },
        });
        expect(none[0]?.status).toBe('skipped');
      } finally {
        onServer.disconnect();
      }
    } finally {
      client.destroy();
    }
  });
});

describe('Redis with BLOB_BACKEND=fs and a keep-alive of 1 s', () => {
  let api: EngineWithBlobs;
  beforeAll(async () => {
    api = await startEngineWithBlobs({
      ...onRedis,
      REDIS_URL: redis.url,
      BLOB_BACKEND: 'fs',
      KEEPALIVE_MS: '1000',
    });
  });
  afterAll(() => api.close());

  it("an engine write past the interval keeps the blob side's session alive; a read does not", async () => {
    const alice = api.client('alice');
    const s = sid();
    await alice.save(s, 'k', 1);
    await alice.uploadWorkspace(s, 'w', new Uint8Array(10), { encoding: 'identity' });
    const marker = layoutFor(api.prefix, 'alice').marker(s);
    const driver = api.blobDriver as ObjectStoreDriver;
    const before = (await driver.head(marker)).lastModified.getTime();
    await new Promise((r) => setTimeout(r, 1100));
    await alice.get(s, 'k');
    expect((await driver.head(marker)).lastModified.getTime()).toBe(before);
    await alice.save(s, 'k', 2);
    expect((await driver.head(marker)).lastModified.getTime()).toBeGreaterThan(before);
    expect((await alice.listWorkspaces(s)).map((w) => w.name)).toEqual(['w']);
  });
});

describe('Redis with BLOB_BACKEND=none', () => {
  let api: EngineWithBlobs;
  beforeAll(async () => {
    api = await startEngineWithBlobs({ ...onRedis, REDIS_URL: redis.url });
  });
  afterAll(() => api.close());

  it('answers the blob routes 501 unsupported naming BLOB_BACKEND, never a 500', () =>
    refusedWithoutBlobs(api));
});
