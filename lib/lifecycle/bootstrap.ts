/**
 * `npm run bootstrap`: sets up what the configuration points at, idempotently, and says what it did.
 * - S3 (or an S3-compatible store): the bucket, Block Public Access, a private ACL, default
 *   encryption (SSE-S3, AES256), the lifecycle rules of lib/lifecycle;
 * - OSS: the bucket (PutBucket with a private ACL), a private ACL, default encryption (OSS-managed,
 *   AES256), the lifecycle rules;
 * - the DynamoDB lock table: the key schema lib/lock/dynamodb.ts uses, on-demand, ACTIVE, with TTL
 *   on the attribute the lock writes.
 * - MySQL / MariaDB (STORE_BACKEND=mysql or LOCK_BACKEND=mysql): the engine's tables in MYSQL_URL's
 *   database, each created if missing (`CREATE TABLE IF NOT EXISTS`).
 * - Redis (STORE_BACKEND=redis or LOCK_BACKEND=redis): the server's start-up check (Redis ≥ 7,
 *   scripts allowed, Cluster or not as configured), then the engine's scripts loaded (SCRIPT LOAD).
 * - last, the write check (`writeCheck`): one probe object written, read back and deleted as the
 *   service writes its state, so that a setting that refuses the service's requests fails here,
 *   named, and not at the first request.
 * Every step reads the current state first and writes only what differs, so a second run writes
 * nothing but the write check's object (written and deleted). What an endpoint does not support
 * (s3rver has no ACLs, RGW no SSE without a KMS backend, dynalite no TTL) is reported as skipped
 * with the reason, never a failure; so is `BlockPublicAcls` on `S3_DIALECT=ceph-rgw` (Ceph RGW 16
 * refuses every PutObject, the owner's too, while it is on; `IgnorePublicAcls` stays on, which
 * keeps public ACLs without effect). Anything else (refused credentials, a bucket name another
 * account holds, a table with another key schema, a write check that fails) stops with a
 * `BootstrapError` naming the step.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  type TableDescription,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import {
  type BucketLocationConstraint,
  CreateBucketCommand,
  GetBucketAclCommand,
  GetBucketEncryptionCommand,
  GetBucketLifecycleConfigurationCommand,
  GetPublicAccessBlockCommand,
  HeadBucketCommand,
  PutBucketAclCommand,
  PutBucketEncryptionCommand,
  PutPublicAccessBlockCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type OSS from 'ali-oss';
import type { Config } from '../config.js';
import { LOCK_TABLE_KEY, LOCK_TTL_ATTRIBUTE } from '../lock/dynamodb.js';
import { applyOssLifecycle, applyS3Lifecycle } from './apply.js';
import { DEPLOYMENT_PARAMETERS, deploymentSettings } from './deployment.js';
import { type LifecycleBackend, type LifecycleConfig, lifecycleRules, renderOss, renderS3 } from './index.js';

/** What a step did (`checked`: the write check's object was written, read and deleted). */
export type BootstrapStatus = 'created' | 'already there' | 'applied' | 'checked' | 'skipped';

/** One step of a bootstrap run. */
export interface BootstrapStep {
  /**
   * What the step sets up: `bucket s3://<name>`, `Block Public Access` (and `BlockPublicAcls`, on
   * Ceph RGW), `ACL`, `SSE`, `lifecycle`, `lock table <name>`, `TTL`, `write check`.
   */
  readonly step: string;
  readonly status: BootstrapStatus;
  /** For `skipped`, why; otherwise what is in place (`AES256`, `5 rules`, ...). */
  readonly detail?: string;
}

