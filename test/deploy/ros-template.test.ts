/**
 * infra/aliyun/ros.yaml, which is not deployed from here, checked three ways:
 * - an evaluator of exactly the intrinsic functions the template uses (and a check that it uses no
 *   others) turns it into the stack ROS would create for given parameters, refusing what the
 *   parameters' constraints and the template's Rules refuse: for RetentionDays=7 the bucket's rules
 *   and the function's environment are lib/lifecycle's for 7 days, and for any parameters ROS
 *   refuses exactly what deploymentSettings refuses, naming the same parameter;
 * - every resource of the evaluated stack goes through the validators generated into Alibaba's ROS
 *   CDK packages (and renders back to itself, so no property is unknown to them);
 * - the HTTP trigger's config, an untyped map there, against FC 3.0's documented HTTPTriggerConfig;
 * - the guard rails: no identity parameter has a default, the issuer and the JWKS URL refuse a
 *   placeholder (the AWS rule's expression, as AllowedPattern), the API function's reserved
 *   concurrency, CloudMonitor rules on FC's metrics and the Simple Log Service alert on the
 *   store's problem lines.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import * as cms from '@alicloud/ros-cdk-cms';
import * as ros from '@alicloud/ros-cdk-core';
import * as fc3 from '@alicloud/ros-cdk-fc3';
import * as oss from '@alicloud/ros-cdk-oss';
import * as ram from '@alicloud/ros-cdk-ram';
import * as rosResources from '@alicloud/ros-cdk-ros';
import * as sls from '@alicloud/ros-cdk-sls';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import fc from 'fast-check';
import { SignJWT } from 'jose';
import yaml from 'js-yaml';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { createS3Client } from '../../lib/drivers/s3.js';
import { ROUTES } from '../../lib/http/router.js';
import {
  DEPLOYMENT_PARAMETERS,
  DeploymentParameterError,
  deploymentSettings,
} from '../../lib/lifecycle/deployment.js';
import { lifecycleRules, renderOss, renderRos } from '../../lib/lifecycle/index.js';
import {
  BACKEND_PROBLEMS,
  ENGINE_PARAMETERS,
  issuerRefusal,
  REAL_ISSUER_PATTERN,
} from '../../scripts/deployment-guards.js';
import { OSS_CREDENTIALS } from '../servers/global-setup.js';
import { xmlValues } from '../servers/http-util.js';

// biome-ignore lint/suspicious/noExplicitAny: templates are inspected loosely
type Any = any;
interface Template {
  Parameters: Record<string, Record<string, Any>>;
  Conditions?: Record<string, unknown>;
  Rules?: Record<
    string,
    { RuleCondition?: unknown; Assertions: Array<{ Assert: unknown; AssertDescription?: string }> }
  >;
  Resources: Record<string, { Type: string; Properties: Record<string, Any> }>;
  Outputs?: Record<string, unknown>;
}

// --- A small ROS evaluator: exactly the intrinsic functions the template uses ---------------------

const NO_VALUE = Symbol('ALIYUN::NoValue');
const PSEUDO: Record<string, string> = {
  'ALIYUN::Region': 'cn-hangzhou',
  'ALIYUN::AccountId': '1234567890123456',
};

interface Context {
  readonly template: Template;
  readonly params: Record<string, unknown>;
  conditions: Record<string, boolean>;
  readonly resolved: Record<string, Record<string, unknown>>;
}

/** Integer arithmetic of Fn::Calculate: + - * / % and parentheses (integer division, as ROS documents). */
function calculate(expression: string): number {
  const tokens = expression.match(/\d+|[-+*/%()]/g) ?? [];
  if (tokens.join('') !== expression.replace(/\s+/g, ''))
    throw new Error(`Fn::Calculate: cannot read ${expression}`);
  let at = 0;
  const primary = (): number => {
    const t = tokens[at++];
    if (t === '(') {
      const v = sum();
      if (tokens[at++] !== ')') throw new Error('Fn::Calculate: unbalanced');
      return v;
    }
    if (t === '-') return -primary();
    if (t === undefined || !/^\d+$/.test(t)) throw new Error(`Fn::Calculate: unexpected ${t}`);
    return Number(t);
  };
  const product = (): number => {
    let v = primary();
    while (tokens[at] === '*' || tokens[at] === '/' || tokens[at] === '%') {
      const op = tokens[at++];
      const r = primary();
      v = op === '*' ? v * r : op === '/' ? Math.trunc(v / r) : v % r;
    }
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (tokens[at] === '+' || tokens[at] === '-') v = tokens[at++] === '+' ? v + product() : v - product();
    return v;
  };
  const value = sum();
  if (at !== tokens.length) throw new Error(`Fn::Calculate: trailing ${tokens.slice(at).join('')}`);
  return value;
}

