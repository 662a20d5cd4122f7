/**
 * The lifecycle deployment parameters (lib/lifecycle/deployment.ts) on AWS: invalid combinations
 * refused with the parameter's name by deploymentSettings and by osls when it resolves
 * serverless.yml (`serverless print`, offline: the same resolution `serverless package` runs); the
 * tracing parameter turning on Lambda's active tracing and the Powertools Tracer, which then sends
 * X-Ray subsegments (to a daemon address on 127.0.0.1 here), and nothing when off; the issuer a
 * stage other than dev must give (a real https: one) and the guard-rail parameters' checks
 * (scripts/deployment-guards.ts).
 */
import { execFile } from 'node:child_process';
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { DeploymentParameterError, deploymentSettings } from '../../lib/lifecycle/deployment.js';
import {
  ENGINE_PARAMETERS,
  engineValues,
  GUARD_PARAMETERS,
  guardValues,
  issuerRefusal,
  REAL_ISSUER_PATTERN,
  routeLogicalId,
} from '../../scripts/deployment-guards.js';

const run = promisify(execFile);

beforeAll(async () => {
  await run('node', ['scripts/build.mjs', 'sls-deployment', 'aws/api']);
});

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(DeploymentParameterError);
    return error as DeploymentParameterError;
  }
  throw new Error('not refused');
};

describe('engine parameters (scripts/deployment-guards.ts)', () => {
  it('default to the object store and DynamoDB, with no VPC', () => {
    expect(engineValues({}, 's3')).toEqual({
      env: {
        STORE_BACKEND: 's3',
        LOCK_BACKEND: 'dynamodb',
        REDIS_URL: '',
        REDIS_CLUSTER_NODES: '',
        REDIS_SENTINELS: '',
        REDIS_SENTINEL_NAME: '',
        REDIS_WAIT_REPLICAS: '',
        MYSQL_URL: '',
        BLOB_BACKEND: 'none',
      },
    });
    expect(engineValues({ storeBackend: null }, 'oss').env.STORE_BACKEND).toBe('oss');
    // An engine's blob store is the stack's bucket, on this cloud only.
    expect(
      engineValues({ storeBackend: 'redis', redisUrl: 'redis://c:6379', blobBackend: 's3' }, 's3').env,
    ).toMatchObject({
      BLOB_BACKEND: 's3',
    });
    expect(() => engineValues({ blobBackend: 'oss' }, 's3')).toThrow(/blobBackend: must be s3 or none/);
    // Redis through Sentinel, with WAIT; a Sentinel list without the master's name is refused by name.
    expect(
      engineValues(
        {
          storeBackend: 'redis',
          redisSentinels: '10.0.0.1:26379,10.0.0.2:26379',
          redisSentinelName: 'main',
          redisWaitReplicas: '1',
        },
        'oss',
      ).env,
    ).toMatchObject({
      REDIS_SENTINELS: '10.0.0.1:26379,10.0.0.2:26379',
      REDIS_SENTINEL_NAME: 'main',
      REDIS_WAIT_REPLICAS: '1',
    });
    expect(() => engineValues({ storeBackend: 'redis', redisSentinels: '10.0.0.1:26379' }, 's3')).toThrow(
      /^parameter redisSentinelName: /,
    );
    expect(() => engineValues({ blobBackend: 'fs' }, 'oss')).toThrow(/blobBackend: must be oss or none/);
    // Every parameter has its ROS twin.
    expect(ENGINE_PARAMETERS.map((p) => p.ros)).toEqual([
      'StoreBackend',
      'LockBackend',
      'RedisUrl',
      'RedisClusterNodes',
      'RedisSentinels',
      'RedisSentinelName',
      'RedisWaitReplicas',
      'MysqlUrl',
      'BlobBackend',
      'VSwitchIds',
      'SecurityGroupId',
    ]);
  });

  it('give the functions the engine and its URL, and the VPC when both halves are given', () => {
    const values = engineValues(
      {
        storeBackend: 'mysql',
        lockBackend: 'redis',
        mysqlUrl: 'mysql://u:p@db:3306/agent',
        redisUrl: 'rediss://cache:6379',
        subnetIds: 'subnet-0a, subnet-0b',
        securityGroupIds: 'sg-01',
      },
      's3',
    );
    expect(values.env).toMatchObject({
      STORE_BACKEND: 'mysql',
      LOCK_BACKEND: 'redis',
      MYSQL_URL: 'mysql://u:p@db:3306/agent',
      REDIS_URL: 'rediss://cache:6379',
    });
    expect(values.vpc).toEqual({ subnetIds: ['subnet-0a', 'subnet-0b'], securityGroupIds: ['sg-01'] });
  });

  it('refuse an engine without its URL, a malformed URL, an unknown backend and half a VPC, naming the parameter', () => {
    const named = (given: Record<string, string>, cloud: 's3' | 'oss' = 's3') =>
      refusal(() => engineValues(given, cloud));
    expect(named({ storeBackend: 'mysql' })).toMatchObject({ parameter: 'mysqlUrl' });
    expect(named({ lockBackend: 'mysql' }).message).toMatch(/mysqlUrl: required when/);
    expect(named({ storeBackend: 'redis' }).parameter).toBe('redisUrl');
    expect(named({ storeBackend: 'mysql', mysqlUrl: 'postgres://u:p@h:1/db' }).parameter).toBe('mysqlUrl');
    expect(named({ lockBackend: 'redis', redisUrl: 'http://cache:6379' }).parameter).toBe('redisUrl');
    expect(named({ storeBackend: 'redis', redisClusterNodes: 'a:1,b' }).parameter).toBe('redisClusterNodes');
    expect(named({ storeBackend: 'oss' }, 's3').parameter).toBe('storeBackend');
    expect(named({ storeBackend: 's3' }, 'oss').parameter).toBe('storeBackend');
    expect(named({ lockBackend: 'memory' }).parameter).toBe('lockBackend');
    expect(named({ subnetIds: 'subnet-0a' }).parameter).toBe('securityGroupIds');
    expect(named({ securityGroupIds: 'sg-01' }).parameter).toBe('subnetIds');
    expect(named({ subnetIds: 'subnet 0a', securityGroupIds: 'sg-01' }).parameter).toBe('subnetIds');
  });
});