/** A step failed for a reason that is not a missing feature of the endpoint; nothing after it ran. */
export class BootstrapError extends Error {
  override name = 'BootstrapError';
  constructor(
    /** The step that failed (as in `BootstrapStep.step`). */
    readonly step: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${step}: ${message}`, options);
  }
}

/** The clients bootstrap uses; only those of the configured backends are needed. */
export interface BootstrapClients {
  /** For STORE_BACKEND=s3. */
  readonly s3?: S3Client;
  /** For STORE_BACKEND=oss. */
  readonly oss?: OSS;
  /** For LOCK_BACKEND=dynamodb. */
  readonly dynamodb?: DynamoDBClient;
  /** For STORE_BACKEND=mysql or LOCK_BACKEND=mysql: creates the missing tables, answers their names. */
  readonly mysql?: { bootstrap(): Promise<readonly string[]> };
  /**
   * For STORE_BACKEND=redis or LOCK_BACKEND=redis: the server's start-up check (Redis ≥ 7, scripts
   * allowed, the configured mode) and the load of the engine's scripts (SCRIPT LOAD; their count).
   */
  readonly redis?: {
    check(): Promise<{ readonly version: string; readonly mode: string }>;
    loadScripts(): Promise<number>;
  };
}

/**
 * What a write check found: the probe object it used, and the first call that failed with the
 * backend's own error (lib/store/write-check.ts, `writeReadDelete`, answers this).
 */
export interface WriteCheckResult {
  readonly key: string;
  readonly failed?: {
    /** `PutObject`, `GetObject` or `DeleteObject`. */
    readonly call: string;
    readonly error: unknown;
    /** Who the backend refused (`access key id AKIA…WXYZ`, an ARN), when it refused. */
    readonly identity?: string;
  };
}

/** Options of `bootstrap`. */
export interface BootstrapOptions {
  /** The configuration (lib/config.ts): which backends, the bucket and table names, the S3 dialect. */
  readonly config: Pick<
    Config,
    'STORE_BACKEND' | 'S3_BUCKET' | 'OSS_BUCKET' | 'S3_DIALECT' | 'LOCK_BACKEND' | 'LOCK_TABLE'
  > &
    Partial<Pick<Config, 'BLOB_BACKEND'>>;
  readonly clients: BootstrapClients;
  /**
   * The last step on a bucket: writes, reads back and deletes one object as the service writes its
   * state, on the configured driver (scripts/bootstrap.ts gives `writeReadDelete` of
   * lib/store/write-check.ts; this floor does not import the store). Without it the step is
   * reported as skipped.
   */
  readonly writeCheck?: () => Promise<WriteCheckResult>;
  /** The bucket's lifecycle settings (see `deployedLifecycle`); default the defaults of lib/lifecycle. */
  readonly lifecycle?: Partial<LifecycleConfig>;
  /** How long to wait for a table to become ACTIVE; default 60 s. */
  readonly tableActiveTimeoutMs?: number;
  /** Called with each step as it ends (the script prints them as they come); default none. */
  readonly onStep?: (step: BootstrapStep) => void;
}

/** The reason given for what an endpoint does not implement. */
export const NOT_SUPPORTED = 'not supported by this endpoint';
/** Why `BlockPublicAcls` is left off on Ceph RGW. */
export const RGW_BLOCK_PUBLIC_ACLS =
  "S3_DIALECT=ceph-rgw: Ceph RGW 16 refuses every PutObject, the bucket owner's too, with 403 AccessDenied while it is on; IgnorePublicAcls (on) keeps public ACLs without effect";
/** The default encryption bootstrap puts: SSE-S3 on S3, OSS-managed keys on OSS. */
const SSE_ALGORITHM = 'AES256';
/** Grantees that make an S3 ACL public. */
const PUBLIC_GRANTEES = new Set([
  'http://acs.amazonaws.com/groups/global/AllUsers',
  'http://acs.amazonaws.com/groups/global/AuthenticatedUsers',
]);

/** One line for a step: `SSE: applied (AES256)`, `TTL: skipped: not supported by this endpoint (...)`. */
export function formatStep(step: BootstrapStep): string {
  if (step.status === 'skipped') return `${step.step}: skipped: ${step.detail ?? ''}`;
  return `${step.step}: ${step.status}${step.detail ? ` (${step.detail})` : ''}`;
}

/** The steps of a run that created or applied something (none on a second run). */
export function changesOf(steps: readonly BootstrapStep[]): BootstrapStep[] {
  return steps.filter((s) => s.status === 'created' || s.status === 'applied');
}

/** The last line of a run: `nothing changed (5 already there, 1 checked, 2 skipped)`, or `3 changed (...)`. */
export function summarize(steps: readonly BootstrapStep[]): string {
  const changed = changesOf(steps).length;
  const count = (status: BootstrapStatus) => steps.filter((s) => s.status === status).length;
  const rest = [
    [count('already there'), 'already there'],
    [count('checked'), 'checked'],
    [count('skipped'), 'skipped'],
  ]
    .filter(([n]) => n !== 0)
    .map(([n, what]) => `${n} ${what}`)
    .join(', ');
  return `${changed === 0 ? 'nothing changed' : `${changed} changed`}${rest ? ` (${rest})` : ''}`;
}

/**
 * The lifecycle settings a deployment of `backend` gets from this environment: the deployment
 * parameters (RETENTION_DAYS, STATE_GRACE_DAYS, KEEPALIVE_MS, ARCHIVE_*, WORKSPACE_*,
 * ABORT_MULTIPART_DAYS) checked as the deployments check them (a `DeploymentParameterError` names
 * the parameter), and STATE_PREFIX (default `agent-state/`).
 */
export function deployedLifecycle(
  backend: LifecycleBackend,
  env: Record<string, string | undefined> = process.env,
): Partial<LifecycleConfig> {
  const given = Object.fromEntries(DEPLOYMENT_PARAMETERS.map((p) => [p.name, env[p.env]]));
  const { lifecycle } = deploymentSettings(backend, given);
  return env.STATE_PREFIX ? { ...lifecycle, prefix: env.STATE_PREFIX } : lifecycle;
}

/** Sets up the configured bucket and lock table; returns what each step did. */
/**
 * The bucket a deployment needs: the object store's (STORE_BACKEND=s3|oss), or an engine store's
 * blob store (STORE_BACKEND=redis|mysql with BLOB_BACKEND=s3|oss; lib/http/backends/blobs.ts).
 */
export function bucketBackendOf(
  config: Pick<Config, 'STORE_BACKEND'> & Partial<Pick<Config, 'BLOB_BACKEND'>>,
): 's3' | 'oss' | undefined {
  if (config.STORE_BACKEND === 's3' || config.STORE_BACKEND === 'oss') return config.STORE_BACKEND;
  const engine = config.STORE_BACKEND === 'redis' || config.STORE_BACKEND === 'mysql';
  if (engine && (config.BLOB_BACKEND === 's3' || config.BLOB_BACKEND === 'oss')) return config.BLOB_BACKEND;
  return undefined;
}

export async function bootstrap(options: BootstrapOptions): Promise<BootstrapStep[]> {
  const steps: BootstrapStep[] = [];
  const add = (step: string, status: BootstrapStatus, detail?: string) => {
    const done: BootstrapStep = detail === undefined ? { step, status } : { step, status, detail };
    steps.push(done);
    options.onStep?.(done);
  };
  const { config, clients } = options;
  const lifecycle = options.lifecycle ?? {};
  /** The bucket the write check writes to, and the settings that may refuse the service's writes. */
  let written: { where: string; suspects: Suspect[] } | undefined;
  const bucketBackend = bucketBackendOf(config);
  if (bucketBackend === 's3') {
    const bucket = need(config.S3_BUCKET, 'S3_BUCKET');
    const suspects = await s3Bucket(need(clients.s3, 'S3 client'), bucket, config.S3_DIALECT, lifecycle, add);
    written = { where: `s3://${bucket}`, suspects };
  } else if (bucketBackend === 'oss') {
    const bucket = need(config.OSS_BUCKET, 'OSS_BUCKET');
    await ossBucket(need(clients.oss, 'OSS client'), bucket, lifecycle, add);
    written = { where: `oss://${bucket}`, suspects: [] };
  } else {
    add('bucket', 'skipped', `STORE_BACKEND=${config.STORE_BACKEND} keeps state without a bucket`);
  }
  if (config.LOCK_BACKEND === 'dynamodb') {
    await lockTable(
      need(clients.dynamodb, 'DynamoDB client'),
      need(config.LOCK_TABLE, 'LOCK_TABLE'),
      options.tableActiveTimeoutMs ?? 60_000,
      add,
    );
  } else if (config.LOCK_BACKEND === 'mysql') {
    add('lock table', 'skipped', 'LOCK_BACKEND=mysql keeps its leases in the MySQL schema');
  } else {
    add('lock table', 'skipped', `LOCK_BACKEND=${config.LOCK_BACKEND} needs no table`);
  }
  if (config.STORE_BACKEND === 'mysql' || config.LOCK_BACKEND === 'mysql') {
    const step = 'mysql schema';
    const mysql = need(clients.mysql, 'MySQL connection');
    let created: readonly string[];
    try {
      created = await mysql.bootstrap();
    } catch (error) {
      throw new BootstrapError(step, (error as Error).message, { cause: error });
    }
    if (created.length > 0) add(step, 'created', created.join(', '));
    else add(step, 'already there');
  }
  if (config.STORE_BACKEND === 'redis' || config.LOCK_BACKEND === 'redis') {
    const step = 'redis server';
    const redis = need(clients.redis, 'Redis client');
    try {
      const { version, mode } = await redis.check();
      const loaded = await redis.loadScripts();
      add(step, 'checked', `Redis ${version}, ${mode}, ${loaded} scripts loaded`);
    } catch (error) {
      throw new BootstrapError(step, (error as Error).message, { cause: error });
    }
  }
  if (written) await checkWrites(options.writeCheck, written.where, written.suspects, add);
  return steps;
}

