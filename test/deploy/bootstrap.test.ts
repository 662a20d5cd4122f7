/**
 * `npm run bootstrap` (lib/lifecycle/bootstrap.ts, scripts/bootstrap.ts) against the S3 front
 * (s3rver), Ceph RGW (when the tier runs), the OSS front and dynalite, each on a bucket and table of
 * its own: the first run creates what is missing and the state read back from the server is what
 * was asked for (the bucket private, the rendered lifecycle rules, encryption where the endpoint
 * has it, the table with the lock's key schema, usable by the lock); the second run sends no write
 * and says nothing changed; what an endpoint lacks is reported as skipped with its reason. The TTL
 * and ACTIVE-wait paths dynalite cannot show run against a stub DynamoDB client.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CreateBucketCommand,
  GetBucketAclCommand,
  GetBucketLifecycleConfigurationCommand,
  GetPublicAccessBlockCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  PutPublicAccessBlockCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import OSS from 'ali-oss';
import { beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { DEFAULTS } from '../../lib/contract/defaults.js';
import { createOssDriver } from '../../lib/drivers/oss.js';
import { createS3Client, createS3Driver } from '../../lib/drivers/s3.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import {
  BootstrapError,
  type BootstrapOptions,
  type BootstrapStep,
  bootstrap,
  changesOf,
  comparableOssRules,
  comparableS3Rules,
  deployedLifecycle,
  formatStep,
  NOT_SUPPORTED,
  RGW_BLOCK_PUBLIC_ACLS,
  summarize,
} from '../../lib/lifecycle/bootstrap.js';
import { DeploymentParameterError } from '../../lib/lifecycle/deployment.js';
import { lifecycleRules, renderOss, renderS3 } from '../../lib/lifecycle/index.js';
import { createDynamoDbLock, LOCK_TABLE_KEY } from '../../lib/lock/dynamodb.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { probeNames } from '../../lib/store/layout.js';
import { writeReadDelete } from '../../lib/store/write-check.js';
import { onTier } from '../backends.js';
import { nodeHarness } from '../http/harness.js';
import { OSS_CREDENTIALS } from '../servers/global-setup.js';
import { xmlValues } from '../servers/http-util.js';

const run = promisify(execFile);
const servers = inject('servers');
const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const unique = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

/** The write check the script gives (lib/store/write-check.ts) on `driver`, under the default prefix. */
const checkOn = (driver: ObjectStoreDriver) => () => writeReadDelete(driver, DEFAULTS.prefix);
/** Matches the write check's line of a bucket: its probe object named as the backend probe's. */
const checkedLine = (where: string) =>
  expect.stringMatching(
    new RegExp(
      `^PutObject, GetObject, DeleteObject of ${where}/${probeNames.pattern(DEFAULTS.prefix).source.slice(1)}`,
    ),
  );

/** The environment of one deployment: the variables the functions read (lib/config.ts). */
function configOf(env: Record<string, string>) {
  return loadConfig({ ALLOW_ANONYMOUS: 'true', ...env });
}

