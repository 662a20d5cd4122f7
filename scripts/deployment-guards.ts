/**
 * What a production stack needs beside the lifecycle parameters (lib/lifecycle/deployment.ts), read
 * by the AWS renderer (scripts/sls-deployment.ts) and mirrored by the ROS template:
 * - the identity provider and CORS, given explicitly on every stage but the example one (`dev`,
 *   serverless.yml's `params.dev`), the issuer a real one (`REAL_ISSUER_PATTERN`, also the ROS
 *   template's `AllowedPattern` of JwtIssuer and JwksUrl);
 * - the guard rails (`GUARD_PARAMETERS`): the HTTP API stage's throttling and the turn routes' own,
 *   the access logs' retention, the alarms' thresholds and the SNS topic they notify, rendered as the
 *   stage's settings and CloudWatch alarms (`awsGuardRails`);
 * - the engines (`ENGINE_PARAMETERS`): the store and the lock on Redis or MySQL instead of the
 *   object store and DynamoDB, their URLs checked as lib/config.ts checks them at cold start, and
 *   the functions' VPC (`engineValues`; docs/deploying.md, "Redis and MySQL in a deployment").
 * Every refusal is a `DeploymentParameterError` naming the parameter.
 */

import { ConfigError, loadConfig } from '../lib/config.js';
import { PROBLEMS_METRIC } from '../lib/http/metrics.js';
import { DeploymentParameterError } from '../lib/lifecycle/deployment.js';
import { PATHS } from '../lib/protocol/paths.js';

/** The stage whose identity and CORS parameters may be serverless.yml's examples (`params.dev`). */
export const EXAMPLE_STAGE = 'dev';

/**
 * A real issuer: an `https:` URL whose host is not reserved for examples and tests (RFC 2606's
 * example.com, .org and .net, `.test`, `.invalid`) nor `localhost`. A regular expression, so the
 * ROS template can check the same rule as its parameters' `AllowedPattern`.
 */
export const REAL_ISSUER_PATTERN =
  '^https://(?!(?:[^/:?#]*[.])?(?:example[.](?:com|org|net)|test|invalid|localhost)[.]?(?:[:/?#]|$))[^/:?#]+(?::[0-9]+)?(?:[/?#].*)?$';

/** Why `value` is not a real issuer (undefined when it is one). */
export function issuerRefusal(value: string): string | undefined {
  // Checked as the URL parser spells it (scheme and host in lower case): host names are
  // case-insensitive. (The ROS template's AllowedPattern sees the value as given.)
  const spelled = URL.canParse(value) ? new URL(value).href : value;
  if (new RegExp(REAL_ISSUER_PATTERN).test(spelled)) return undefined;
  if (!URL.canParse(value) || new URL(value).protocol !== 'https:')
    return `must be an https: URL, not ${JSON.stringify(value)}`;
  return `${JSON.stringify(value)} is a placeholder (example.com, .org, .net, .test, .invalid and localhost are reserved): give your identity provider's issuer`;
}

/** One guard-rail parameter of the AWS deployment (`--param <name>=<value>`). */
export interface GuardParameter {
  readonly name: string;
  /** A number in [min, max] (whole unless `fraction`), one of `choices`, or an SNS topic ARN. */
  readonly kind: 'number' | 'choice' | 'topic';
  readonly min?: number;
  readonly max?: number;
  readonly fraction?: boolean;
  readonly choices?: readonly number[];
  readonly default: number | string;
  readonly description: string;
}

/** The retention periods CloudWatch Logs accepts (PutRetentionPolicy), in days. */
const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