/** A bucket setting in place that may refuse the service's writes, and what to do about it. */
interface Suspect {
  /** `PutPublicAccessBlock BlockPublicAcls=true`. */
  readonly setting: string;
  readonly why: string;
}

/**
 * The write check: its object written, read back and deleted, or a `BootstrapError` naming the call
 * that failed, the bucket, who was refused and, for a refusal, the settings that may have caused it.
 */
async function checkWrites(
  check: BootstrapOptions['writeCheck'],
  where: string,
  suspects: readonly Suspect[],
  add: Add,
): Promise<void> {
  const step = 'write check';
  if (!check) return add(step, 'skipped', 'no write check given');
  const { key, failed } = await check();
  if (!failed) return add(step, 'checked', `PutObject, GetObject, DeleteObject of ${where}/${key}`);
  const { code, status, message } = described(failed.error);
  const as = failed.identity ? ` as ${failed.identity}` : '';
  const policy = `these credentials may not use the bucket (its policy and theirs must allow ${where.startsWith('oss:') ? 'oss:PutObject, oss:GetObject, oss:DeleteObject and oss:ListObjects' : 's3:PutObject, s3:GetObject, s3:DeleteObject and s3:ListBucket'})`;
  const blame =
    status !== 403
      ? ''
      : suspects.length > 0
        ? ` after ${suspects.map((s) => `${s.setting} (${s.why})`).join(', ')}; else ${policy}`
        : `: ${policy}`;
  throw new BootstrapError(
    step,
    `${failed.call} answered ${status === undefined ? '' : `${status} `}${code} on ${where}/${key}${as}${blame}: ${message}`,
    { cause: failed.error },
  );
}