describe('deployment parameters', () => {
  it('fill in the defaults and give the functions the same values the rules use', () => {
    const s = deploymentSettings('s3', { retentionDays: '7' });
    expect(s.env).toMatchObject({
      RETENTION_DAYS: '7',
      STATE_GRACE_DAYS: '2',
      KEEPALIVE_MS: '3600000',
      ARCHIVE_STORAGE_CLASS: 'GLACIER_IR',
    });
    expect(s.rules.find((r) => r.id === 'session-state')?.expirationDays).toBe(9);
    expect(deploymentSettings('oss').env.ARCHIVE_STORAGE_CLASS).toBe('Archive');
  });

  it('refuse invalid values and combinations, naming the parameter', () => {
    expect(refusal(() => deploymentSettings('s3', { retentionDays: '7.5' })).parameter).toBe('retentionDays');
    expect(refusal(() => deploymentSettings('s3', { stateGraceDays: 31 })).parameter).toBe('stateGraceDays');
    // S3 refuses a STANDARD_IA transition before 30 days; OSS has no such minimum.
    const ia = refusal(() =>
      deploymentSettings('s3', { archiveStorageClass: 'STANDARD_IA', archiveTransitionDays: 10 }),
    );
    expect(ia.parameter).toBe('archiveStorageClass');
    expect(ia.message).toContain('archiveTransitionDays=10');
    expect(
      deploymentSettings('oss', { archiveStorageClass: 'IA', archiveTransitionDays: 10 }).rules,
    ).toHaveLength(6);
    expect(refusal(() => deploymentSettings('s3', { workspaceStorageClass: 'Archive' })).parameter).toBe(
      'workspaceStorageClass',
    );
    expect(
      refusal(() => deploymentSettings('oss', { workspaceTransitionDays: 200, workspaceRetentionDays: 200 }))
        .parameter,
    ).toBe('workspaceStorageClass');
    // Retention and grace against keep-alive: each must be more than twice the keep-alive interval.
    const day = 86_400_000;
    expect(refusal(() => deploymentSettings('s3', { keepAliveMs: day })).parameter).toBe('keepAliveMs');
    expect(
      refusal(() => deploymentSettings('s3', { stateGraceDays: 30, retentionDays: 1, keepAliveMs: day / 2 }))
        .message,
    ).toContain('retentionDays');
    expect(
      deploymentSettings('s3', { stateGraceDays: 30, retentionDays: 2, keepAliveMs: day / 2 - 1 }).env
        .KEEPALIVE_MS,
    ).toBe(String(day / 2 - 1));
  });

  it('are refused by serverless package (osls resolving serverless.yml) with the parameter named', async () => {
    const sls = (...params: string[]) =>
      run('npx', ['serverless', 'print', '--stage', 'dev', ...params.flatMap((p) => ['--param', p])], {
        env: { ...process.env, SLS_TELEMETRY_DISABLED: '1', SLS_NOTIFICATIONS_MODE: 'off' },
        timeout: 60_000,
      }).then(
        (out) => ({ code: 0, output: out.stdout + out.stderr }),
        (error: { code: number; stdout: string; stderr: string }) => ({
          code: error.code,
          output: error.stdout + error.stderr,
        }),
      );
    const [ia, keepAlive, traced] = await Promise.all([
      sls('archiveStorageClass=STANDARD_IA', 'archiveTransitionDays=10'),
      sls('keepAliveMs=172800000'),
      sls('tracing=true', 'retentionDays=7'),
    ]);
    expect(ia.code).not.toBe(0);
    expect(ia.output).toContain(
      'parameter archiveStorageClass: s3 refuses a STANDARD_IA transition before 30 days',
    );
    expect(ia.output).toContain('archiveTransitionDays=10');
    expect(keepAlive.code).not.toBe(0);
    expect(keepAlive.output).toContain(
      'parameter keepAliveMs: 172800000 ms must be under half of stateGraceDays',
    );
    expect(traced.code).toBe(0);
    expect(traced.output).toMatch(/tracing:\n\s+lambda: Active/);
    expect(traced.output).toMatch(/TRACING: 'true'/);
    expect(traced.output).toMatch(/RETENTION_DAYS: '7'/);
  });
});