/** The AWS guard-rail parameters, with their defaults. */
export const GUARD_PARAMETERS: readonly GuardParameter[] = [
  {
    name: 'throttleRateLimit',
    kind: 'number',
    min: 1,
    max: 10_000,
    default: 100,
    description: "Requests per second the HTTP API's stage allows, steady (DefaultRouteSettings)",
  },
  {
    name: 'throttleBurstLimit',
    kind: 'number',
    min: 1,
    max: 5_000,
    default: 200,
    description: "Requests the HTTP API's stage allows at once (DefaultRouteSettings)",
  },
  {
    name: 'turnsThrottleRateLimit',
    kind: 'number',
    min: 1,
    max: 10_000,
    default: 50,
    description: 'Requests per second of each turn route (POST …/turns, …/commits, …/snapshot)',
  },
  {
    name: 'turnsThrottleBurstLimit',
    kind: 'number',
    min: 1,
    max: 5_000,
    default: 100,
    description: 'Requests at once of each turn route (POST …/turns, …/commits, …/snapshot)',
  },
  {
    name: 'accessLogRetentionDays',
    kind: 'choice',
    choices: LOG_RETENTION_DAYS,
    default: 30,
    description: "Days the HTTP API's JSON access logs are kept (one of CloudWatch Logs' periods)",
  },
  {
    name: 'alarmTopicArn',
    kind: 'topic',
    default: '',
    description: 'The SNS topic every alarm notifies; empty: the stack creates one (output AlarmTopicArn)',
  },
  {
    name: 'alarm5xxPercent',
    kind: 'number',
    min: 0.1,
    max: 100,
    fraction: true,
    default: 1,
    description: "The HTTP API's share of 5xx answers over 5 minutes that raises the alarm, in percent",
  },
  {
    name: 'alarmLatencyP99Ms',
    kind: 'number',
    min: 10,
    max: 29_000,
    default: 3_000,
    description: "A function's p99 duration over 5 minutes that raises its alarm, in milliseconds",
  },
];

/** The turn routes: the ones that hold a lease and write, throttled on their own. */
export const TURN_ROUTES = [PATHS.turns, PATHS.commits, PATHS.snapshot].map((path) => `POST ${path}`);

/**
 * The problem codes that mean the backend, not the caller, is wrong: each is an alarm on the
 * store's `Problems` metric with its `code` (lib/http/metrics.ts counts every problem answer so).
 */
export const BACKEND_PROBLEMS = ['backend-unsafe', 'backend-unavailable', 'backend-misconfigured'] as const;

/** The guard-rail parameters read (absent: the default); a `DeploymentParameterError` when invalid. */
export function guardValues(given: Readonly<Record<string, unknown>>): Record<string, number | string> {
  const values: Record<string, number | string> = {};
  for (const p of GUARD_PARAMETERS) {
    const raw = given[p.name];
    const absent = raw === undefined || raw === null || raw === '';
    if (p.kind === 'topic') {
      const value = absent ? '' : String(raw);
      if (value !== '' && !/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/.test(value))
        throw new DeploymentParameterError(p.name, `must be an SNS topic ARN, not ${JSON.stringify(value)}`);
      values[p.name] = value;
      continue;
    }
    const value = absent ? (p.default as number) : Number(String(raw));
    if (p.kind === 'choice' && !p.choices?.includes(value))
      throw new DeploymentParameterError(
        p.name,
        `must be one of ${p.choices?.join(', ')}, not ${JSON.stringify(raw)}`,
      );
    if (
      p.kind === 'number' &&
      (!Number.isFinite(value) ||
        (!p.fraction && !Number.isInteger(value)) ||
        value < (p.min as number) ||
        value > (p.max as number))
    )
      throw new DeploymentParameterError(
        p.name,
        `must be a ${p.fraction ? 'number' : 'whole number'} from ${p.min} to ${p.max}, not ${JSON.stringify(raw)}`,
      );
    values[p.name] = value;
  }
  return values;
}

/** osls's logical id of a function (`turns` -> `TurnsLambdaFunction`). */
export const lambdaLogicalId = (fn: string) =>
  `${fn[0]?.toUpperCase()}${fn.slice(1).replace(/-/g, 'Dash').replace(/_/g, 'Underscore')}LambdaFunction`;

