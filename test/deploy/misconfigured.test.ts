/**
 * A deployment that is wrong says so: a missing bucket or lock table, or refused credentials, is
 * 503 `backend-misconfigured` without Retry-After (no retry helps) and one ERROR line per request
 * naming the resource, who the backend refused and the variable that configures it; a bad
 * environment is one line per variable and exit status 1. (A bucket that refuses writes,
 * AccessDenied, runs against Ceph RGW in test/deploy/bootstrap.test.ts.)
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../../lib/config.js';
import type { SessionLock } from '../../lib/contract/lock.js';
import { createOssDriver } from '../../lib/drivers/oss.js';
import { createS3Driver } from '../../lib/drivers/s3.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { createDynamoDbLock, createLockTable } from '../../lib/lock/dynamodb.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { type ApiHarness, apiGatewayHarness, functionComputeHarness, nodeHarness } from '../http/harness.js';
import { OSS_CREDENTIALS } from '../servers/global-setup.js';

const servers = () => inject('servers');
const run = promisify(execFile);

let api: ApiHarness | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

/**
 * The local server over `driver` and `lock` (configured with `env`), the ERROR lines its logger
 * writes, and one write, one read and one lease.
 */
async function attempt(
  driver: ObjectStoreDriver,
  lock: SessionLock = createMemoryLock(),
  env: Record<string, string> = {},
) {
  api = await nodeHarness({ driver, lock }, env);
  const errors = vi.spyOn(api.app.logger, 'error');
  const write = await api.call('alice', 'PUT', '/v1/sessions/s/state/plan', { body: '{"a":1}' });
  const read = await api.call('alice', 'GET', '/v1/sessions/s/state/plan');
  const lease = await api.call('alice', 'POST', '/v1/sessions/s/lock', { body: '{}' });
  return { write, read, lease, lines: errors.mock.calls.map((call) => String(call[0])) };
}

const expectMisconfigured = (answer: {
  status: number;
  json: () => unknown;
  headers: Record<string, string>;
}) => {
  expect(answer.status).toBe(503);
  expect(answer.json()).toMatchObject({ code: 'backend-misconfigured' });
  expect(answer.headers['retry-after']).toBeUndefined();
  // The caller learns that the deployment is wrong, not which bucket or whose credentials.
  expect(JSON.stringify(answer.json())).not.toMatch(/no-such|S3RV|credentials:/);
};