describe('the identity provider and the guard rails', () => {
  it('takes only a real https: issuer, refusing the hosts reserved for examples and tests', () => {
    for (const real of [
      'https://login.acme-agents.io/',
      'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC123',
      'https://acme.eu.auth0.com/',
      'https://idp.corp:8443/realms/agents',
      'https://example.com.acme.io/',
      'https://notexample.com/',
    ])
      expect(issuerRefusal(real), real).toBeUndefined();
    for (const placeholder of [
      'https://issuer.example.com/',
      'https://example.org',
      'https://a.b.example.net/x',
      'https://idp.test/',
      'https://test/',
      'https://login.invalid/',
      'https://localhost:8443/realms/x',
      'https://idp.localhost/',
      'https://example.com./',
      // Host names are case-insensitive.
      'https://ISSUER.EXAMPLE.COM/',
      'HTTPS://Login.Invalid/x',
    ])
      expect(issuerRefusal(placeholder), placeholder).toMatch(/is a placeholder/);
    for (const insecure of ['http://login.acme-agents.io/', 'login.acme-agents.io', '', 'https://'])
      expect(issuerRefusal(insecure), insecure).toMatch(/must be an https: URL/);
    // The ROS template checks the same expression (AllowedPattern).
    expect(new RegExp(REAL_ISSUER_PATTERN).test('https://issuer.example.com/')).toBe(false);
  });

  it('fill the guard rails in with their defaults and refuse invalid values, naming the parameter', () => {
    const defaults = guardValues({});
    for (const p of GUARD_PARAMETERS) expect(defaults[p.name], p.name).toBe(p.default);
    expect(guardValues({ throttleRateLimit: '20', alarm5xxPercent: '0.5' })).toMatchObject({
      throttleRateLimit: 20,
      alarm5xxPercent: 0.5,
    });
    const refused = (given: Record<string, unknown>) => {
      try {
        guardValues(given);
      } catch (error) {
        expect(error).toBeInstanceOf(DeploymentParameterError);
        return (error as DeploymentParameterError).message;
      }
      throw new Error('not refused');
    };
    expect(refused({ throttleRateLimit: '0' })).toMatch(
      /^parameter throttleRateLimit: must be a whole number/,
    );
    expect(refused({ turnsThrottleBurstLimit: '1.5' })).toMatch(/^parameter turnsThrottleBurstLimit:/);
    expect(refused({ accessLogRetentionDays: '10' })).toMatch(
      /^parameter accessLogRetentionDays: must be one of 1, 3, 5/,
    );
    expect(refused({ alarmTopicArn: 'ops-alarms' })).toMatch(
      /^parameter alarmTopicArn: must be an SNS topic ARN/,
    );
    expect(refused({ alarmLatencyP99Ms: '60000' })).toMatch(/^parameter alarmLatencyP99Ms:/);
    expect(guardValues({ alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:ops' }).alarmTopicArn).toBe(
      'arn:aws:sns:eu-west-1:123456789012:ops',
    );
  });

  it('are each documented in docs/deploying.md with their default', () => {
    const docs = readFileSync('docs/deploying.md', 'utf8');
    const rows = docs.split('\n').filter((l) => l.startsWith('| `'));
    for (const p of GUARD_PARAMETERS) {
      const row = rows.find((r) => r.includes(`\`${p.name}\``));
      expect(row, p.name).toBeDefined();
      if (p.default !== '') expect(row, p.name).toMatch(new RegExp(`\\| [^|]*\\b${p.default}\\b`));
    }
  });

  it('and the engine parameters too, each with its ROS twin', () => {
    const rows = readFileSync('docs/deploying.md', 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('| `'));
    for (const p of ENGINE_PARAMETERS)
      expect(
        rows.find((r) => r.startsWith(`| \`${p.name}\` |`)),
        p.name,
      ).toContain(`\`${p.ros}\``);
  });

  it("names routes as osls does (the stage's DependsOn)", () => {
    expect(routeLogicalId('POST /v1/sessions/{sessionId}/turns')).toBe(
      'HttpApiRoutePostV1SessionsSessionidVarTurns',
    );
    expect(routeLogicalId('GET /v1/openapi.json')).toBe('HttpApiRouteGetV1Openapijson');
  });
});

describe('X-Ray through Powertools Tracer', () => {
  /** Runs the bundled Lambda handler on a health event; returns the datagrams the X-Ray daemon got. */
  const invoke = async (tracing: string) => {
    const daemon = dgram.createSocket('udp4');
    const datagrams: string[] = [];
    daemon.on('message', (m) => datagrams.push(m.toString()));
    await new Promise<void>((r) => daemon.bind(0, '127.0.0.1', r));
    try {
      const script = `import('./dist/aws/api.mjs').then((m) => m.handler({ version: '2.0', routeKey: '$default', rawPath: '/v1/health', rawQueryString: '', headers: {}, requestContext: { http: { method: 'GET', path: '/v1/health' }, requestId: 'r1' }, isBase64Encoded: false }, { functionName: 'f', awsRequestId: 'r1', getRemainingTimeInMillis: () => 1000 })).then((r) => console.log(JSON.stringify({ answer: r })))`;
      const { stdout } = await run('node', ['--input-type=module', '-e', script], {
        env: {
          ...process.env,
          NODE_OPTIONS: '',
          TRACING: tracing,
          AWS_LAMBDA_FUNCTION_NAME: 'f',
          AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
          LAMBDA_TASK_ROOT: process.cwd(),
          _HANDLER: 'functions/aws/api.handler',
          _X_AMZN_TRACE_ID: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
          AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemon.address().port}`,
          STORE_BACKEND: 's3',
          S3_BUCKET: 'b',
          LOCK_BACKEND: 'dynamodb',
          LOCK_TABLE: 't',
          AWS_REGION: 'us-east-1',
          LOG_LEVEL: 'SILENT',
        },
      });
      const answer = JSON.parse(stdout.split('\n').find((l) => l.startsWith('{"answer"')) ?? '{}').answer;
      await new Promise((r) => setTimeout(r, 200));
      return { answer, datagrams };
    } finally {
      daemon.close();
    }
  };

  it('sends a subsegment per invocation, annotated, only with TRACING=true', async () => {
    const [on, off] = await Promise.all([invoke('true'), invoke('')]);
    expect(on.answer.statusCode).toBe(200);
    expect(off.answer.statusCode).toBe(200);
    const segments = on.datagrams.map((d) => JSON.parse(d.split('\n')[1] ?? '{}'));
    const handler = segments.find((s) => s.name === '## functions/aws/api.handler');
    expect(handler).toMatchObject({
      type: 'subsegment',
      trace_id: '1-5759e988-bd862e3fe1be46a994272793',
      parent_id: '53995c3f42cd8ad8',
      annotations: { Service: 'agent-state' },
    });
    // The answer (a user's state, on other routes) is not recorded.
    expect(JSON.stringify(handler)).not.toContain('status');
    expect(off.datagrams).toEqual([]);
  });
});