/** osls's logical id of an HTTP API route (`POST /v1/sessions/{sessionId}/turns` -> `HttpApiRoutePostV1SessionsSessionidVarTurns`). */
export function routeLogicalId(routeKey: string): string {
  const [method = '', path = ''] = routeKey.split(' ');
  const upper = (s: string) => `${s[0]?.toUpperCase() ?? ''}${s.slice(1)}`;
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((part) =>
      part.startsWith('{')
        ? `${upper(
            part
              .slice(1, -1)
              .toLowerCase()
              .replace(/[^0-9a-z]/g, ''),
          )}Var`
        : upper(part.toLowerCase().replace(/[^0-9a-z]/g, '')),
    );
  return `HttpApiRoute${upper(method.toLowerCase())}${parts.join('')}`;
}

/** Where the store's own metrics are (serverless.yml's POWERTOOLS_* environment). */
export interface MetricsTarget {
  readonly namespace: string;
  readonly service: string;
}

/** The JSON access log line of the HTTP API (no identity, no query string, no body). */
export const ACCESS_LOG_FORMAT = JSON.stringify({
  requestId: '$context.requestId',
  requestTime: '$context.requestTime',
  ip: '$context.identity.sourceIp',
  httpMethod: '$context.httpMethod',
  routeKey: '$context.routeKey',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  responseLatency: '$context.responseLatency',
  integrationLatency: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
  authorizerError: '$context.authorizer.error',
});

/** What the guard rails add to the AWS stack: the stage's settings, the log group's, the alarms. */
export function awsGuardRails(
  values: Readonly<Record<string, number | string>>,
  functions: readonly string[],
  metrics: MetricsTarget,
) {
  const v = (name: string) => values[name] as number;
  const topic = values.alarmTopicArn ? values.alarmTopicArn : { Ref: 'AlarmTopic' };
  const period = 300;
  const alarm = (description: string, properties: Record<string, unknown>) => ({
    Type: 'AWS::CloudWatch::Alarm',
    Properties: {
      AlarmDescription: description,
      AlarmActions: [topic],
      OKActions: [topic],
      EvaluationPeriods: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      // No traffic is no failure.
      TreatMissingData: 'notBreaching',
      ...properties,
    },
  });
  const stat = (id: string, namespace: string, metric: string, dimensions: Record<string, unknown>) => ({
    Id: id,
    ReturnData: false,
    MetricStat: {
      Metric: {
        Namespace: namespace,
        MetricName: metric,
        Dimensions: Object.entries(dimensions).map(([Name, Value]) => ({ Name, Value })),
      },
      Period: period,
      Stat: 'Sum',
    },
  });
  const sum = (namespace: string, metric: string, dimensions: Record<string, unknown>) => ({
    Namespace: namespace,
    MetricName: metric,
    Dimensions: Object.entries(dimensions).map(([Name, Value]) => ({ Name, Value })),
    Statistic: 'Sum',
    Period: period,
    Threshold: 1,
  });
  const resources: Record<string, unknown> = {};
  if (!values.alarmTopicArn)
    resources.AlarmTopic = { Type: 'AWS::SNS::Topic', Properties: { DisplayName: 'agent-state alarms' } };
  resources.Api5xxRateAlarm = alarm(
    `HTTP API: 5xx answers at or over ${v('alarm5xxPercent')}% in 5 minutes`,
    {
      Threshold: v('alarm5xxPercent'),
      Metrics: [
        stat('errors', 'AWS/ApiGateway', '5xx', { ApiId: { Ref: 'HttpApi' } }),
        stat('requests', 'AWS/ApiGateway', 'Count', { ApiId: { Ref: 'HttpApi' } }),
        {
          Id: 'rate',
          Expression: 'IF(requests > 0, 100 * errors / requests, 0)',
          Label: '5xx %',
          ReturnData: true,
        },
      ],
    },
  );
  for (const fn of functions) {
    const id = lambdaLogicalId(fn);
    const name = id.replace(/LambdaFunction$/, '');
    const dimensions = { FunctionName: { Ref: id } };
    if (!SCHEDULED_FUNCTIONS.includes(fn))
      resources[`${name}LatencyP99Alarm`] = alarm(
        `${fn}: p99 duration at or over ${v('alarmLatencyP99Ms')} ms in 5 minutes`,
        {
          Namespace: 'AWS/Lambda',
          MetricName: 'Duration',
          Dimensions: [{ Name: 'FunctionName', Value: { Ref: id } }],
          ExtendedStatistic: 'p99',
          Period: period,
          Threshold: v('alarmLatencyP99Ms'),
        },
      );
    resources[`${name}ErrorsAlarm`] = alarm(
      `${fn}: invocations that failed`,
      sum('AWS/Lambda', 'Errors', dimensions),
    );
    resources[`${name}ThrottlesAlarm`] = alarm(
      `${fn}: invocations throttled`,
      sum('AWS/Lambda', 'Throttles', dimensions),
    );
  }
  resources.LockTableThrottlesAlarm = alarm('lock table: throttled reads or writes', {
    Threshold: 1,
    Metrics: [
      stat('reads', 'AWS/DynamoDB', 'ReadThrottleEvents', { TableName: { Ref: 'LockTable' } }),
      stat('writes', 'AWS/DynamoDB', 'WriteThrottleEvents', { TableName: { Ref: 'LockTable' } }),
      { Id: 'throttles', Expression: 'reads + writes', Label: 'throttle events', ReturnData: true },
    ],
  });
  for (const code of BACKEND_PROBLEMS) {
    const name = code.replace(/(^|-)([a-z])/g, (_, __, c: string) => c.toUpperCase());
    resources[`${name}Alarm`] = alarm(
      `the store answered ${code}`,
      sum(metrics.namespace, PROBLEMS_METRIC, { service: metrics.service, code }),
    );
  }
  const limits = (rate: string, burst: string) => ({
    ThrottlingRateLimit: v(rate),
    ThrottlingBurstLimit: v(burst),
  });
  const extensions = {
    HttpApiStage: {
      Properties: {
        DefaultRouteSettings: {
          DetailedMetricsEnabled: false,
          ...limits('throttleRateLimit', 'throttleBurstLimit'),
        },
        RouteSettings: Object.fromEntries(
          TURN_ROUTES.map((key) => [key, limits('turnsThrottleRateLimit', 'turnsThrottleBurstLimit')]),
        ),
      },
      // A stage's RouteSettings name routes that must exist first.
      DependsOn: TURN_ROUTES.map(routeLogicalId),
    },
    HttpApiLogGroup: { Properties: { RetentionInDays: v('accessLogRetentionDays') } },
  };
  const outputs = values.alarmTopicArn ? {} : { AlarmTopicArn: { Value: { Ref: 'AlarmTopic' } } };
  return { resources, extensions, outputs };
}