type Add = (step: string, status: BootstrapStatus, detail?: string) => void;

function need<T>(value: T | undefined, what: string): T {
  if (value === undefined || value === '') throw new BootstrapError('bootstrap', `${what} is missing`);
  return value;
}

/** The code, HTTP status and message of an AWS SDK or ali-oss error. */
function described(error: unknown): { code: string; status?: number; message: string } {
  const e = error as {
    name?: string;
    Code?: string;
    code?: string;
    status?: number;
    message?: string;
    $metadata?: { httpStatusCode?: number };
  };
  const status = e?.$metadata?.httpStatusCode ?? (typeof e?.status === 'number' ? e.status : undefined);
  const code = e?.Code ?? (typeof e?.code === 'string' ? e.code : undefined) ?? e?.name ?? 'Error';
  return { code, ...(status === undefined ? {} : { status }), message: e?.message ?? String(error) };
}

/** What an endpoint answers for a call it does not implement (501, 405, NotImplemented, DynamoDB's UnknownOperationException). */
function isUnsupported(error: unknown, alsoCodes: readonly string[] = []): boolean {
  const { code, status } = described(error);
  return (
    status === 501 ||
    status === 405 ||
    ['NotImplemented', 'MethodNotAllowed', 'UnknownOperationException', ...alsoCodes].includes(code)
  );
}

/** `not supported by this endpoint (<call>: <code>, HTTP <status>)`. */
function unsupportedReason(call: string, error: unknown): string {
  const { code, status } = described(error);
  return `${NOT_SUPPORTED} (${call}: ${code}${status === undefined ? '' : `, HTTP ${status}`})`;
}

/** Thrown inside a step for a call the endpoint does not implement. */
class Skipped {
  constructor(readonly reason: string) {}
}

/**
 * Runs one optional step: what it returns is reported; a call the endpoint does not implement is
 * reported as skipped; anything else stops the run with a `BootstrapError` naming the step.
 */
async function optional(
  step: string,
  add: Add,
  run: (skip: (call: string, error: unknown) => never) => Promise<[BootstrapStatus, string?]>,
  alsoUnsupported: readonly string[] = [],
): Promise<void> {
  const skip = (call: string, error: unknown): never => {
    if (isUnsupported(error, alsoUnsupported)) throw new Skipped(unsupportedReason(call, error));
    throw error;
  };
  try {
    const [status, detail] = await run(skip);
    add(step, status, detail);
  } catch (error) {
    if (error instanceof Skipped) return add(step, 'skipped', error.reason);
    if (error instanceof BootstrapError) throw error;
    const { code, status, message } = described(error);
    throw new BootstrapError(step, `${code}${status === undefined ? '' : ` (HTTP ${status})`}: ${message}`, {
      cause: error,
    });
  }
}

// S3