describe('a missing or refused backend resource', () => {
  it('S3: a bucket that does not exist', async () => {
    const driver = createS3Driver({
      bucket: 'no-such-bucket',
      endpoint: servers().s3,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    const { write, read, lines } = await attempt(driver, undefined, { S3_BUCKET: 'no-such-bucket' });
    expectMisconfigured(write);
    expectMisconfigured(read);
    expect(lines).toEqual([
      's3 bucket no-such-bucket does not exist (NoSuchBucket); credentials: access key id S3RV…: check S3_BUCKET=no-such-bucket',
      's3 bucket no-such-bucket does not exist (NoSuchBucket); credentials: access key id S3RV…: check S3_BUCKET=no-such-bucket',
    ]);
  });

  it('S3: credentials that are refused', async () => {
    const driver = createS3Driver({
      bucket: servers().bucket,
      endpoint: servers().s3,
      credentials: { accessKeyId: 'NOT-A-KEY', secretAccessKey: 'nope' },
    });
    const { write, read, lines } = await attempt(driver);
    expectMisconfigured(write);
    expectMisconfigured(read);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^s3 refused the credentials \(InvalidAccessKeyId\); credentials: access key id NOT-…: check .*AWS_ACCESS_KEY_ID/,
    );
  });

  it('OSS: a bucket that does not exist, and a wrong secret', async () => {
    const missing = createOssDriver({
      bucket: 'no-such-bucket',
      endpoint: servers().oss,
      ...OSS_CREDENTIALS,
    });
    const first = await attempt(missing, undefined, { OSS_BUCKET: 'no-such-bucket' });
    expectMisconfigured(first.write);
    expect(first.lines[0]).toMatch(
      /^oss bucket no-such-bucket does not exist \(NoSuchBucket\); credentials: access key id .+: check OSS_BUCKET=no-such-bucket$/,
    );
    await api?.close();
    const refused = createOssDriver({
      bucket: servers().bucket,
      endpoint: servers().oss,
      accessKeyId: OSS_CREDENTIALS.accessKeyId,
      accessKeySecret: 'wrong',
    });
    const second = await attempt(refused);
    expectMisconfigured(second.write);
    expectMisconfigured(second.read);
    expect(second.lines[0]).toMatch(/oss refused the credentials .*OSS_ACCESS_KEY_SECRET/);
    expect(second.lines.join('\n')).not.toContain('wrong');
  });

  it('DynamoDB: a lock table that does not exist', async () => {
    const lock = createDynamoDbLock({
      tableName: 'no-such-table',
      endpoint: servers().dynamodb,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const { lease, lines } = await attempt(
      createS3Driver({
        bucket: servers().bucket,
        endpoint: servers().s3,
        credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      }),
      lock,
      { LOCK_TABLE: 'no-such-table' },
    );
    expectMisconfigured(lease);
    expect(lines).toEqual([
      'dynamodb lock table no-such-table does not exist (ResourceNotFoundException); credentials: access key id loca…: check LOCK_TABLE=no-such-table',
    ]);
  });
});

describe('GET /v1/ready on real protocols, through each adapter', () => {
  const s3 = (bucket: string) =>
    createS3Driver({
      bucket,
      endpoint: servers().s3,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
  const dynamo = async (tableName: string, create: boolean) => {
    const client = new DynamoDBClient({
      endpoint: servers().dynamodb,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    if (create) await createLockTable(client, tableName);
    return createDynamoDbLock({ tableName, client });
  };

  for (const make of [nodeHarness, apiGatewayHarness, functionComputeHarness]) {
    it(`${make.name}: ready on s3rver and dynalite; a missing bucket names the store, a missing table the lock, both 503 backend-misconfigured without Retry-After`, async () => {
      const table = `ready-${randomUUID()}`;
      api = await make({ driver: s3(servers().bucket), lock: await dynamo(table, true) });
      const ok = await api.call(null, 'GET', '/v1/ready');
      expect([ok.status, ok.json()]).toEqual([200, { status: 'ok' }]);
      await api.close();
      for (const [driver, lock, dependency] of [
        [s3('no-such-bucket'), await dynamo(table, false), 'store'],
        [s3(servers().bucket), await dynamo('no-such-table', false), 'lock'],
      ] as const) {
        api = await make({ driver, lock });
        const errors = vi.spyOn(api.app.logger, 'error');
        const answer = await api.call(null, 'GET', '/v1/ready');
        expectMisconfigured(answer);
        expect((answer.json() as { dependency: string }).dependency).toBe(dependency);
        // The log says which resource.
        expect(
          String(errors.mock.calls[0]?.[0] ?? '') + JSON.stringify(errors.mock.calls[0]?.[1] ?? {}),
        ).toMatch(dependency === 'store' ? /no-such-bucket/ : /no-such-table/);
        await api.close();
      }
      api = undefined;
    });
  }
});

describe('a bad environment', () => {
  it('is one readable line per variable, never a value', () => {
    const refuse = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as ConfigError).problems;
      }
      throw new Error('accepted');
    };
    const problems = refuse({
      PORT: 'eighty',
      STORE_BACKEND: 'oss',
      OSS_BUCKET: 'My_Bucket',
      OSS_REGION: 'oss-cn-hangzhou',
      OSS_ACCESS_KEY_SECRET: 'secret-value',
      ALLOW_ANONYMOUS: 'true',
    });
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^PORT: /);
    expect(problems[1]).toMatch(/^OSS_BUCKET: an OSS bucket name is 3 to 63 lowercase letters/);
    expect(problems.join('\n')).not.toMatch(/My_Bucket|eighty|secret-value/);
    for (const name of ['ab', '-abc', 'abc-', 'a'.repeat(64), 'UPPER']) {
      expect(refuse({ OSS_BUCKET: name, ALLOW_ANONYMOUS: 'true' })[0], name).toMatch(/^OSS_BUCKET: /);
    }
    expect(loadConfig({ OSS_BUCKET: 'agent-state-1', ALLOW_ANONYMOUS: 'true' }).OSS_BUCKET).toBe(
      'agent-state-1',
    );
  });

  it('stops the built local server with exit status 1 and no stack trace', async () => {
    await run('node', ['scripts/build.mjs', 'local/server']);
    const failed = await run('node', ['dist/local/server.mjs'], {
      env: { ...process.env, NODE_OPTIONS: '', PORT: 'eighty', KEEPALIVE_MS: '5', ALLOW_ANONYMOUS: 'true' },
    }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(1);
    const lines = (failed?.stderr ?? '').trim().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(/^invalid configuration: PORT: /),
      expect.stringMatching(/^invalid configuration: KEEPALIVE_MS: /),
    ]);
  });
});