/** One engine parameter of a deployment (serverless.yml's `--param`, the ROS template's parameter). */
export interface EngineParameter {
  readonly name: string;
  /** The ROS template's parameter. */
  readonly ros: string;
  /** The functions' variable it sets (lib/config.ts), if any. */
  readonly variable?:
    | 'STORE_BACKEND'
    | 'LOCK_BACKEND'
    | 'REDIS_URL'
    | 'REDIS_CLUSTER_NODES'
    | 'MYSQL_URL'
    | 'BLOB_BACKEND'
    | 'REDIS_SENTINELS'
    | 'REDIS_SENTINEL_NAME'
    | 'REDIS_WAIT_REPLICAS';
  readonly description: string;
}

/** The engine and network parameters (empty or absent: the object store, DynamoDB, no VPC). */
export const ENGINE_PARAMETERS: readonly EngineParameter[] = [
  {
    name: 'storeBackend',
    ros: 'StoreBackend',
    variable: 'STORE_BACKEND',
    description: "Where state lives: the cloud's object store (s3 or oss, the default), redis or mysql",
  },
  {
    name: 'lockBackend',
    ros: 'LockBackend',
    variable: 'LOCK_BACKEND',
    description: 'The session lock: dynamodb (the default), redis or mysql',
  },
  {
    name: 'redisUrl',
    ros: 'RedisUrl',
    variable: 'REDIS_URL',
    description: 'redis:// or rediss:// URL of one Redis server (redis store or lock)',
  },
  {
    name: 'redisClusterNodes',
    ros: 'RedisClusterNodes',
    variable: 'REDIS_CLUSTER_NODES',
    description: 'host:port seed nodes of a Redis Cluster, comma-separated (instead of redisUrl)',
  },
  {
    name: 'redisSentinels',
    ros: 'RedisSentinels',
    variable: 'REDIS_SENTINELS',
    description: "host:port of the Sentinels of a Redis master, comma-separated (instead of redisUrl's host)",
  },
  {
    name: 'redisSentinelName',
    ros: 'RedisSentinelName',
    variable: 'REDIS_SENTINEL_NAME',
    description: 'the master name the Sentinels monitor (with redisSentinels)',
  },
  {
    name: 'redisWaitReplicas',
    ros: 'RedisWaitReplicas',
    variable: 'REDIS_WAIT_REPLICAS',
    description: 'replicas that must acknowledge every Redis write (WAIT, same round trip); empty or 0: off',
  },
  {
    name: 'mysqlUrl',
    ros: 'MysqlUrl',
    variable: 'MYSQL_URL',
    description: 'mysql://user:password@host:port/database (mysql store or lock)',
  },
  {
    name: 'blobBackend',
    ros: 'BlobBackend',
    variable: 'BLOB_BACKEND',
    description:
      "An engine store's workspaces, snapshots and (Redis) archives: the stack's bucket (s3 or oss) or none (the default)",
  },
  {
    name: 'subnetIds',
    ros: 'VSwitchIds',
    description: "The functions' VPC subnets (vSwitches on FC), comma-separated; empty: no VPC",
  },
  {
    name: 'securityGroupIds',
    ros: 'SecurityGroupId',
    description: "The functions' security groups (one on FC), comma-separated; with subnetIds",
  },
];