const FUNCTIONS: Record<string, (arg: Any, ctx: Context) => unknown> = {
  Ref: (name: string, ctx) => {
    if (name === 'ALIYUN::NoValue') return NO_VALUE;
    if (name in PSEUDO) return PSEUDO[name];
    if (name in ctx.params) return ctx.params[name];
    const resource = ctx.template.Resources[name];
    // A bucket's Ref is its name; other resources' Refs are not used as values here.
    if (resource?.Type === 'ALIYUN::OSS::Bucket') return evaluate(resource.Properties.BucketName, ctx);
    if (resource) return `ref-of-${name.toLowerCase()}`;
    throw new Error(`Ref to nothing: ${name}`);
  },
  'Fn::Sub': (arg, ctx) => {
    if (typeof arg !== 'string') throw new Error('Fn::Sub: only the string form is implemented');
    return arg.replace(/\$\{([^}]+)\}/g, (_, name: string) => String(FUNCTIONS.Ref?.(name, ctx)));
  },
  'Fn::GetAtt': ([name, attribute]: [string, string], ctx) => {
    const resource = ctx.template.Resources[name];
    if (!resource) throw new Error(`Fn::GetAtt of no resource: ${name}`);
    // An attribute that names one of the resource's properties is that property (as ROS returns it).
    const own = evaluate(resource.Properties[attribute], ctx);
    return own !== undefined ? own : `acs:${resource.Type.toLowerCase()}:${name}:${attribute}`;
  },
  'Fn::Add': (args: unknown[], ctx) => {
    const values = args.map((a) => evaluate(a, ctx));
    if (values.every((v) => typeof v === 'number')) return (values as number[]).reduce((a, b) => a + b, 0);
    if (values.every(Array.isArray)) return (values as unknown[][]).flat();
    return Object.assign({}, ...values);
  },
  'Fn::Str': (arg, ctx) => String(evaluate(arg, ctx)),
  'Fn::If': ([condition, yes, no]: [string, unknown, unknown], ctx) => {
    if (!(condition in ctx.conditions)) throw new Error(`Fn::If: no condition ${condition}`);
    return evaluate(ctx.conditions[condition] ? yes : no, ctx);
  },
  'Fn::Equals': ([a, b]: [unknown, unknown], ctx) =>
    JSON.stringify(evaluate(a, ctx)) === JSON.stringify(evaluate(b, ctx)),
  'Fn::Not': ([a]: [unknown], ctx) => !evaluate(a, ctx),
  'Fn::And': (args: unknown[], ctx) => args.every((a) => evaluate(a, ctx) === true),
  'Fn::Or': (args: unknown[], ctx) => args.some((a) => evaluate(a, ctx) === true),
  'Fn::Split': ([separator, text]: [string, unknown], ctx) => String(evaluate(text, ctx)).split(separator),
  'Fn::Max': (args: unknown[], ctx) => Math.max(...args.map((a) => evaluate(a, ctx) as number)),
  'Fn::Calculate': ([expression, _ndigits, numbers = []]: [string, number, unknown[]], ctx) => {
    const values = numbers.map((n) => evaluate(n, ctx) as number);
    return calculate(expression.replace(/\{(\d+)\}/g, (_, i: string) => String(values[Number(i)])));
  },
};

function evaluate(node: unknown, ctx: Context): Any {
  if (Array.isArray(node)) return node.map((n) => evaluate(n, ctx)).filter((v) => v !== NO_VALUE);
  if (node && typeof node === 'object') {
    const keys = Object.keys(node);
    const only = keys[0] as string;
    if (keys.length === 1 && FUNCTIONS[only]) return FUNCTIONS[only]((node as Any)[only], ctx);
    if (keys.length === 1 && (only === 'Ref' || only.startsWith('Fn::')))
      throw new Error(`not implemented: ${only}`);
    return Object.fromEntries(
      Object.entries(node)
        .map(([k, v]) => [k, evaluate(v, ctx)] as const)
        .filter(([, v]) => v !== NO_VALUE),
    );
  }
  return node;
}

/** Every intrinsic function name the template uses. */
function functionsUsed(node: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const n of node) functionsUsed(n, found);
  else if (node && typeof node === 'object')
    for (const [k, v] of Object.entries(node)) {
      if (k === 'Ref' || k.startsWith('Fn::')) found.add(k);
      functionsUsed(v, found);
    }
  return found;
}

/** What ROS would create, or the refusals (each naming the parameter or the rule's description). */
function createStack(
  template: Template,
  given: Record<string, unknown>,
): { refused: string[]; resources: Record<string, { Type: string; Properties: Any }> } {
  const refused: string[] = [];
  const params: Record<string, unknown> = {};
  for (const [name, p] of Object.entries(template.Parameters)) {
    const raw = name in given ? given[name] : p.Default;
    if (raw === undefined) {
      refused.push(`${name}: required`);
      continue;
    }
    const value = p.Type === 'Number' ? Number(raw) : String(raw);
    if (p.Type === 'Number' && !Number.isFinite(value)) refused.push(`${name}: not a number`);
    if (p.MinValue !== undefined && (value as number) < p.MinValue) refused.push(`${name}: under MinValue`);
    if (p.MaxValue !== undefined && (value as number) > p.MaxValue) refused.push(`${name}: over MaxValue`);
    if (p.AllowedValues && !p.AllowedValues.includes(value)) refused.push(`${name}: not in AllowedValues`);
    if (p.AllowedPattern !== undefined && !new RegExp(p.AllowedPattern).test(String(value)))
      refused.push(`${name}: does not match AllowedPattern`);
    if (p.MinLength !== undefined && String(value).length < p.MinLength)
      refused.push(`${name}: under MinLength`);
    params[name] = value;
  }
  const ctx: Context = { template, params, conditions: {}, resolved: {} };
  if (refused.length > 0) return { refused, resources: {} };
  for (const [name, condition] of Object.entries(template.Conditions ?? {}))
    ctx.conditions[name] = Boolean(evaluate(condition, ctx));
  for (const rule of Object.values(template.Rules ?? {})) {
    if (rule.RuleCondition !== undefined && !evaluate(rule.RuleCondition, ctx)) continue;
    for (const a of rule.Assertions)
      if (evaluate(a.Assert, ctx) !== true) refused.push(a.AssertDescription ?? '?');
  }
  if (refused.length > 0) return { refused, resources: {} };
  const resources = Object.fromEntries(
    Object.entries(template.Resources).map(([name, r]) => [
      name,
      { Type: r.Type, Properties: evaluate(r.Properties, ctx) },
    ]),
  );
  return { refused, resources };
}