/** A DynamoDB client of dynalite that records the operations it sends. */
function dynamo() {
  const client = new DynamoDBClient({
    endpoint: servers.dynamodb,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  return { client, sent: recordCommands(client) };
}

/** An SDK client's initialize step, typed loosely enough for both clients. */
type Initialize = (
  next: (args: unknown) => Promise<unknown>,
  context: { commandName?: string },
) => (args: unknown) => Promise<unknown>;

/** Records the name of every command an SDK client sends (SDK middleware, before signing). */
function recordCommands(client: S3Client | DynamoDBClient): string[] {
  const sent: string[] = [];
  const stack = client.middlewareStack as unknown as {
    add(middleware: Initialize, options: { step: 'initialize'; name: string }): void;
  };
  stack.add(
    (next, context) => (args) => {
      sent.push(String(context.commandName).replace(/Command$/, ''));
      return next(args);
    },
    { step: 'initialize', name: 'recordCommands' },
  );
  return sent;
}

/** An ali-oss client of the OSS front that records each request it sends (`METHOD ?subresource`). */
function ossClient(bucket: string) {
  const client = new OSS({
    endpoint: servers.oss,
    bucket,
    sldEnable: true,
    secure: false,
    ...OSS_CREDENTIALS,
  } as OSS.Options);
  const sent: string[] = [];
  const inner = client as unknown as {
    request(params: { method: string; subres?: unknown }): Promise<unknown>;
  };
  const request = inner.request.bind(client);
  inner.request = (params) => {
    sent.push(`${params.method} ${typeof params.subres === 'string' ? params.subres : ''}`.trim());
    return request(params);
  };
  return { client, sent };
}

const byStep = (steps: readonly BootstrapStep[]) => Object.fromEntries(steps.map((s) => [s.step, s]));
const statuses = (steps: readonly BootstrapStep[]) =>
  Object.fromEntries(steps.map((s) => [s.step, s.status]));
/** What an SDK command name says about writing: every call bootstrap makes is Get*, Head* or Describe* when it only reads. */
const writes = (sent: readonly string[]) => sent.filter((name) => !/^(Get|Head|Describe)/.test(name));

/** Asserts the table exists with the lock's key schema and that the lock works on it. */
async function assertLockTable(client: DynamoDBClient, table: string) {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
  expect(Table?.TableStatus).toBe('ACTIVE');
  expect(Table?.KeySchema).toEqual([{ AttributeName: LOCK_TABLE_KEY, KeyType: 'HASH' }]);
  expect(Table?.AttributeDefinitions).toEqual([{ AttributeName: LOCK_TABLE_KEY, AttributeType: 'S' }]);
  const lock = createDynamoDbLock({ client, tableName: table });
  const lease = await lock.acquire({ userId: 'u', sessionId: 's' });
  expect(lease.token).toBeGreaterThan(0);
  await lock.release({ userId: 'u', sessionId: 's' }, lease.owner, lease.token);
}

describe.runIf(onTier('deploy'))('bootstrap: reporting', () => {
  it('one line per step, the reason of a skip after it; the summary counts changes', () => {
    const steps: BootstrapStep[] = [
      { step: 'bucket s3://b', status: 'created' },
      { step: 'SSE', status: 'applied', detail: 'AES256 (SSE-S3)' },
      {
        step: 'TTL',
        status: 'skipped',
        detail: `${NOT_SUPPORTED} (UpdateTimeToLive: UnknownOperationException)`,
      },
      { step: 'ACL', status: 'already there', detail: 'private' },
    ];
    expect(steps.map(formatStep)).toEqual([
      'bucket s3://b: created',
      'SSE: applied (AES256 (SSE-S3))',
      'TTL: skipped: not supported by this endpoint (UpdateTimeToLive: UnknownOperationException)',
      'ACL: already there (private)',
    ]);
    expect(summarize(steps)).toBe('2 changed (1 already there, 1 skipped)');
    expect(summarize(steps.slice(2))).toBe('nothing changed (1 already there, 1 skipped)');
  });

  it('the lifecycle settings are the deployment parameters, refused with the parameter name', () => {
    const settings = deployedLifecycle('s3', { RETENTION_DAYS: '7', STATE_PREFIX: 'p/' });
    expect(settings).toMatchObject({ retentionDays: 7, stateGraceDays: 2, prefix: 'p/' });
    expect(() =>
      deployedLifecycle('s3', { ARCHIVE_STORAGE_CLASS: 'STANDARD_IA', ARCHIVE_TRANSITION_DAYS: '10' }),
    ).toThrow(DeploymentParameterError);
    expect(() => deployedLifecycle('oss', { KEEPALIVE_MS: String(2 * 86_400_000) })).toThrow(/keepAliveMs/);
  });

  it('compares rules by what they do: the RGW form of a tag filter equals the AWS form', () => {
    const rendered = renderS3(lifecycleRules('s3')).Rules;
    const rgwForm = rendered.map((r) => {
      const and = 'And' in r.Filter ? r.Filter.And : undefined;
      // RGW answers one tag as `Tag`; a rule of two tags (the packs' kind and gc) keeps `And`.
      return and && and.Tags.length === 1 ? { ...r, Filter: { Prefix: and.Prefix, Tag: and.Tags[0] } } : r;
    });
    expect(comparableS3Rules(rgwForm)).toEqual(comparableS3Rules(rendered));
    const longer = rendered.map((r) => (r.ID === 'session-state' ? { ...r, Expiration: { Days: 33 } } : r));
    expect(comparableS3Rules(longer)).not.toEqual(comparableS3Rules(rendered));
    // ali-oss reads numbers back as text.
    const oss = renderOss(lifecycleRules('oss'));
    const asRead = JSON.parse(JSON.stringify(oss).replace(/:(\d+)/g, ':"$1"'));
    expect(comparableOssRules(asRead)).toEqual(comparableOssRules(oss));
  });
});

describe.runIf(onTier('deploy'))('bootstrap: the S3 front (s3rver) and dynalite', () => {
  it('creates the bucket, its rules and the lock table, then checks a write; a second run writes nothing but the check; what s3rver and dynalite lack is skipped', async () => {
    // Prepare
    const bucket = unique('boot-s3');
    const table = unique('boot-locks');
    const env = {
      STORE_BACKEND: 's3',
      S3_BUCKET: bucket,
      S3_ENDPOINT: servers.s3,
      LOCK_BACKEND: 'dynamodb',
      LOCK_TABLE: table,
      DYNAMODB_ENDPOINT: servers.dynamodb,
      RETENTION_DAYS: '9',
    };
    const s3 = createS3Client({ endpoint: servers.s3, credentials: S3RVER_CREDENTIALS });
    const s3Sent = recordCommands(s3);
    const db = dynamo();
    const options: BootstrapOptions = {
      config: configOf(env),
      clients: { s3, dynamodb: db.client },
      lifecycle: deployedLifecycle('s3', env),
      writeCheck: checkOn(createS3Driver({ bucket, client: s3 })),
    };

    // Act
    const first = await bootstrap(options);

    // Assess: what it says
    expect(statuses(first)).toEqual({
      [`bucket s3://${bucket}`]: 'created',
      'Block Public Access': 'skipped',
      ACL: 'skipped',
      SSE: 'skipped',
      lifecycle: 'applied',
      [`lock table ${table}`]: 'created',
      TTL: 'skipped',
      'write check': 'checked',
    });
    const said = byStep(first);
    expect(said['write check']?.detail).toEqual(checkedLine(`s3://${bucket}`));
    expect(first.at(-1)?.step).toBe('write check');
    expect(said['Block Public Access']?.detail).toBe(
      `${NOT_SUPPORTED} (GetPublicAccessBlock: NotImplemented, HTTP 501)`,
    );
    expect(said.ACL?.detail).toBe(`${NOT_SUPPORTED} (GetBucketAcl: NotImplemented, HTTP 501)`);
    expect(said.SSE?.detail).toBe(`${NOT_SUPPORTED} (GetBucketEncryption: NotImplemented, HTTP 501)`);
    expect(said.TTL?.detail).toBe(`${NOT_SUPPORTED} (UpdateTimeToLive: UnknownOperationException, HTTP 400)`);
    expect(formatStep(said.TTL as BootstrapStep)).toMatch(/^TTL: skipped: not supported by this endpoint/);

    // Assess: what the servers hold (the check's object is gone)
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).KeyCount).toBe(0);
    const stored = await (await fetch(`${servers.s3}/${bucket}?lifecycle`)).text();
    const rendered = renderS3(lifecycleRules('s3', { retentionDays: 9 })).Rules;
    expect(xmlValues(stored, 'ID')).toEqual(rendered.map((r) => r.ID));
    expect(xmlValues(stored, 'Days').map(Number)).toEqual([9, 11, 365, 30, 180, 30, 7]);
    const { Rules } = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }));
    expect(comparableS3Rules(Rules ?? [])).toEqual(comparableS3Rules(rendered));
    await assertLockTable(db.client, table);

    // Act: again
    s3Sent.length = 0;
    db.sent.length = 0;
    const second = await bootstrap(options);

    // Assess: nothing written but the check's object (written, read, deleted), and it says so
    expect(statuses(second)).toEqual({
      ...statuses(first),
      [`bucket s3://${bucket}`]: 'already there',
      lifecycle: 'already there',
      [`lock table ${table}`]: 'already there',
    });
    expect(changesOf(second)).toEqual([]);
    expect(summarize(second)).toBe('nothing changed (3 already there, 1 checked, 4 skipped)');
    expect(writes(s3Sent)).toEqual(['PutObject', 'DeleteObject']);
    // The only write dynalite gets is the TTL it refuses (it reports TTL as DISABLED every time).
    expect(writes(db.sent)).toEqual(['UpdateTimeToLive']);
    expect(await (await fetch(`${servers.s3}/${bucket}?lifecycle`)).text()).toBe(stored);
    s3.destroy();
    db.client.destroy();
  });

  it('replaces rules that differ from the configuration, and says so', async () => {
    const bucket = unique('boot-s3');
    const s3 = createS3Client({ endpoint: servers.s3, credentials: S3RVER_CREDENTIALS });
    const config = configOf({ STORE_BACKEND: 's3', S3_BUCKET: bucket });
    await bootstrap({ config, clients: { s3 }, lifecycle: { retentionDays: 9 } });

    const steps = await bootstrap({ config, clients: { s3 }, lifecycle: { retentionDays: 12 } });

    expect(byStep(steps).lifecycle).toEqual({
      step: 'lifecycle',
      status: 'applied',
      detail: '6 rules, replacing 6 that differ',
    });
    expect(byStep(steps)['lock table']).toEqual({
      step: 'lock table',
      status: 'skipped',
      detail: 'LOCK_BACKEND=memory needs no table',
    });
    const stored = await (await fetch(`${servers.s3}/${bucket}?lifecycle`)).text();
    expect(xmlValues(stored, 'Days').map(Number).slice(0, 2)).toEqual([12, 14]);
    s3.destroy();
  });
});