/** What the engine parameters give a deployment. */
export interface EngineValues {
  /** The functions' environment (empty strings for absent URLs: lib/config.ts reads them as unset). */
  readonly env: Readonly<Record<string, string>>;
  /** The functions' VPC, only when subnetIds is given. */
  readonly vpc?: { readonly subnetIds: readonly string[]; readonly securityGroupIds: readonly string[] };
}

/** A comma-separated list (empty: none), each entry matching `pattern`. */
function idList(name: string, raw: string, pattern: RegExp, what: string): string[] {
  const ids = raw === '' ? [] : raw.split(',').map((id) => id.trim());
  for (const id of ids)
    if (!pattern.test(id))
      throw new DeploymentParameterError(name, `must be ${what}, comma-separated, not ${JSON.stringify(id)}`);
  return ids;
}

/**
 * The engine parameters read for a cloud whose object store is `objectStore` (absent: the object
 * store, the DynamoDB lock, no VPC); a `DeploymentParameterError` when a backend is unknown, its URL
 * missing or malformed (lib/config.ts's own checks, named by parameter), or the VPC half given.
 */
export function engineValues(
  given: Readonly<Record<string, unknown>>,
  objectStore: 's3' | 'oss',
): EngineValues {
  const text = (name: string) => {
    const raw = given[name];
    return raw === undefined || raw === null ? '' : String(raw).trim();
  };
  const store = text('storeBackend') || objectStore;
  const lock = text('lockBackend') || 'dynamodb';
  if (![objectStore, 'redis', 'mysql'].includes(store))
    throw new DeploymentParameterError(
      'storeBackend',
      `must be ${objectStore}, redis or mysql, not ${JSON.stringify(store)}`,
    );
  if (!['dynamodb', 'redis', 'mysql'].includes(lock))
    throw new DeploymentParameterError(
      'lockBackend',
      `must be dynamodb, redis or mysql, not ${JSON.stringify(lock)}`,
    );
  const blobs = text('blobBackend') || 'none';
  if (![objectStore, 'none'].includes(blobs))
    throw new DeploymentParameterError(
      'blobBackend',
      `must be ${objectStore} or none, not ${JSON.stringify(blobs)}`,
    );
  // The backends with their defaults; every other variable as given.
  const chosen: Partial<Record<string, string>> = {
    STORE_BACKEND: store,
    LOCK_BACKEND: lock,
    BLOB_BACKEND: blobs,
  };
  const env: Record<string, string> = {};
  for (const p of ENGINE_PARAMETERS) if (p.variable) env[p.variable] = chosen[p.variable] ?? text(p.name);
  // The functions' own checks, as at a cold start (the object store's and the lock table's names
  // are the stack's own resources, so stand-ins here).
  try {
    loadConfig({
      ...env,
      AWS_LAMBDA_FUNCTION_NAME: 'check',
      S3_BUCKET: 'stack',
      OSS_BUCKET: 'stack',
      OSS_REGION: 'stack',
      LOCK_TABLE: 'stack',
    });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const [problem = error.message] = error.problems;
    // `REDIS_CLUSTER_NODES.1: …` names an entry of the variable.
    const variable = problem.slice(0, problem.indexOf(':')).split('.')[0];
    const parameter = ENGINE_PARAMETERS.find((p) => p.variable === variable)?.name ?? 'storeBackend';
    throw new DeploymentParameterError(parameter, problem.slice(problem.indexOf(':') + 1).trim());
  }
  const subnetIds = idList('subnetIds', text('subnetIds'), /^[a-z]+-[0-9a-z]+$/, 'subnet (or vSwitch) ids');
  const securityGroupIds = idList(
    'securityGroupIds',
    text('securityGroupIds'),
    /^sg-[0-9a-z]+$/,
    'security group ids',
  );
  if (subnetIds.length === 0 && securityGroupIds.length > 0)
    throw new DeploymentParameterError('subnetIds', 'required with securityGroupIds');
  if (subnetIds.length > 0 && securityGroupIds.length === 0)
    throw new DeploymentParameterError('securityGroupIds', 'required with subnetIds');
  return { env, ...(subnetIds.length > 0 ? { vpc: { subnetIds, securityGroupIds } } : {}) };
}