// --- Fixtures ---------------------------------------------------------------------------------------

const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const JWKS = { keys: [{ ...publicKey.export({ format: 'jwk' }), alg: 'RS256', use: 'sig', kid: 'k1' }] };
/** The parameters without a default. */
const REQUIRED = {
  BucketName: 'agent-state-test',
  CodeBucket: 'agent-state-code',
  JwksUrl: 'https://login.acme-agents.io/.well-known/jwks.json',
  JwksJson: JSON.stringify(JWKS),
  JwtIssuer: 'https://login.acme-agents.io/',
  JwtAudience: 'acme-agents',
  AwsLockAccessKeyId: 'AKIAEXAMPLE',
  AwsLockSecretAccessKey: 'secret',
  ContactGroup: 'agent-state-ops',
  AlertActionPolicyId: 'agent-state-ops',
};
const rosName = (name: string) => DEPLOYMENT_PARAMETERS.find((p) => p.name === name)?.ros as string;

let template: Template;
beforeAll(async () => {
  template = yaml.load(await readFile('infra/aliyun/ros.yaml', 'utf8')) as Template;
});

describe('ROS template: one source of truth, evaluated', () => {
  it('uses exactly the intrinsic functions the evaluator implements', () => {
    expect([...functionsUsed(template)].sort()).toEqual(Object.keys(FUNCTIONS).sort());
  });

  it('RetentionDays=7: the bucket expires markers after 7 days and state after 9, and the function gets the same parameters', () => {
    const stack = createStack(template, { ...REQUIRED, RetentionDays: 7 });
    expect(stack.refused).toEqual([]);
    const lifecycle = stack.resources.BucketLifecycle?.Properties.Parameters;
    expect(lifecycle.BucketName).toBe(REQUIRED.BucketName);
    expect(lifecycle.Rules).toEqual(renderOss(lifecycleRules('oss', { retentionDays: 7 })));
    const days = Object.fromEntries(lifecycle.Rules.map((r: Any) => [r.id, r.expiration?.days]));
    expect(days).toMatchObject({ 'session-markers': 7, 'session-state': 9 });
    const env = stack.resources.Function?.Properties.EnvironmentVariables;
    expect(env).toMatchObject(deploymentSettings('oss', { retentionDays: 7 }).env);
    expect(env.RETENTION_DAYS).toBe('7');
    expect(env.NODE_OPTIONS).toBe('--enable-source-maps');
    // Every environment value is a string, as FC takes them.
    for (const [name, value] of Object.entries(env)) expect(typeof value, name).toBe('string');
  });

  it('refuses exactly what deploymentSettings refuses, naming the same parameter (and renders the same otherwise)', () => {
    // Mostly valid values, and the edges: out of bounds, keep-alive against the grace and the
    // retention, expiry before (or at) the transition, a class OSS does not have.
    const pick = <T>(...values: T[]) => fc.constantFrom(...values);
    const often = <T>(usual: fc.Arbitrary<T>, edge: fc.Arbitrary<T>) =>
      fc.oneof({ weight: 6, arbitrary: usual }, { weight: 1, arbitrary: edge });
    const days = often(fc.integer({ min: 1, max: 400 }), pick(0, 36_500, 36_501));
    const after = often(fc.integer({ min: 1, max: 400 }), fc.integer({ min: -3, max: 0 }));
    const arbitrary = fc
      .record(
        {
          retentionDays: days,
          stateGraceDays: often(fc.integer({ min: 1, max: 30 }), pick(0, 31)),
          keepAliveMs: often(
            pick(1000, 3_600_000, 43_199_999),
            pick(999, 43_200_000, 86_400_000, 604_800_000, 604_800_001),
          ),
          archiveTransitionDays: days,
          archiveStorageClass: often(pick('IA', 'Archive', 'ColdArchive'), pick('GLACIER')),
          archiveAfter: after,
          workspaceTransitionDays: days,
          workspaceStorageClass: pick('IA', 'Archive', 'ColdArchive'),
          workspaceAfter: after,
          abortMultipartDays: days,
        },
        { requiredKeys: [] },
      )
      .map(({ archiveAfter, workspaceAfter, ...given }) => ({
        ...given,
        ...(archiveAfter === undefined
          ? {}
          : { archiveRetentionDays: (given.archiveTransitionDays ?? 30) + archiveAfter }),
        ...(workspaceAfter === undefined
          ? {}
          : { workspaceRetentionDays: (given.workspaceTransitionDays ?? 30) + workspaceAfter }),
      }));
    let accepted = 0;
    let refused = 0;
    fc.assert(
      fc.property(arbitrary, (given) => {
        const asRos = Object.fromEntries(Object.entries(given).map(([name, v]) => [rosName(name), v]));
        const stack = createStack(template, { ...REQUIRED, ...asRos });
        let expected: ReturnType<typeof deploymentSettings> | DeploymentParameterError;
        try {
          expected = deploymentSettings('oss', given);
        } catch (error) {
          expect(error).toBeInstanceOf(DeploymentParameterError);
          expected = error as DeploymentParameterError;
        }
        if (expected instanceof DeploymentParameterError) {
          refused++;
          expect(stack.refused.length, JSON.stringify(given)).toBeGreaterThan(0);
          expect(stack.refused.join('\n')).toContain(rosName(expected.parameter));
        } else {
          accepted++;
          expect(stack.refused, JSON.stringify(given)).toEqual([]);
          expect(stack.resources.BucketLifecycle?.Properties.Parameters.Rules).toEqual(
            renderOss(expected.rules),
          );
          expect(stack.resources.Function?.Properties.EnvironmentVariables).toMatchObject(expected.env);
        }
      }),
      { numRuns: 300, seed: 19 },
    );
    // Both sides were exercised.
    expect(accepted).toBeGreaterThan(20);
    expect(refused).toBeGreaterThan(20);
  });

  it('the Parameters are the deployment table: defaults, bounds and storage classes', () => {
    const settings = deploymentSettings('oss');
    for (const p of DEPLOYMENT_PARAMETERS) {
      const declared = template.Parameters[p.ros];
      expect(declared, p.ros).toBeDefined();
      expect(String(declared?.Default)).toBe(String(settings.values[p.name]));
      if (p.kind === 'integer') expect([declared?.MinValue, declared?.MaxValue]).toEqual([p.min, p.max]);
    }
  });
});