describe.runIf(onTier('deploy'))('bootstrap: the write check (the S3 front)', () => {
  const prepared = async () => {
    const bucket = unique('boot-check');
    const s3 = createS3Client({ endpoint: servers.s3, credentials: S3RVER_CREDENTIALS });
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    return { bucket, s3, config: configOf({ STORE_BACKEND: 's3', S3_BUCKET: bucket }) };
  };
  const objectsIn = async (s3: S3Client, bucket: string) =>
    (await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? [];

  it('a read that fails stops bootstrap naming GetObject, and the probe object is deleted all the same', async () => {
    const { bucket, s3, config } = await prepared();
    const driver = createS3Driver({ bucket, client: s3 });
    const written: string[] = [];
    const put = driver.put;
    driver.put = (key, body, o) => {
      written.push(key);
      return put(key, body, o);
    };
    driver.get = vi.fn(async () => {
      throw new Error('connection reset by the test');
    });

    const error = await bootstrap({ config, clients: { s3 }, writeCheck: checkOn(driver) }).catch(
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(BootstrapError);
    expect((error as BootstrapError).step).toBe('write check');
    expect((error as Error).message).toMatch(
      new RegExp(
        `^write check: GetObject answered Error on s3://${bucket}/agent-state/.+: connection reset by the test$`,
      ),
    );
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(probeNames.pattern(DEFAULTS.prefix));
    expect(await objectsIn(s3, bucket)).toEqual([]);
    s3.destroy();
  });

  it('a refused PUT names PutObject, the answer, who was refused and what the policy must allow; nothing is left', async () => {
    const { bucket, s3, config } = await prepared();
    const refused = createS3Driver({
      bucket,
      endpoint: servers.s3,
      credentials: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'nope' },
    });

    const error = await bootstrap({ config, clients: { s3 }, writeCheck: checkOn(refused) }).catch(
      (e: unknown) => e,
    );

    expect((error as Error).message).toMatch(
      new RegExp(
        `^write check: PutObject answered 403 InvalidAccessKeyId on s3://${bucket}/agent-state/\\S+ as access key id AKIA…MPLE: these credentials may not use the bucket \\(its policy and theirs must allow s3:PutObject, s3:GetObject, s3:DeleteObject and s3:ListBucket\\): `,
      ),
    );
    expect((error as Error).message).not.toContain('nope');
    expect(await objectsIn(s3, bucket)).toEqual([]);
    s3.destroy();
  });

  it('without a write check (a caller of the library that gives none) the step says it was skipped', async () => {
    const { s3, config } = await prepared();
    const steps = await bootstrap({ config, clients: { s3 } });
    expect(steps.at(-1)).toEqual({ step: 'write check', status: 'skipped', detail: 'no write check given' });
    s3.destroy();
  });
});

describe.runIf(onTier('deploy'))('bootstrap: Block Public Access by dialect (stub S3 client)', () => {
  /** A client with no Block Public Access yet that records what is put; every other call is 501. */
  function stub(current?: Record<string, boolean>) {
    const put: unknown[] = [];
    const client = {
      config: { region: async () => 'us-east-1' },
      async send(command: { input: unknown }) {
        if (command instanceof HeadBucketCommand) return {};
        if (command instanceof GetPublicAccessBlockCommand) {
          if (current) return { PublicAccessBlockConfiguration: current };
          throw Object.assign(new Error('none'), { name: 'NoSuchPublicAccessBlockConfiguration' });
        }
        if (command instanceof PutPublicAccessBlockCommand) {
          put.push(
            (command.input as { PublicAccessBlockConfiguration: unknown }).PublicAccessBlockConfiguration,
          );
          return {};
        }
        throw Object.assign(new Error('no'), { name: 'NotImplemented', $metadata: { httpStatusCode: 501 } });
      },
    };
    return { client: client as unknown as S3Client, put };
  }
  const all = {
    BlockPublicAcls: true,
    IgnorePublicAcls: true,
    BlockPublicPolicy: true,
    RestrictPublicBuckets: true,
  };

  it('puts all four settings on S3 (the default dialect): the RGW skip never applies', async () => {
    const { client, put } = stub();
    const config = configOf({ STORE_BACKEND: 's3', S3_BUCKET: 'b' });
    const steps = await bootstrap({ config, clients: { s3: client } });
    expect(put).toEqual([all]);
    expect(byStep(steps)['Block Public Access']).toEqual({
      step: 'Block Public Access',
      status: 'applied',
      detail: 'all four settings on',
    });
    expect(steps.map((s) => s.step)).not.toContain('BlockPublicAcls');
  });

  it('on S3_DIALECT=ceph-rgw leaves BlockPublicAcls off (turning it off where it is on) and says why', async () => {
    const config = configOf({ STORE_BACKEND: 's3', S3_BUCKET: 'b', S3_DIALECT: 'ceph-rgw' });
    const fresh = stub();
    const steps = await bootstrap({ config, clients: { s3: fresh.client } });
    expect(fresh.put).toEqual([{ ...all, BlockPublicAcls: false }]);
    expect(steps.slice(1, 3).map(formatStep)).toEqual([
      'Block Public Access: applied (IgnorePublicAcls, BlockPublicPolicy, RestrictPublicBuckets on)',
      `BlockPublicAcls: skipped: ${RGW_BLOCK_PUBLIC_ACLS}`,
    ]);
    const broken = stub(all);
    const repaired = await bootstrap({ config, clients: { s3: broken.client } });
    expect(broken.put).toEqual([{ ...all, BlockPublicAcls: false }]);
    expect(byStep(repaired)['Block Public Access']?.detail).toBe(
      'IgnorePublicAcls, BlockPublicPolicy, RestrictPublicBuckets on; BlockPublicAcls turned off',
    );
    const right = stub({ ...all, BlockPublicAcls: false });
    const again = await bootstrap({ config, clients: { s3: right.client } });
    expect(right.put).toEqual([]);
    expect(byStep(again)['Block Public Access']?.status).toBe('already there');
  });
});

describe.runIf(onTier('deploy'))('bootstrap: dynalite', () => {
  it('refuses a table whose key is not the lock key, naming LOCK_TABLE, and changes nothing', async () => {
    const table = unique('boot-other');
    const db = dynamo();
    await db.client.send(
      new CreateTableCommand({
        TableName: table,
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    const config = configOf({ STORE_BACKEND: 'memory', LOCK_BACKEND: 'dynamodb', LOCK_TABLE: table });
    const error = await bootstrap({ config, clients: { dynamodb: db.client } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BootstrapError);
    expect((error as BootstrapError).step).toBe(`lock table ${table}`);
    expect((error as Error).message).toMatch(/its key is id HASH.*lockKey.*LOCK_TABLE/);
    expect(writes(db.sent)).toEqual(['CreateTable']); // the test's own
    db.client.destroy();
  });
});

describe.runIf(onTier('deploy'))(
  'bootstrap: the TTL and ACTIVE paths dynalite cannot show (stub DynamoDB client)',
  () => {
    /** A client answering DescribeTable and DescribeTimeToLive from scripted states; records what it was sent. */
    function stub(tableStatuses: string[], ttl: { TimeToLiveStatus: string; AttributeName?: string }) {
      const sent: Array<{ name: string; input: unknown }> = [];
      const client = {
        async send(command: { constructor: { name: string }; input: unknown }) {
          const name = command.constructor.name.replace(/Command$/, '');
          sent.push({ name, input: command.input });
          if (command instanceof DescribeTableCommand) {
            const status = tableStatuses.length > 1 ? tableStatuses.shift() : tableStatuses[0];
            return {
              Table: {
                TableStatus: status,
                KeySchema: [{ AttributeName: 'lockKey', KeyType: 'HASH' }],
                AttributeDefinitions: [{ AttributeName: 'lockKey', AttributeType: 'S' }],
                BillingModeSummary: { BillingMode: 'PAY_PER_REQUEST' },
              },
            };
          }
          if (command instanceof DescribeTimeToLiveCommand) return { TimeToLiveDescription: ttl };
          if (command instanceof UpdateTimeToLiveCommand) return {};
          throw new Error(`unexpected ${name}`);
        },
      };
      return { client: client as unknown as DynamoDBClient, sent };
    }
    const config = configOf({ STORE_BACKEND: 'memory', LOCK_BACKEND: 'dynamodb', LOCK_TABLE: 'locks' });

    it('waits until the table is ACTIVE, then turns TTL on for the attribute the lock writes', async () => {
      const { client, sent } = stub(['CREATING', 'CREATING', 'ACTIVE'], { TimeToLiveStatus: 'DISABLED' });
      const steps = await bootstrap({ config, clients: { dynamodb: client } });
      expect(steps.slice(1).map(formatStep)).toEqual([
        'lock table locks: already there (key lockKey, on-demand)',
        'TTL: applied (on ttl)',
      ]);
      expect(sent.filter((s) => s.name === 'DescribeTable')).toHaveLength(3);
      expect(sent.at(-1)).toEqual({
        name: 'UpdateTimeToLive',
        input: { TableName: 'locks', TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true } },
      });
    });

    it('leaves TTL alone when it is on already, for the lock attribute or another', async () => {
      const on = stub(['ACTIVE'], { TimeToLiveStatus: 'ENABLED', AttributeName: 'ttl' });
      expect(
        formatStep((await bootstrap({ config, clients: { dynamodb: on.client } }))[2] as BootstrapStep),
      ).toBe('TTL: already there (on ttl)');
      const other = stub(['ACTIVE'], { TimeToLiveStatus: 'ENABLED', AttributeName: 'expires' });
      const steps = await bootstrap({ config, clients: { dynamodb: other.client } });
      expect(byStep(steps).TTL).toMatchObject({
        status: 'skipped',
        detail: expect.stringMatching(/on expires/),
      });
      expect([...on.sent, ...other.sent].map((s) => s.name)).not.toContain('UpdateTimeToLive');
    });

    it('gives up on a table that never becomes ACTIVE, naming it', async () => {
      const { client } = stub(['CREATING'], { TimeToLiveStatus: 'DISABLED' });
      await expect(
        bootstrap({ config, clients: { dynamodb: client }, tableActiveTimeoutMs: 100 }),
      ).rejects.toThrow(/lock table locks: still CREATING/);
    });
  },
);

describe.runIf(onTier('deploy'))('bootstrap: the OSS front', () => {
  it('creates the bucket private with SSE and the rules, then checks a write; a second run writes nothing but the check', async () => {
    // Prepare
    const bucket = unique('boot-oss');
    const table = unique('boot-locks');
    const env = {
      STORE_BACKEND: 'oss',
      OSS_BUCKET: bucket,
      OSS_ENDPOINT: servers.oss,
      LOCK_BACKEND: 'dynamodb',
      LOCK_TABLE: table,
      DYNAMODB_ENDPOINT: servers.dynamodb,
      RETENTION_DAYS: '5',
      ARCHIVE_STORAGE_CLASS: 'IA',
    };
    const oss = ossClient(bucket);
    const db = dynamo();
    const options: BootstrapOptions = {
      config: configOf(env),
      clients: { oss: oss.client, dynamodb: db.client },
      lifecycle: deployedLifecycle('oss', env),
      writeCheck: checkOn(createOssDriver({ bucket, client: oss.client, ...OSS_CREDENTIALS })),
    };

    // Act
    const first = await bootstrap(options);

    // Assess
    expect(statuses(first)).toEqual({
      [`bucket oss://${bucket}`]: 'created',
      'Block Public Access': 'skipped',
      ACL: 'already there',
      SSE: 'applied',
      lifecycle: 'applied',
      [`lock table ${table}`]: 'created',
      TTL: 'skipped',
      'write check': 'checked',
    });
    expect(byStep(first)['write check']?.detail).toEqual(checkedLine(`oss://${bucket}`));
    expect(byStep(first)['Block Public Access']?.detail).toMatch(
      /ali-oss 6.23 has no PutBucketPublicAccessBlock/,
    );
    const { bucket: info } = await oss.client.getBucketInfo(bucket);
    expect(info.Name).toBe(bucket);
    expect(info.AccessControlList.Grant).toBe('private');
    expect(info.ServerSideEncryptionRule.SSEAlgorithm).toBe('AES256');
    const { encryption } = await (
      oss.client as unknown as { getBucketEncryption(b: string): Promise<{ encryption: unknown }> }
    ).getBucketEncryption(bucket);
    expect(encryption).toEqual({ SSEAlgorithm: 'AES256' });
    const rendered = renderOss(lifecycleRules('oss', { retentionDays: 5, archiveStorageClass: 'IA' }));
    const { rules } = await oss.client.getBucketLifecycle(bucket);
    expect(comparableOssRules(rules)).toEqual(comparableOssRules(rendered));
    const stored = await (await fetch(`${servers.s3}/${bucket}?lifecycle`)).text();
    expect(xmlValues(stored, 'ID')).toEqual(rendered.map((r) => r.id));
    expect(xmlValues(stored, 'StorageClass')).toEqual(['IA', 'Archive']);
    await assertLockTable(db.client, table);

    // Act: again
    oss.sent.length = 0;
    db.sent.length = 0;
    const second = await bootstrap(options);

    // Assess
    expect(changesOf(second)).toEqual([]);
    expect(summarize(second)).toBe('nothing changed (5 already there, 1 checked, 2 skipped)');
    expect(oss.sent).toEqual(['GET bucketInfo', 'GET encryption', 'GET lifecycle', 'PUT', 'GET', 'DELETE']);
    expect(writes(db.sent)).toEqual(['UpdateTimeToLive']);
    db.client.destroy();
  });

  it('makes an existing public bucket private and encrypted', async () => {
    const bucket = unique('boot-oss');
    const oss = ossClient(bucket);
    await oss.client.putBucket(bucket, { acl: 'public-read' } as OSS.PutBucketOptions);
    const config = configOf({ STORE_BACKEND: 'oss', OSS_BUCKET: bucket, OSS_ENDPOINT: servers.oss });

    const steps = await bootstrap({ config, clients: { oss: oss.client } });

    expect(steps.map(formatStep).slice(0, 4)).toEqual([
      `bucket oss://${bucket}: already there`,
      expect.stringMatching(/^Block Public Access: skipped: /),
      'ACL: applied (private; was public-read)',
      'SSE: applied (AES256 (OSS-managed keys))',
    ]);
    const { acl } = await oss.client.getBucketACL(bucket);
    expect(acl).toBe('private');
  });

  it('stops on a bucket name another account holds, naming OSS_BUCKET', async () => {
    const bucket = unique('boot-taken');
    await fetch(`${servers.oss}/__front/foreign-buckets`, {
      method: 'POST',
      body: JSON.stringify({ names: [bucket] }),
    });
    const oss = ossClient(bucket);
    const config = configOf({ STORE_BACKEND: 'oss', OSS_BUCKET: bucket, OSS_ENDPOINT: servers.oss });

    const error = await bootstrap({ config, clients: { oss: oss.client } }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(BootstrapError);
    expect((error as Error).message).toMatch(/AccessDenied.*another account/);
    await expect(oss.client.putBucket(bucket)).rejects.toMatchObject({
      status: 409,
      code: 'BucketAlreadyExists',
    });
  });
});

describe.runIf(onTier('deploy'))('the OSS front: bucket calls as OSS documents them', () => {
  const oss = () => ossClient('unused').client;

  it('PutBucket: 200 for a bucket the caller owns (the ACL changed when given); the name and ACL are checked', async () => {
    const bucket = unique('front');
    const client = oss();
    await client.putBucket(bucket);
    expect((await client.getBucketACL(bucket)).acl).toBe('private');
    await client.putBucket(bucket, { acl: 'public-read' } as OSS.PutBucketOptions);
    expect((await client.getBucketACL(bucket)).acl).toBe('public-read');
    await client.putBucket(bucket);
    expect((await client.getBucketACL(bucket)).acl).toBe('public-read');
    // ali-oss checks names itself; its raw request does not.
    const raw = client as unknown as { request(params: object): Promise<unknown> };
    await expect(
      raw.request({ method: 'PUT', bucket: 'Bad_Name', successStatuses: [200] }),
    ).rejects.toMatchObject({
      status: 400,
      code: 'InvalidBucketName',
    });
    await expect(client.putBucket(unique('front'), { acl: 'everyone' } as never)).rejects.toMatchObject({
      status: 400,
      code: 'InvalidArgument',
    });
    await expect(
      client.putBucket(unique('front'), { storageClass: 'Glacier' } as never),
    ).rejects.toMatchObject({
      status: 400,
      code: 'InvalidStorageClass',
    });
  });

  it('GetBucketInfo names the storage class, the ACL and the encryption rule (None without one)', async () => {
    const bucket = unique('front');
    const client = oss();
    await client.putBucket(bucket, { storageClass: 'IA' } as OSS.PutBucketOptions);
    const { bucket: info } = await client.getBucketInfo(bucket);
    expect(info).toMatchObject({
      Name: bucket,
      StorageClass: 'IA',
      AccessControlList: { Grant: 'private' },
      ServerSideEncryptionRule: { SSEAlgorithm: 'None' },
    });
    await expect(client.getBucketInfo(unique('missing'))).rejects.toMatchObject({
      status: 404,
      code: 'NoSuchBucket',
    });
  });

  it('encryption: 404 NoSuchServerSideEncryptionRule without a rule; a key only with KMS; unknown algorithms refused', async () => {
    const bucket = unique('front');
    const client = oss() as unknown as OSS & {
      putBucketEncryption(b: string, o: object): Promise<unknown>;
      getBucketEncryption(b: string): Promise<{ encryption: unknown }>;
      deleteBucketEncryption(b: string): Promise<unknown>;
    };
    await client.putBucket(bucket);
    await expect(client.getBucketEncryption(bucket)).rejects.toMatchObject({
      status: 404,
      code: 'NoSuchServerSideEncryptionRule',
    });
    await expect(
      client.putBucketEncryption(bucket, { SSEAlgorithm: 'AES256', KMSMasterKeyID: 'key-1' }),
    ).rejects.toMatchObject({ status: 400, code: 'InvalidArgument' });
    await expect(client.putBucketEncryption(bucket, { SSEAlgorithm: 'DES' })).rejects.toMatchObject({
      status: 400,
      code: 'InvalidEncryptionAlgorithmError',
    });
    await client.putBucketEncryption(bucket, { SSEAlgorithm: 'KMS', KMSMasterKeyID: 'key-1' });
    expect((await client.getBucketEncryption(bucket)).encryption).toEqual({
      SSEAlgorithm: 'KMS',
      KMSMasterKeyID: 'key-1',
    });
    await client.deleteBucketEncryption(bucket);
    await expect(client.getBucketEncryption(bucket)).rejects.toMatchObject({ status: 404 });
  });

  it("lifecycle: OSS's codes for a missing bucket (NoSuchBucket) and a bucket without rules (NoSuchLifecycle)", async () => {
    const bucket = unique('front');
    const client = oss();
    await client.putBucket(bucket);
    await expect(client.getBucketLifecycle(bucket)).rejects.toMatchObject({
      status: 404,
      code: 'NoSuchLifecycle',
    });
    await expect(client.getBucketLifecycle(unique('missing'))).rejects.toMatchObject({
      status: 404,
      code: 'NoSuchBucket',
    });
  });
});

const rgw = servers.rgw;

describe.runIf(onTier('rgw'))('bootstrap: Ceph RGW [rgw]', () => {
  const client = () => {
    if (!rgw) throw new Error('RGW tier not running');
    return createS3Client({ endpoint: rgw.endpoint, credentials: rgw });
  };
  /** The driver the functions use on RGW, on `s3`. */
  const rgwDriver = (bucket: string, s3: S3Client) =>
    createS3Driver({ bucket, client: s3, dialect: 'ceph-rgw' });
  /** The local server on `bucket` (its own client, as a deployment's), and the ERROR lines it logs. */
  const serverOn = async (bucket: string) => {
    const api = await nodeHarness(
      {
        driver: createS3Driver({
          bucket,
          endpoint: rgw?.endpoint,
          credentials: rgw ?? undefined,
          dialect: 'ceph-rgw',
        }),
        lock: createMemoryLock(),
      },
      { S3_BUCKET: bucket },
    );
    return { api, errors: vi.spyOn(api.app.logger, 'error') };
  };

  it('creates the bucket with Block Public Access but BlockPublicAcls and the rules; SSE without a KMS backend is skipped; a write checks out; a second run writes nothing but the check [rgw]', async () => {
    const bucket = unique('boot-rgw');
    const s3 = client();
    const sent = recordCommands(s3);
    const config = configOf({ STORE_BACKEND: 's3', S3_BUCKET: bucket, S3_DIALECT: 'ceph-rgw' });
    const lifecycle = deployedLifecycle('s3', {});
    const writeCheck = checkOn(rgwDriver(bucket, s3));

    const first = await bootstrap({ config, clients: { s3 }, lifecycle, writeCheck });

    expect(statuses(first)).toEqual({
      [`bucket s3://${bucket}`]: 'created',
      'Block Public Access': 'applied',
      BlockPublicAcls: 'skipped',
      ACL: 'already there',
      SSE: 'skipped',
      lifecycle: 'applied',
      'lock table': 'skipped',
      'write check': 'checked',
    });
    expect(byStep(first).BlockPublicAcls?.detail).toBe(RGW_BLOCK_PUBLIC_ACLS);
    expect(byStep(first).SSE?.detail).toBe(
      `${NOT_SUPPORTED} (PutBucketEncryption: InvalidArgument, HTTP 400)`,
    );
    const { PublicAccessBlockConfiguration: block } = await s3.send(
      new GetPublicAccessBlockCommand({ Bucket: bucket }),
    );
    expect(block).toEqual({
      BlockPublicAcls: false,
      IgnorePublicAcls: true,
      BlockPublicPolicy: true,
      RestrictPublicBuckets: true,
    });
    const { Grants } = await s3.send(new GetBucketAclCommand({ Bucket: bucket }));
    expect(Grants?.map((g) => g.Grantee?.Type)).toEqual(['CanonicalUser']);
    expect((await fetch(`${rgw?.endpoint}/${bucket}`)).status).toBe(403); // an anonymous listing
    const { Rules } = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }));
    expect(comparableS3Rules(Rules ?? [])).toEqual(comparableS3Rules(renderS3(lifecycleRules('s3')).Rules));
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).KeyCount).toBe(0);

    sent.length = 0;
    const second = await bootstrap({ config, clients: { s3 }, lifecycle, writeCheck });
    expect(changesOf(second)).toEqual([]);
    expect(byStep(second).SSE).toEqual(byStep(first).SSE);
    // SSE is tried again (RGW may have gained a KMS backend) and refused again; the check's object
    // is written and deleted: nothing else is written.
    expect(writes(sent)).toEqual(['PutBucketEncryption', 'PutObject', 'DeleteObject']);
    s3.destroy();
  });

  it('leaves a bucket the service can write to: after bootstrap, a write, a read and a delete over HTTP succeed [rgw]', async () => {
    const bucket = unique('boot-rgw');
    const s3 = client();
    const config = configOf({ STORE_BACKEND: 's3', S3_BUCKET: bucket, S3_DIALECT: 'ceph-rgw' });
    await bootstrap({ config, clients: { s3 }, writeCheck: checkOn(rgwDriver(bucket, s3)) });
    const { api, errors } = await serverOn(bucket);

    const write = await api.call('alice', 'PUT', '/v1/sessions/s/state/plan', { body: '{"a":1}' });
    const read = await api.call('alice', 'GET', '/v1/sessions/s/state/plan');
    const remove = await api.call('alice', 'DELETE', '/v1/sessions/s');

    expect([write.status, read.status, remove.status]).toEqual([200, 200, 204]);
    expect(read.json()).toEqual({ a: 1 });
    expect(errors).not.toHaveBeenCalled();
    await api.close();
    s3.destroy();
  });

  it('without S3_DIALECT=ceph-rgw, fails at the write check naming BlockPublicAcls, leaves no object; the server answers 503 backend-misconfigured with one ERROR line; bootstrap with the dialect repairs the bucket [rgw]', async () => {
    // Prepare: bootstrap as for AWS S3 (all four Block Public Access settings)
    const bucket = unique('boot-rgw');
    const s3 = client();
    const asAws = configOf({ STORE_BACKEND: 's3', S3_BUCKET: bucket });
    const writeCheck = checkOn(rgwDriver(bucket, s3));

    // Act
    const error = await bootstrap({ config: asAws, clients: { s3 }, writeCheck }).catch((e: unknown) => e);

    // Assess: loud, naming the call, the answer, the setting and the fix
    expect(error).toBeInstanceOf(BootstrapError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `^write check: PutObject answered 403 AccessDenied on s3://${bucket}/agent-state/\\S+ as access key id \\S+ after PutPublicAccessBlock BlockPublicAcls=true \\(Ceph RGW 16 refuses every PutObject while it is on: against RGW, set S3_DIALECT=ceph-rgw and run bootstrap again, which turns it off\\); else these credentials may not use the bucket`,
      ),
    );
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).KeyCount).toBe(0);

    // Act: the service on that bucket
    const { api, errors } = await serverOn(bucket);
    const refused = await api.call('alice', 'PUT', '/v1/sessions/s/state/plan', { body: '{"a":1}' });

    // Assess: no retry helps, and the log says what and who
    expect(refused.status).toBe(503);
    expect(refused.json()).toMatchObject({ code: 'backend-misconfigured' });
    expect(refused.headers['retry-after']).toBeUndefined();
    expect(errors.mock.calls.map((call) => String(call[0]))).toEqual([
      `s3 bucket ${bucket} refused access (AccessDenied); credentials: access key id ${rgw?.accessKeyId.slice(0, 4)}…${rgw?.accessKeyId.slice(-4)}: check S3_BUCKET=${bucket}`,
    ]);

    // Act: bootstrap with the dialect, then the same server writes (the next write probes again)
    const repaired = await bootstrap({
      config: configOf({ STORE_BACKEND: 's3', S3_BUCKET: bucket, S3_DIALECT: 'ceph-rgw' }),
      clients: { s3 },
      writeCheck,
    });
    const write = await api.call('alice', 'PUT', '/v1/sessions/s/state/plan', { body: '{"a":1}' });

    // Assess
    expect(byStep(repaired)['Block Public Access']?.detail).toBe(
      'IgnorePublicAcls, BlockPublicPolicy, RestrictPublicBuckets on; BlockPublicAcls turned off',
    );
    expect(byStep(repaired)['write check']?.status).toBe('checked');
    expect(write.status).toBe(200);
    await api.close();
    s3.destroy();
  });

  it('makes an existing public-read bucket private [rgw]', async () => {
    const bucket = unique('boot-rgw');
    const s3 = client();
    await s3.send(new CreateBucketCommand({ Bucket: bucket, ACL: 'public-read' }));
    expect((await fetch(`${rgw?.endpoint}/${bucket}`)).status).toBe(200);
    const config = configOf({ STORE_BACKEND: 's3', S3_BUCKET: bucket, S3_DIALECT: 'ceph-rgw' });

    const steps = await bootstrap({ config, clients: { s3 } });

    expect(byStep(steps).ACL).toEqual({
      step: 'ACL',
      status: 'applied',
      detail: 'private; was AllUsers READ',
    });
    expect((await fetch(`${rgw?.endpoint}/${bucket}`)).status).toBe(403);
    s3.destroy();
  });
});