/** The S3 bucket's steps; returns the settings in place that may refuse the service's writes. */
async function s3Bucket(
  client: S3Client,
  bucket: string,
  dialect: Config['S3_DIALECT'],
  lifecycle: Partial<LifecycleConfig>,
  add: Add,
): Promise<Suspect[]> {
  const label = `bucket s3://${bucket}`;
  await optional(label, add, async () => {
    try {
      await client.send(new HeadBucketCommand({ Bucket: bucket }));
      return ['already there'];
    } catch (error) {
      const { status } = described(error);
      if (status === 403) {
        throw new BootstrapError(
          label,
          'it exists but these credentials may not use it (HTTP 403): another account owns it, or the policy lacks s3:ListBucket',
          { cause: error },
        );
      }
      if (status !== 404) throw error;
    }
    const region = await client.config.region();
    try {
      // https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateBucket.html: us-east-1 takes no LocationConstraint.
      await client.send(
        new CreateBucketCommand({
          Bucket: bucket,
          ...(region === 'us-east-1'
            ? {}
            : { CreateBucketConfiguration: { LocationConstraint: region as BucketLocationConstraint } }),
        }),
      );
      return ['created'];
    } catch (error) {
      const { code } = described(error);
      if (code === 'BucketAlreadyOwnedByYou') return ['already there'];
      if (code === 'BucketAlreadyExists') {
        throw new BootstrapError(label, 'the name is taken by another account: choose another S3_BUCKET', {
          cause: error,
        });
      }
      throw error;
    }
  });

  const suspects = await s3PublicAccessBlock(client, bucket, dialect, add);

  await optional('ACL', add, async (skip) => {
    const { Grants = [] } = await client
      .send(new GetBucketAclCommand({ Bucket: bucket }))
      .catch((error: unknown) => skip('GetBucketAcl', error));
    const open = Grants.filter((g) => PUBLIC_GRANTEES.has(g.Grantee?.URI ?? ''));
    if (open.length === 0) return ['already there', 'private'];
    await client
      .send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'private' }))
      .catch((error: unknown) => skip('PutBucketAcl', error));
    const was = open.map((g) => `${g.Grantee?.URI?.split('/').pop()} ${g.Permission}`).join(', ');
    return ['applied', `private; was ${was}`];
  });

  await optional(
    'SSE',
    add,
    async (skip) => {
      let algorithm: string | undefined;
      try {
        const out = await client.send(new GetBucketEncryptionCommand({ Bucket: bucket }));
        // RGW answers a bucket without a rule with an empty configuration rather than 404.
        algorithm =
          out.ServerSideEncryptionConfiguration?.Rules?.[0]?.ApplyServerSideEncryptionByDefault?.SSEAlgorithm;
      } catch (error) {
        if (described(error).code !== 'ServerSideEncryptionConfigurationNotFoundError')
          skip('GetBucketEncryption', error);
      }
      if (algorithm) return ['already there', algorithm];
      await client
        .send(
          new PutBucketEncryptionCommand({
            Bucket: bucket,
            ServerSideEncryptionConfiguration: {
              Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: SSE_ALGORITHM } }],
            },
          }),
        )
        .catch((error: unknown) => skip('PutBucketEncryption', error));
      return ['applied', `${SSE_ALGORITHM} (SSE-S3)`];
    },
    // RGW refuses SSE-S3 with 400 InvalidArgument when no KMS backend (vault) is configured.
    ['InvalidArgument', 'InvalidRequest'],
  );

  await optional('lifecycle', add, async (skip) => {
    const wanted = renderS3(lifecycleRules('s3', lifecycle), lifecycle.prefix).Rules;
    let current: unknown[] | undefined;
    try {
      current = (await client.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }))).Rules;
    } catch (error) {
      if (described(error).code !== 'NoSuchLifecycleConfiguration')
        skip('GetBucketLifecycleConfiguration', error);
    }
    const rules = `${wanted.length} rules`;
    if (current && sameRules(comparableS3Rules(current), comparableS3Rules(wanted)))
      return ['already there', rules];
    await applyS3Lifecycle(client, bucket, lifecycle).catch((error: unknown) =>
      skip('PutBucketLifecycleConfiguration', error),
    );
    return ['applied', current?.length ? `${rules}, replacing ${current.length} that differ` : rules];
  });
  return suspects;
}

/** Block Public Access's four settings, in the order S3 lists them. */
const PUBLIC_ACCESS_BLOCK = [
  'BlockPublicAcls',
  'IgnorePublicAcls',
  'BlockPublicPolicy',
  'RestrictPublicBuckets',
] as const;

/**
 * Block Public Access: all four settings on; on Ceph RGW (`S3_DIALECT=ceph-rgw`) all but
 * `BlockPublicAcls`, which is turned off where it is on and reported as skipped with its reason.
 * Returns `BlockPublicAcls=true` as a suspect where it is on (AWS S3 takes writes with it; an
 * S3-compatible store that is not declared may not).
 */