describe('ROS template: Function Compute as documented', () => {
  it("wires a log project and logstore (with an index) into the function's LogConfig, writable by its role", () => {
    const { resources } = createStack(template, REQUIRED);
    const project = resources.LogProject?.Properties.Name;
    const store = resources.FunctionLogs?.Properties;
    expect(resources.LogProject?.Type).toBe('ALIYUN::SLS::Project');
    expect(resources.FunctionLogs?.Type).toBe('ALIYUN::SLS::Logstore');
    expect(store.ProjectName).toBe(project);
    expect(resources.FunctionLogsIndex?.Properties).toMatchObject({
      ProjectName: project,
      LogstoreName: store.LogstoreName,
      FullTextIndex: { Enable: true },
    });
    expect(resources.Function?.Properties.LogConfig).toMatchObject({
      Project: project,
      Logstore: store.LogstoreName,
    });
    const statements = resources.FunctionRole?.Properties.Policies.flatMap(
      (p: Any) => p.PolicyDocument.Statement,
    );
    const logs = statements.find((s: Any) => s.Action.includes('log:PostLogStoreLogs'));
    expect(logs.Resource).toEqual([`acs:log:*:*:project/${project}/logstore/${store.LogstoreName}`]);
  });

  it('traces with FC’s Jaeger TracingConfig only when a TracingEndpoint is given', () => {
    expect(createStack(template, REQUIRED).resources.Function?.Properties.TracingConfig).toBeUndefined();
    const endpoint = 'http://tracing-analysis-dc-hz-internal.aliyuncs.com/adapt_x/api/otlp/traces';
    const traced = createStack(template, { ...REQUIRED, TracingEndpoint: endpoint });
    expect(traced.resources.Function?.Properties.TracingConfig).toEqual({
      Type: 'Jaeger',
      Params: { endpoint },
    });
  });

  it('passes every resource through the validators of the ROS CDK packages, rendering back to itself', () => {
    const classes: Record<string, Any> = {
      'ALIYUN::FC3::Function': fc3.RosFunction,
      'ALIYUN::FC3::Trigger': fc3.RosTrigger,
      'ALIYUN::SLS::Project': sls.RosProject,
      'ALIYUN::SLS::Logstore': sls.RosLogstore,
      'ALIYUN::SLS::Index': sls.RosIndex,
      'ALIYUN::OSS::Bucket': oss.RosBucket,
      'ALIYUN::RAM::Role': ram.RosRole,
      'ALIYUN::ROS::CustomResource': rosResources.RosCustomResource,
      'ALIYUN::FC3::ConcurrencyConfig': fc3.RosConcurrencyConfig,
      'ALIYUN::CMS::ResourceMetricRule': cms.RosResourceMetricRule,
      'ALIYUN::SLS::Alert': sls.RosAlert,
    };
    // Maps whose keys are data, not property names (the CDK types them as untyped hashes): a
    // metric rule's Resources are its metric's dimensions.
    const FREE = new Set([
      'EnvironmentVariables',
      'TriggerConfig',
      'Params',
      'Condition',
      'Parameters',
      'Resources',
    ]);
    // TTL -> ttl, SSEAlgorithm -> sseAlgorithm, VSwitchIds -> vSwitchIds, FunctionName -> functionName.
    const camel = (key: string) => {
      if (/^[A-Z0-9]+$/.test(key)) return key.toLowerCase();
      const [, acronym, rest] = /^([A-Z]+)([A-Z][a-z].*)$/.exec(key) ?? [];
      return acronym && rest ? acronym.toLowerCase() + rest : `${key[0]?.toLowerCase()}${key.slice(1)}`;
    };
    const toProps = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(toProps);
      if (value && typeof value === 'object')
        return Object.fromEntries(
          Object.entries(value).map(([k, v]) => [camel(k), FREE.has(k) ? v : toProps(v)]),
        );
      return value;
    };
    const render = (type: string, properties: unknown) => {
      const stack = new ros.Stack(new ros.App(), 'Check');
      const resource = new classes[type](stack, 'R', toProps(properties), true);
      return stack.resolve(resource._toRosTemplate()).Resources.R.Properties;
    };
    const { resources } = createStack(template, {
      ...REQUIRED,
      TracingEndpoint: 'http://t.example/api/otlp/traces',
    });
    for (const [name, r] of Object.entries(resources)) {
      expect(classes[r.Type], `${name}: a validator for ${r.Type}`).toBeDefined();
      expect(render(r.Type, r.Properties), name).toEqual(r.Properties);
    }
    // Every Fn::GetAtt names an attribute the resource type has.
    const getAtts = (node: unknown): Array<[string, string]> =>
      Array.isArray(node)
        ? node.flatMap(getAtts)
        : node && typeof node === 'object'
          ? Object.entries(node).flatMap(([k, v]) =>
              k === 'Fn::GetAtt' ? [v as [string, string]] : getAtts(v),
            )
          : [];
    const attributesOf = (type: string) => {
      const stack = new ros.Stack(new ros.App(), 'A');
      const instance = new classes[type](stack, 'R', {}, false);
      return Object.keys(instance)
        .filter((k) => k.startsWith('attr'))
        .map((k) => stack.resolve(instance[k])['Fn::GetAtt'][1]);
    };
    for (const [name, attribute] of getAtts(template)) {
      const type = template.Resources[name]?.Type as string;
      expect(attributesOf(type), `${name}.${attribute}`).toContain(attribute);
    }
    // The validators do refuse: a memory size FC does not offer.
    expect(() =>
      render('ALIYUN::FC3::Function', { ...resources.Function?.Properties, MemorySize: 100_000 }),
    ).toThrow(/memorySize/);
    // And for CloudMonitor: a statistic its rules do not take (FC's metric tables list "Value").
    const rule = resources.FunctionErrorsAlarm?.Properties;
    expect(() =>
      render('ALIYUN::CMS::ResourceMetricRule', {
        ...rule,
        Escalations: { Critical: { ...rule.Escalations.Critical, Statistics: 'Value' } },
      }),
    ).toThrow(/statistics/);
    // Why the rules are a custom resource's: ALIYUN::OSS::Bucket's lifecycle rules have no tag
    // filter (only a prefix and an exclusion), so a rule selecting kind=marker would lose its tag
    // and expire every object under the prefix.
    const tagged = {
      ...resources.StateBucket?.Properties,
      LifecycleConfiguration: renderRos(lifecycleRules('oss')),
    };
    const kept = render('ALIYUN::OSS::Bucket', tagged).LifecycleConfiguration.Rule[0];
    expect(kept).toMatchObject({ ID: 'session-markers', Prefix: 'agent-state/' });
    expect(kept.Tag).toBeUndefined();
    expect(resources.StateBucket?.Properties.LifecycleConfiguration).toBeUndefined();
  });

  it("configures the trigger's JWT authentication in FC 3.0's documented HTTPTriggerConfig shape, open routes whitelisted", () => {
    // FC 3.0 API, HTTPTriggerConfig: authConfig is a string (the JSON of the JWT configuration:
    // {"JWKS":…,"TokenLookup":"header:Authorization:Bearer,cookie:…","ClaimPassBy":"query:uid:uid,…"}),
    // authType, corsConfig, disableURLInternet, methods (HEAD, DELETE, POST, GET, OPTIONS, PUT, PATCH):
    // https://www.alibabacloud.com/help/en/functioncompute/api-fc-2023-03-30-struct-httptriggerconfig
    // JWT authentication of an HTTP trigger (token read from a header with its prefix removed, a
    // cookie, a query or form parameter; request paths exempt from the check, matched exactly or by
    // a prefix ending in "/*"):
    // https://www.alibabacloud.com/help/en/functioncompute/fc/user-guide/configure-jwt-authentication-for-an-http-trigger
    const { resources } = createStack(template, REQUIRED);
    const trigger = resources.HttpTrigger?.Properties;
    expect(trigger).toMatchObject({
      TriggerType: 'http',
      FunctionName: resources.Function?.Properties.FunctionName,
    });
    const config = trigger.TriggerConfig;
    const documented = ['authConfig', 'authType', 'corsConfig', 'disableURLInternet', 'methods'];
    for (const key of Object.keys(config)) expect(documented, key).toContain(key);
    expect(config.authType).toBe('jwt');
    expect(typeof config.disableURLInternet).toBe('boolean');
    const methods = ['HEAD', 'DELETE', 'POST', 'GET', 'OPTIONS', 'PUT', 'PATCH'];
    for (const m of config.methods) expect(methods).toContain(m);
    for (const route of ROUTES)
      expect(config.methods, `${route.method} ${route.pattern}`).toContain(route.method);
    expect(typeof config.authConfig).toBe('string');
    const auth = JSON.parse(config.authConfig);
    for (const key of Object.keys(auth))
      expect(['JWKS', 'TokenLookup', 'ClaimPassBy', 'Whitelist', 'Blacklist']).toContain(key);
    expect(auth.JWKS).toEqual(JWKS);
    const lookup =
      /^(header:[^:,]+(:[^,]+)?|(cookie|query|form):[^:,]+)(,(header:[^:,]+(:[^,]+)?|(cookie|query|form):[^:,]+))*$/;
    expect(auth.TokenLookup).toMatch(lookup);
    // The prefix ends with its space, so the token read carries none.
    expect(auth.TokenLookup.split(',')[0]).toBe('header:Authorization:Bearer ');
    expect(auth.Blacklist).toBeUndefined();
    for (const path of auth.Whitelist) expect(path).toMatch(/^\/[^*]*(\/\*)?$/);
    const open = ROUTES.filter((r) => !r.auth).map((r) => r.pattern);
    expect([...auth.Whitelist].sort()).toEqual([...new Set(open)].sort());
    expect(auth.Whitelist).toEqual(expect.arrayContaining(['/v1/health', '/v1/openapi.json']));
    // The function verifies the token again itself.
    expect(resources.Function?.Properties.EnvironmentVariables.AUTH_JWKS_URL).toBe(REQUIRED.JwksUrl);
  });
});