describe.runIf(onTier('deploy'))('npm run bootstrap (the built script)', () => {
  beforeAll(async () => {
    await run('node', ['scripts/build.mjs', 'bootstrap']);
  });

  it('prints a line per step and, run again, that nothing changed; a bad parameter is one line naming it', async () => {
    const env = {
      PATH: process.env.PATH ?? '',
      STORE_BACKEND: 's3',
      S3_BUCKET: unique('boot-cli'),
      S3_ENDPOINT: servers.s3,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      LOCK_BACKEND: 'dynamodb',
      LOCK_TABLE: unique('boot-cli'),
      DYNAMODB_ENDPOINT: servers.dynamodb,
    };
    const once = await run('node', ['dist/bootstrap.mjs'], { env });
    const lines = once.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `bootstrap: STORE_BACKEND=s3 (S3_BUCKET=${env.S3_BUCKET} at ${servers.s3}), LOCK_BACKEND=dynamodb (LOCK_TABLE=${env.LOCK_TABLE} at ${servers.dynamodb})`,
    );
    expect(lines.slice(1, -1)).toEqual([
      `bucket s3://${env.S3_BUCKET}: created`,
      `Block Public Access: skipped: ${NOT_SUPPORTED} (GetPublicAccessBlock: NotImplemented, HTTP 501)`,
      `ACL: skipped: ${NOT_SUPPORTED} (GetBucketAcl: NotImplemented, HTTP 501)`,
      `SSE: skipped: ${NOT_SUPPORTED} (GetBucketEncryption: NotImplemented, HTTP 501)`,
      'lifecycle: applied (6 rules)',
      `lock table ${env.LOCK_TABLE}: created (key lockKey, on-demand)`,
      `TTL: skipped: ${NOT_SUPPORTED} (UpdateTimeToLive: UnknownOperationException, HTTP 400)`,
      expect.stringMatching(/^write check: checked \(PutObject, GetObject, DeleteObject of s3:\/\/boot-cli-/),
    ]);
    expect(lines.at(-2)).toMatch(
      new RegExp(`${probeNames.pattern(`s3://${env.S3_BUCKET}/${DEFAULTS.prefix}`).source.slice(1, -1)}\\)$`),
    );
    expect(lines.at(-1)).toBe('bootstrap: 3 changed (1 checked, 4 skipped)');

    const twice = await run('node', ['dist/bootstrap.mjs'], { env });
    expect(twice.stdout.trim().split('\n').at(-1)).toBe(
      'bootstrap: nothing changed (3 already there, 1 checked, 4 skipped)',
    );

    const bad = await run('node', ['dist/bootstrap.mjs'], {
      env: { ...env, ARCHIVE_STORAGE_CLASS: 'Archive' },
    }).catch((e: { code: number; stderr: string }) => e);
    expect(bad).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^bootstrap failed: parameter archiveStorageClass: /),
    });
  });
});