async function s3PublicAccessBlock(
  client: S3Client,
  bucket: string,
  dialect: Config['S3_DIALECT'],
  add: Add,
): Promise<Suspect[]> {
  const rgw = dialect === 'ceph-rgw';
  const wanted = Object.fromEntries(
    PUBLIC_ACCESS_BLOCK.map((setting) => [setting, !(rgw && setting === 'BlockPublicAcls')]),
  ) as Record<(typeof PUBLIC_ACCESS_BLOCK)[number], boolean>;
  const on = PUBLIC_ACCESS_BLOCK.filter((setting) => wanted[setting]);
  const detail = on.length === PUBLIC_ACCESS_BLOCK.length ? 'all four settings on' : `${on.join(', ')} on`;
  let done: BootstrapStatus | undefined;
  await optional('Block Public Access', add, async (skip) => {
    let current: Partial<Record<(typeof PUBLIC_ACCESS_BLOCK)[number], boolean>> | undefined;
    try {
      current = (await client.send(new GetPublicAccessBlockCommand({ Bucket: bucket })))
        .PublicAccessBlockConfiguration;
    } catch (error) {
      if (described(error).code !== 'NoSuchPublicAccessBlockConfiguration')
        skip('GetPublicAccessBlock', error);
    }
    if (current && PUBLIC_ACCESS_BLOCK.every((setting) => (current[setting] ?? false) === wanted[setting])) {
      done = 'already there';
      return [done, detail];
    }
    await client
      .send(new PutPublicAccessBlockCommand({ Bucket: bucket, PublicAccessBlockConfiguration: wanted }))
      .catch((error: unknown) => skip('PutPublicAccessBlock', error));
    done = 'applied';
    const turnedOff = rgw && current?.BlockPublicAcls === true ? '; BlockPublicAcls turned off' : '';
    return [done, `${detail}${turnedOff}`];
  });
  if (!done) return [];
  if (rgw) {
    add('BlockPublicAcls', 'skipped', RGW_BLOCK_PUBLIC_ACLS);
    return [];
  }
  return [
    {
      setting: `${done === 'applied' ? 'PutPublicAccessBlock ' : ''}BlockPublicAcls=true${done === 'applied' ? '' : ' (already on)'}`,
      why: 'Ceph RGW 16 refuses every PutObject while it is on: against RGW, set S3_DIALECT=ceph-rgw and run bootstrap again, which turns it off',
    },
  ];
}

// OSS

/** ali-oss 6.23 calls its types do not declare. */
interface OssEncryptionCalls {
  putBucketEncryption(name: string, options: { SSEAlgorithm: string }): Promise<unknown>;
  getBucketEncryption(name: string): Promise<{ encryption?: { SSEAlgorithm?: string } }>;
}

async function ossBucket(client: OSS, bucket: string, lifecycle: Partial<LifecycleConfig>, add: Add) {
  const label = `bucket oss://${bucket}`;
  let info: { AccessControlList?: { Grant?: string } } | undefined;
  const readInfo = async () => (await client.getBucketInfo(bucket)).bucket as typeof info;
  await optional(label, add, async () => {
    try {
      info = await readInfo();
      return ['already there'];
    } catch (error) {
      const { code, status } = described(error);
      if (status === 403) {
        throw new BootstrapError(
          label,
          `it exists but these credentials may not use it (${code}): another account owns it, or the RAM policy lacks oss:GetBucketInfo`,
          { cause: error },
        );
      }
      if (code !== 'NoSuchBucket') throw error;
    }
    try {
      // https://www.alibabacloud.com/help/en/oss/developer-reference/putbucket
      await client.putBucket(bucket, { acl: 'private', storageClass: 'Standard' } as OSS.PutBucketOptions);
    } catch (error) {
      if (described(error).code === 'BucketAlreadyExists') {
        throw new BootstrapError(label, 'the name is taken by another account: choose another OSS_BUCKET', {
          cause: error,
        });
      }
      throw error;
    }
    info = await readInfo();
    return ['created'];
  });

  // ali-oss 6.23 has no call for PutBucketPublicAccessBlock.
  add(
    'Block Public Access',
    'skipped',
    'ali-oss 6.23 has no PutBucketPublicAccessBlock (OSS turns it on for buckets created since 2025-10-13; check an older bucket in the console)',
  );

  await optional('ACL', add, async (skip) => {
    const grant = info?.AccessControlList?.Grant;
    if (grant === 'private') return ['already there', 'private'];
    await client.putBucketACL(bucket, 'private').catch((error: unknown) => skip('PutBucketAcl', error));
    return ['applied', `private; was ${grant}`];
  });

  const sse = client as unknown as OssEncryptionCalls;
  await optional('SSE', add, async (skip) => {
    let algorithm: string | undefined;
    try {
      algorithm = (await sse.getBucketEncryption(bucket)).encryption?.SSEAlgorithm;
    } catch (error) {
      if (described(error).code !== 'NoSuchServerSideEncryptionRule') skip('GetBucketEncryption', error);
    }
    if (algorithm) return ['already there', algorithm];
    // https://www.alibabacloud.com/help/en/oss/developer-reference/putbucketencryption
    await sse
      .putBucketEncryption(bucket, { SSEAlgorithm: SSE_ALGORITHM })
      .catch((error: unknown) => skip('PutBucketEncryption', error));
    return ['applied', `${SSE_ALGORITHM} (OSS-managed keys)`];
  });

  await optional('lifecycle', add, async (skip) => {
    const wanted = renderOss(lifecycleRules('oss', lifecycle), lifecycle.prefix);
    let current: unknown[] | undefined;
    try {
      current = (await client.getBucketLifecycle(bucket)).rules ?? undefined;
    } catch (error) {
      if (described(error).code !== 'NoSuchLifecycle') skip('GetBucketLifecycle', error);
    }
    const rules = `${wanted.length} rules`;
    if (current && sameRules(comparableOssRules(current), comparableOssRules(wanted)))
      return ['already there', rules];
    await applyOssLifecycle(client, bucket, lifecycle).catch((error: unknown) =>
      skip('PutBucketLifecycle', error),
    );
    return ['applied', current?.length ? `${rules}, replacing ${current.length} that differ` : rules];
  });
}