describe('ROS template: guard rails', () => {
  it('gives the identity provider no default, and refuses a placeholder issuer or JWKS URL as the AWS side does', () => {
    for (const name of [
      'JwtIssuer',
      'JwtAudience',
      'JwksUrl',
      'JwksJson',
      'ContactGroup',
      'AlertActionPolicyId',
    ])
      expect(template.Parameters[name]?.Default, name).toBeUndefined();
    // No default anywhere is a URL the AWS side would refuse as a placeholder.
    for (const [name, p] of Object.entries(template.Parameters))
      if (/^https?:/.test(String(p.Default ?? '')))
        expect(issuerRefusal(String(p.Default)), name).toBeUndefined();
    expect(template.Parameters.JwtIssuer?.AllowedPattern).toBe(REAL_ISSUER_PATTERN);
    expect(template.Parameters.JwksUrl?.AllowedPattern).toBe(REAL_ISSUER_PATTERN);
    const { JwtIssuer: _, JwtAudience: __, ...withoutIdentity } = REQUIRED;
    expect(createStack(template, withoutIdentity).refused).toEqual([
      'JwtIssuer: required',
      'JwtAudience: required',
    ]);
    for (const issuer of ['https://issuer.example.com/', 'https://idp.test/', 'http://login.acme-agents.io/'])
      expect(createStack(template, { ...REQUIRED, JwtIssuer: issuer }).refused, issuer).toEqual([
        'JwtIssuer: does not match AllowedPattern',
      ]);
    expect(createStack(template, { ...REQUIRED, JwksUrl: 'https://localhost/jwks' }).refused).toEqual([
      'JwksUrl: does not match AllowedPattern',
    ]);
    expect(createStack(template, { ...REQUIRED, JwtAudience: '' }).refused).toEqual([
      'JwtAudience: under MinLength',
    ]);
  });

  it("runs the sweep function on a timer trigger (hourly by default) with the API function's role and environment", () => {
    const { refused, resources } = createStack(template, REQUIRED);
    expect(refused).toEqual([]);
    const sweep = resources.SweepFunction?.Properties;
    const api = resources.Function?.Properties;
    expect(sweep).toMatchObject({ Handler: 'sweep.handler', Timeout: 300, Role: api.Role });
    expect(sweep.EnvironmentVariables).toEqual(api.EnvironmentVariables);
    expect(resources.SweepTrigger).toEqual({
      Type: 'ALIYUN::FC3::Trigger',
      Properties: {
        FunctionName: 'agent-state-sweep',
        TriggerName: 'sweep',
        TriggerType: 'timer',
        TriggerConfig: { cronExpression: '@every 60m', enable: true, payload: '' },
      },
    });
    expect(
      createStack(template, { ...REQUIRED, SweepSchedule: '0 0 3 * * *' }).resources.SweepTrigger?.Properties
        .TriggerConfig.cronExpression,
    ).toBe('0 0 3 * * *');
  });

  it('points the functions at Redis or MySQL and into a VPC with the same parameters as the AWS stack, refusing an engine without its URL', () => {
    for (const p of ENGINE_PARAMETERS) expect(template.Parameters[p.ros], p.ros).toBeDefined();
    // Default: OSS and DynamoDB, no VPC (and no VPC rights on the role).
    const plain = createStack(template, REQUIRED).resources;
    expect(plain.Function?.Properties.EnvironmentVariables).toMatchObject({
      STORE_BACKEND: 'oss',
      LOCK_BACKEND: 'dynamodb',
      MYSQL_URL: '',
      BLOB_BACKEND: 'none',
    });
    expect(plain.Function?.Properties.VpcConfig).toBeUndefined();
    expect(JSON.stringify(plain.FunctionRole?.Properties.Policies)).not.toContain('ecs:');
    const MYSQL = 'mysql://agent:secret@rm-abc.mysql.rds.aliyuncs.com:3306/agent_state';
    const onMysql = createStack(template, {
      ...REQUIRED,
      StoreBackend: 'mysql',
      LockBackend: 'mysql',
      MysqlUrl: MYSQL,
      VpcId: 'vpc-bp1abc',
      VSwitchIds: 'vsw-bp1a,vsw-bp1b',
      SecurityGroupId: 'sg-bp1c',
    });
    expect(onMysql.refused).toEqual([]);
    for (const fn of ['Function', 'SweepFunction']) {
      const props = onMysql.resources[fn]?.Properties;
      expect(props.EnvironmentVariables, fn).toMatchObject({
        STORE_BACKEND: 'mysql',
        LOCK_BACKEND: 'mysql',
        MYSQL_URL: MYSQL,
      });
      expect(props.VpcConfig, fn).toEqual({
        VpcId: 'vpc-bp1abc',
        VSwitchIds: ['vsw-bp1a', 'vsw-bp1b'],
        SecurityGroupId: 'sg-bp1c',
      });
    }
    expect(JSON.stringify(onMysql.resources.FunctionRole?.Properties.Policies)).toContain(
      'ecs:CreateNetworkInterface',
    );
    const onRedis = createStack(template, {
      ...REQUIRED,
      StoreBackend: 'redis',
      RedisClusterNodes: 'r-bp1.redis.rds.aliyuncs.com:6379,r-bp2.redis.rds.aliyuncs.com:6379',
    });
    expect(onRedis.refused).toEqual([]);
    expect(onRedis.resources.Function?.Properties.EnvironmentVariables.LOCK_BACKEND).toBe('dynamodb');
    const refused = (given: Record<string, unknown>) =>
      createStack(template, { ...REQUIRED, ...given }).refused;
    expect(refused({ StoreBackend: 'mysql' })).toEqual([
      'MysqlUrl is required when StoreBackend or LockBackend is mysql',
    ]);
    expect(refused({ LockBackend: 'redis' })).toEqual([
      'RedisUrl or RedisClusterNodes is required when StoreBackend or LockBackend is redis',
    ]);
    expect(refused({ VpcId: 'vpc-bp1abc', VSwitchIds: 'vsw-bp1a' })).toEqual([
      'VSwitchIds and SecurityGroupId are required with VpcId',
    ]);
    expect(refused({ StoreBackend: 's3' })).toEqual(['StoreBackend: not in AllowedValues']);
    // The URLs' patterns are lib/config.ts's.
    expect(refused({ StoreBackend: 'mysql', MysqlUrl: 'postgres://u:p@h:1/db' })).toEqual([
      'MysqlUrl: does not match AllowedPattern',
    ]);
    expect(refused({ StoreBackend: 'redis', RedisUrl: 'http://cache:6379' })).toEqual([
      'RedisUrl: does not match AllowedPattern',
    ]);
  });

  it("reserves the API function's concurrency and alarms on FC's errors, throttles and p99 duration to the ContactGroup", () => {
    const { resources } = createStack(template, {
      ...REQUIRED,
      ReservedConcurrency: 20,
      AlarmLatencyP99Ms: 2000,
    });
    const fn = resources.Function?.Properties.FunctionName;
    expect(resources.FunctionConcurrency).toEqual({
      Type: 'ALIYUN::FC3::ConcurrencyConfig',
      Properties: { FunctionName: fn, ReservedConcurrency: 20 },
    });
    expect(template.Parameters.ReservedConcurrency?.Default).toBe(50);
    const rules = Object.values(resources).filter((r) => r.Type === 'ALIYUN::CMS::ResourceMetricRule');
    expect(rules.map((r) => r.Properties.MetricName).sort()).toEqual([
      'FunctionConcurrencyThrottles',
      'FunctionFunctionErrors',
      'FunctionP99Duration',
      'FunctionResourceThrottles',
      'FunctionServerErrors',
    ]);
    for (const { Properties: rule } of rules) {
      expect(rule.Namespace).toBe('acs_fc');
      expect(rule.ContactGroups).toEqual([REQUIRED.ContactGroup]);
      expect(rule.Resources).toEqual([
        { userId: '1234567890123456', region: 'cn-hangzhou', functionName: fn },
      ]);
      expect(rule.Escalations.Critical).toMatchObject({
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Times: 1,
      });
    }
    const latency = rules.find((r) => r.Properties.MetricName === 'FunctionP99Duration');
    expect(latency?.Properties.Escalations.Critical.Threshold).toBe('2000');
    const names = rules.map((r) => r.Properties.RuleName);
    expect(new Set(names).size).toBe(names.length);
  });

  it("alerts from the function's logstore on the store's backend problem lines, through the action policy", () => {
    const { resources } = createStack(template, REQUIRED);
    const alert = resources.ProblemsAlert;
    expect(alert?.Type).toBe('ALIYUN::SLS::Alert');
    expect(alert?.Properties.Project).toBe(resources.LogProject?.Properties.Name);
    const configuration = alert?.Properties.Detail.Configuration;
    const [query] = configuration.QueryList;
    expect(query).toMatchObject({
      StoreType: 'log',
      Project: resources.LogProject?.Properties.Name,
      Store: resources.FunctionLogs?.Properties.LogstoreName,
      Region: 'cn-hangzhou',
    });
    // Every backend problem code, as a phrase of the full-text index, counted.
    const terms = [...String(query.Query).matchAll(/"([^"]+)"/g)].map((m) => m[1]);
    expect(terms).toEqual([...BACKEND_PROBLEMS]);
    expect(query.Query).toMatch(/\| select count\(\*\) as problems$/);
    expect(configuration.SeverityConfigurations[0].EvalCondition.Condition).toBe('problems > 0');
    expect(configuration.PolicyConfiguration).toMatchObject({ ActionPolicyId: REQUIRED.AlertActionPolicyId });
    expect(alert?.Properties.Detail.Schedule).toEqual({ Type: 'FixedRate', Interval: '5m' });
  });

  it('finds the problem in the line the FC bundle logs for it (a bucket that does not exist: backend-misconfigured)', async () => {
    const servers = inject('servers');
    await promisify(execFile)('node', ['scripts/build.mjs', 'aliyun/api']);
    // The JWKS the function verifies the bearer token against, on 127.0.0.1.
    const jwks = http.createServer((_, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(JWKS)),
    );
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    try {
      const token = await new SignJWT({ sub: 'alice' })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
      const event = {
        rawPath: '/v1/sessions/s/state/plan',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        queryParameters: {},
        body: '{"a":1}',
        isBase64Encoded: false,
        requestContext: { requestId: 'r-problem', http: { method: 'PUT' } },
      };
      const script = `import('./dist/aliyun/api.mjs').then((m) => m.handler(Buffer.from(process.env.EVENT))).then((r) => console.log(JSON.stringify({ answer: r })))`;
      const { stdout, stderr } = await promisify(execFile)('node', ['--input-type=module', '-e', script], {
        env: {
          ...process.env,
          NODE_OPTIONS: '',
          EVENT: JSON.stringify(event),
          FC_FUNCTION_NAME: 'f',
          STORE_BACKEND: 'oss',
          OSS_BUCKET: 'no-such-bucket',
          OSS_REGION: 'oss-cn-hangzhou',
          OSS_ENDPOINT: servers.oss,
          ALIBABA_CLOUD_ACCESS_KEY_ID: OSS_CREDENTIALS.accessKeyId,
          ALIBABA_CLOUD_ACCESS_KEY_SECRET: OSS_CREDENTIALS.accessKeySecret,
          LOCK_BACKEND: 'dynamodb',
          LOCK_TABLE: 'unused',
          DYNAMODB_ENDPOINT: servers.dynamodb,
          AUTH_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
          LOG_LEVEL: 'INFO',
        },
        timeout: 30_000,
      });
      const lines = `${stdout}\n${stderr}`.split('\n').filter((l) => l.startsWith('{'));
      const answer = JSON.parse(lines.find((l) => l.startsWith('{"answer"')) ?? '{}').answer;
      expect(answer?.statusCode).toBe(503);
      // The alert's phrase, as the full-text index reads it (a hyphen does not split a token).
      const problemLines = lines.filter((l) => l.includes('"backend-misconfigured"'));
      expect(problemLines.length).toBeGreaterThan(0);
      // FC's id beside the answer's own (the event sends no X-Request-Id: a generated one).
      expect(problemLines.every((l) => JSON.parse(l).platformRequestId === 'r-problem')).toBe(true);
      const answerId = answer?.headers['x-request-id'];
      expect(problemLines.every((l) => JSON.parse(l).requestId === answerId)).toBe(true);
    } finally {
      await new Promise((r) => jwks.close(r));
    }
  });
});

