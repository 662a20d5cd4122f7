/**
 * The renderer osls calls at package time (infra/aws/deployment.cjs imports this file's bundle,
 * dist/sls-deployment.mjs, which `npm run package` builds): reads every deployment parameter with
 * osls's `resolveVariable`, refuses invalid combinations naming the parameter, and returns for
 * serverless.yml: the identity provider (`jwtIssuer`, `jwtAudience`: the authorizer's and the
 * functions'), the CORS settings (`corsOrigins`: the HTTP API's `httpApi.cors` and the functions'
 * CORS_ORIGINS, checked as lib/config.ts checks CORS_ORIGINS), the bucket's lifecycle rules, the
 * tracing mode, the access log format, the engines (`storeBackend`, `lockBackend` and their URLs:
 * the functions' STORE_BACKEND, LOCK_BACKEND, REDIS_*, MYSQL_URL), the sweep's schedule, and the
 * stack's resources (infra/aws/resources.yml with the guard rails of scripts/deployment-guards.ts:
 * the stage's throttling, the log group's retention, the alarms; and the functions' VpcConfig when
 * `subnetIds` is given).
 */
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import { parseCorsOrigins } from '../lib/config.js';
import { apiGatewayCors } from '../lib/http/cors.js';
import {
  DEPLOYMENT_PARAMETERS,
  DeploymentParameterError,
  deploymentSettings,
} from '../lib/lifecycle/deployment.js';
import { DEFAULT_LIFECYCLE, renderCloudFormation } from '../lib/lifecycle/index.js';
import {
  ACCESS_LOG_FORMAT,
  awsGuardRails,
  awsVpc,
  ENGINE_PARAMETERS,
  EXAMPLE_STAGE,
  engineValues,
  GUARD_PARAMETERS,
  guardValues,
  issuerRefusal,
  sweepSchedule,
} from './deployment-guards.js';

type ResolveVariable = (variable: string) => Promise<unknown>;

export async function awsDeployment(resolveVariable: ResolveVariable) {
  const stage = String(await resolveVariable('sls:stage'));
  /** A parameter every stage but the example one must give (`params.dev` holds the examples). */
  const explicit = async (name: string, example: string) => {
    const raw = await resolveVariable(`param:${name}, null`);
    const text = raw === undefined || raw === null ? '' : String(raw).trim();
    if (text === '')
      throw new DeploymentParameterError(
        name,
        `required on stage ${stage} (only ${EXAMPLE_STAGE} has examples): --param="${name}=${example}"`,
      );
    return text;
  };
  const jwtIssuer = await explicit('jwtIssuer', 'https://<your identity provider>/');
  if (stage !== EXAMPLE_STAGE) {
    const refusal = issuerRefusal(jwtIssuer);
    if (refusal) throw new DeploymentParameterError('jwtIssuer', refusal);
  }
  const jwtAudience = await explicit('jwtAudience', '<the audience of your tokens>');
  const origins = corsOrigins(await explicit('corsOrigins', 'none (or https://<your console>)'));
  const given: Record<string, unknown> = {};
  // An absent parameter is null (the generator's default then applies).
  for (const p of DEPLOYMENT_PARAMETERS) given[p.name] = await resolveVariable(`param:${p.name}, null`);
  const tracing = String(await resolveVariable('param:tracing'));
  if (tracing !== 'true' && tracing !== 'false')
    throw new DeploymentParameterError('tracing', `must be true or false, not ${JSON.stringify(tracing)}`);
  const settings = deploymentSettings('s3', given);
  const guards: Record<string, unknown> = {};
  for (const p of GUARD_PARAMETERS) guards[p.name] = await resolveVariable(`param:${p.name}, null`);
  const engineGiven: Record<string, unknown> = {};
  for (const p of ENGINE_PARAMETERS) engineGiven[p.name] = await resolveVariable(`param:${p.name}, null`);
  const engines = engineValues(engineGiven, 's3');
  // Read here to be checked (serverless.yml gives it to the schedule itself).
  sweepSchedule(await resolveVariable('param:sweepSchedule, null'));
  const functions = Object.keys((await resolveVariable('self:functions')) as Record<string, unknown>);
  const rails = awsGuardRails(guardValues(guards), functions, {
    namespace: String(await resolveVariable('self:provider.environment.POWERTOOLS_METRICS_NAMESPACE')),
    service: String(await resolveVariable('self:provider.environment.POWERTOOLS_SERVICE_NAME')),
  });
  // The stack's own resources; osls resolves the variables they hold (the lifecycle rules: this
  // renderer again, the kmsKeyArn and tracing parameters).
  const base = yaml.load(readFileSync(new URL('../infra/aws/resources.yml', import.meta.url), 'utf8')) as {
    Resources: Record<string, unknown>;
    Outputs?: Record<string, unknown>;
  };
  // The functions' VPC, only when subnetIds is given: each function's VpcConfig, and each role the
  // VPC policy (the functions' network interfaces).
  const roles = Object.keys(base.Resources).filter(
    (id) => (base.Resources[id] as { Type?: string }).Type === 'AWS::IAM::Role',
  );
  const vpc = awsVpc(engines.vpc, functions, roles);
  for (const [role, arns] of Object.entries(vpc.roles)) {
    const resource = base.Resources[role] as { Properties: Record<string, unknown> };
    resource.Properties = { ...resource.Properties, ManagedPolicyArns: arns };
  }
  return {
    jwtIssuer,
    jwtAudience,
    lifecycle: renderCloudFormation(settings.rules, DEFAULT_LIFECYCLE.prefix),
    environment: settings.env,
    engine: engines.env,
    tracingMode: tracing === 'true' ? 'Active' : 'PassThrough',
    cors: apiGatewayCors(origins),
    corsOrigins: origins === undefined ? '' : origins === '*' ? '*' : origins.join(','),
    accessLogFormat: ACCESS_LOG_FORMAT,
    resources: {
      ...base,
      Resources: { ...base.Resources, ...rails.resources },
      Outputs: { ...base.Outputs, ...rails.outputs },
      extensions: { ...rails.extensions, ...vpc.extensions },
    },
  };
}

/** The `corsOrigins` parameter read (`none`: CORS off); a `DeploymentParameterError` when malformed. */
function corsOrigins(text: string) {
  if (text === 'none') return undefined;
  try {
    return parseCorsOrigins(text, { quote: true });
  } catch (error) {
    throw new DeploymentParameterError('corsOrigins', (error as Error).message);
  }
}