// Lifecycle rules, compared by what they do.

/** A lifecycle rule reduced to what it selects and does, the same for every dialect that wrote it. */
export interface ComparableRule {
  readonly id: string;
  readonly enabled: boolean;
  readonly prefix: string;
  /** `key=value`, sorted. */
  readonly tags: readonly string[];
  readonly expirationDays?: number;
  /** `days:class`, sorted by days. */
  readonly transitions: readonly string[];
  readonly abortMultipartDays?: number;
}

type Loose = Record<string, unknown> | undefined;
const obj = (v: unknown): Loose => (v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined);
const list = (v: unknown): unknown[] => (v === undefined || v === null ? [] : Array.isArray(v) ? v : [v]);
const days = (v: unknown): number | undefined =>
  v === undefined || v === null || v === '' ? undefined : Number(v);

function comparable(
  r: Omit<ComparableRule, 'tags' | 'transitions'> & { tags: string[]; transitions: string[] },
) {
  const out: ComparableRule = {
    id: r.id,
    enabled: r.enabled,
    prefix: r.prefix,
    tags: [...r.tags].sort(),
    transitions: [...r.transitions].sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10)),
    ...(r.expirationDays === undefined ? {} : { expirationDays: r.expirationDays }),
    ...(r.abortMultipartDays === undefined ? {} : { abortMultipartDays: r.abortMultipartDays }),
  };
  return out;
}

/**
 * S3 rules (the SDK's shape, as sent or as read back) by what they do: `Filter.And` with `Tags`
 * (AWS) and `Filter` with `Prefix` and one `Tag` (what RGW answers) compare equal. Sorted by id.
 */
export function comparableS3Rules(rules: readonly unknown[]): ComparableRule[] {
  return rules
    .map((raw) => {
      const r = obj(raw) ?? {};
      const filter = obj(r.Filter) ?? {};
      const and = obj(filter.And) ?? {};
      const tags = [...list(and.Tags), ...list(filter.Tag)].map((t) => `${obj(t)?.Key}=${obj(t)?.Value}`);
      return comparable({
        id: String(r.ID ?? ''),
        enabled: r.Status === 'Enabled',
        prefix: String(and.Prefix ?? filter.Prefix ?? r.Prefix ?? ''),
        tags,
        expirationDays: days(obj(r.Expiration)?.Days),
        transitions: list(r.Transitions).map((t) => `${days(obj(t)?.Days)}:${obj(t)?.StorageClass}`),
        abortMultipartDays: days(obj(r.AbortIncompleteMultipartUpload)?.DaysAfterInitiation),
      });
    })
    .sort((a, b) => a.id.localeCompare(b.id));
}