/** The managed policy a Lambda function in a VPC needs (its network interfaces). */
export const LAMBDA_VPC_POLICY = {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a CloudFormation Fn::Sub, not a template
  'Fn::Sub': 'arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole',
};

/**
 * The functions' VPC on AWS, when given: each function's VpcConfig (an extension of osls's function
 * resource) and the VPC policy on each role the functions run as.
 */
export function awsVpc(
  vpc: EngineValues['vpc'],
  functions: readonly string[],
  roles: readonly string[],
): { extensions: Record<string, unknown>; roles: Record<string, unknown> } {
  if (!vpc) return { extensions: {}, roles: {} };
  const config = { SubnetIds: [...vpc.subnetIds], SecurityGroupIds: [...vpc.securityGroupIds] };
  return {
    extensions: Object.fromEntries(
      functions.map((fn) => [lambdaLogicalId(fn), { Properties: { VpcConfig: config } }]),
    ),
    roles: Object.fromEntries(roles.map((role) => [role, [LAMBDA_VPC_POLICY]])),
  };
}

/** The scheduled functions (no HTTP route, a duration of minutes): no latency alarm. */
export const SCHEDULED_FUNCTIONS: readonly string[] = ['sweep'];

/** The sweep's schedule: an EventBridge `rate(...)` or `cron(...)` expression. */
export function sweepSchedule(raw: unknown): string {
  const value = raw === undefined || raw === null || raw === '' ? 'rate(1 hour)' : String(raw).trim();
  if (!/^(rate\(([1-9][0-9]*) (minute|minutes|hour|hours|day|days)\)|cron\([^()]+\))$/.test(value))
    throw new DeploymentParameterError(
      'sweepSchedule',
      `must be rate(<n> minutes|hours|days) or cron(...), not ${JSON.stringify(value)}`,
    );
  return value;
}