describe('ROS template: the lifecycle custom resource, run', () => {
  it("puts the evaluated rules (RetentionDays=7) on the bucket through OSS's API and answers ROS", async () => {
    const servers = inject('servers');
    const run = promisify(execFile);
    await run('node', ['scripts/build.mjs', 'aliyun/lifecycle']);
    // A bucket of this test's own, so no other suite's lifecycle rules race with these.
    const bucket = 'ros-lifecycle-test';
    const s3 = createS3Client({
      endpoint: servers.s3,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    await s3.send(new CreateBucketCommand({ Bucket: bucket })).catch(() => {});
    s3.destroy();
    const { resources } = createStack(template, { ...REQUIRED, BucketName: bucket, RetentionDays: 7 });
    // ROS's side: a presigned response URL that takes the answer.
    const answers: Any[] = [];
    const ros = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        answers.push({ method: req.method, type: req.headers['content-type'], body: JSON.parse(body) });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => ros.listen(0, '127.0.0.1', r));
    try {
      const request = {
        RequestType: 'Create',
        ResponseURL: `http://127.0.0.1:${(ros.address() as AddressInfo).port}/answer?signature=x`,
        StackId: 'stack-1',
        StackName: 'agent-state',
        RegionId: 'cn-hangzhou',
        RequestId: 'request-1',
        ResourceType: 'ALIYUN::ROS::CustomResource',
        LogicalResourceId: 'BucketLifecycle',
        ResourceProperties: resources.BucketLifecycle?.Properties.Parameters,
      };
      const script = `import('./dist/aliyun/lifecycle.mjs').then((m) => m.handler(Buffer.from(process.env.EVENT))).then((r) => console.log(JSON.stringify(r)))`;
      const { stdout } = await run('node', ['--input-type=module', '-e', script], {
        env: {
          ...process.env,
          NODE_OPTIONS: '--enable-source-maps',
          EVENT: JSON.stringify(request),
          OSS_ENDPOINT: servers.oss,
          ALIBABA_CLOUD_ACCESS_KEY_ID: OSS_CREDENTIALS.accessKeyId,
          ALIBABA_CLOUD_ACCESS_KEY_SECRET: OSS_CREDENTIALS.accessKeySecret,
        },
      });
      expect(JSON.parse(stdout.trim().split('\n').at(-1) as string)).toEqual({ Status: 'SUCCESS' });
      expect(answers).toEqual([
        {
          method: 'POST',
          type: 'application/json',
          body: {
            Status: 'SUCCESS',
            PhysicalResourceId: `${bucket}-lifecycle`,
            StackId: 'stack-1',
            RequestId: 'request-1',
            LogicalResourceId: 'BucketLifecycle',
          },
        },
      ]);
      const stored = await (await fetch(`${servers.s3}/${bucket}?lifecycle`)).text();
      const expected = renderOss(lifecycleRules('oss', { retentionDays: 7 }));
      expect(xmlValues(stored, 'ID')).toEqual(expected.map((r) => r.id));
      expect(xmlValues(stored, 'Value')).toEqual(['marker', 'state', 'archive', 'workspace', 'pack', '1']);
      expect(xmlValues(stored, 'Days').map(Number)).toEqual([7, 9, 365, 30, 180, 30, 7, 7]);
      // A request without rules is answered FAILED with the reason, not left to time out.
      answers.length = 0;
      const bad = { ...request, RequestId: 'request-2', ResourceProperties: { BucketName: bucket } };
      await run('node', ['--input-type=module', '-e', script], {
        env: { ...process.env, EVENT: JSON.stringify(bad), OSS_ENDPOINT: servers.oss },
      });
      expect(answers[0]?.body).toMatchObject({ Status: 'FAILED', Reason: 'Rules must be a non-empty list' });
    } finally {
      await new Promise((r) => ros.close(r));
    }
  });
});