/** OSS rules (ali-oss's shape, as sent or as `getBucketLifecycle` reads them back: numbers as text) by what they do. Sorted by id. */
export function comparableOssRules(rules: readonly unknown[]): ComparableRule[] {
  return rules
    .map((raw) => {
      const r = obj(raw) ?? {};
      return comparable({
        id: String(r.id ?? ''),
        enabled: r.status === 'Enabled',
        prefix: String(r.prefix ?? ''),
        tags: list(r.tag).map((t) => `${obj(t)?.key}=${obj(t)?.value}`),
        expirationDays: days(obj(r.expiration)?.days),
        transitions: list(r.transition).map((t) => `${days(obj(t)?.days)}:${obj(t)?.storageClass}`),
        abortMultipartDays: days(obj(r.abortMultipartUpload)?.days),
      });
    })
    .sort((a, b) => a.id.localeCompare(b.id));
}

function sameRules(a: readonly ComparableRule[], b: readonly ComparableRule[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

// DynamoDB

async function lockTable(client: DynamoDBClient, table: string, timeoutMs: number, add: Add) {
  const label = `lock table ${table}`;
  await optional(label, add, async () => {
    let description = await describeTable(client, table);
    let status: BootstrapStatus = 'already there';
    if (!description) {
      try {
        await client.send(
          new CreateTableCommand({
            TableName: table,
            AttributeDefinitions: [{ AttributeName: LOCK_TABLE_KEY, AttributeType: 'S' }],
            KeySchema: [{ AttributeName: LOCK_TABLE_KEY, KeyType: 'HASH' }],
            BillingMode: 'PAY_PER_REQUEST',
          }),
        );
        status = 'created';
      } catch (error) {
        if (described(error).code !== 'ResourceInUseException') throw error;
      }
      description = await describeTable(client, table);
    }
    const key = description?.KeySchema ?? [];
    const type = description?.AttributeDefinitions?.find(
      (a) => a.AttributeName === LOCK_TABLE_KEY,
    )?.AttributeType;
    if (
      key.length !== 1 ||
      key[0]?.AttributeName !== LOCK_TABLE_KEY ||
      key[0]?.KeyType !== 'HASH' ||
      type !== 'S'
    ) {
      const has = key.map((k) => `${k.AttributeName} ${k.KeyType}`).join(', ');
      throw new BootstrapError(
        label,
        `its key is ${has || 'unknown'}; the lock needs ${LOCK_TABLE_KEY} (string) as its only key: choose another LOCK_TABLE`,
      );
    }
    await waitUntilActive(client, table, description, timeoutMs);
    const billing = description?.BillingModeSummary?.BillingMode ?? 'PROVISIONED';
    return [status, `key ${LOCK_TABLE_KEY}, ${billing === 'PAY_PER_REQUEST' ? 'on-demand' : billing}`];
  });

  await optional('TTL', add, async (skip) => {
    const { TimeToLiveDescription: ttl } = await client
      .send(new DescribeTimeToLiveCommand({ TableName: table }))
      .catch((error: unknown) => skip('DescribeTimeToLive', error));
    const on = ttl?.TimeToLiveStatus === 'ENABLED' || ttl?.TimeToLiveStatus === 'ENABLING';
    if (on && ttl?.AttributeName === LOCK_TTL_ATTRIBUTE) return ['already there', `on ${LOCK_TTL_ATTRIBUTE}`];
    // A table has one TTL attribute; one set to another is someone's choice: leave it.
    if (on)
      return [
        'skipped',
        `TTL is on ${ttl?.AttributeName}, the lock writes ${LOCK_TTL_ATTRIBUTE}: left as it is`,
      ];
    await client
      .send(
        new UpdateTimeToLiveCommand({
          TableName: table,
          TimeToLiveSpecification: { AttributeName: LOCK_TTL_ATTRIBUTE, Enabled: true },
        }),
      )
      .catch((error: unknown) => skip('UpdateTimeToLive', error));
    return ['applied', `on ${LOCK_TTL_ATTRIBUTE}`];
  });
}

async function describeTable(client: DynamoDBClient, table: string): Promise<TableDescription | undefined> {
  try {
    return (await client.send(new DescribeTableCommand({ TableName: table }))).Table;
  } catch (error) {
    if (described(error).code === 'ResourceNotFoundException') return undefined;
    throw error;
  }
}

/** A table takes requests once ACTIVE (until then they fail with ResourceNotFoundException). */
async function waitUntilActive(
  client: DynamoDBClient,
  table: string,
  first: TableDescription | undefined,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let description = first;
  for (let delay = 20; description?.TableStatus !== 'ACTIVE'; delay = Math.min(1000, delay * 2)) {
    if (Date.now() > deadline) {
      throw new BootstrapError(
        `lock table ${table}`,
        `still ${description?.TableStatus} after ${timeoutMs} ms`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    description = await describeTable(client, table);
  }
}
