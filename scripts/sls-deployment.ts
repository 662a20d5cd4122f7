/**
 * The renderer osls calls at package time (infra/aws/deployment.cjs imports this file's bundle,
 * dist/sls-deployment.mjs, which `npm run package` builds): reads every deployment parameter with
 * osls's `resolveVariable`, refuses invalid combinations naming the parameter, and returns the
 * bucket's lifecycle rules and the tracing mode for serverless.yml.
 */
import {
  DEPLOYMENT_PARAMETERS,
  DeploymentParameterError,
  deploymentSettings,
} from '../lib/lifecycle/deployment.js';
import { DEFAULT_LIFECYCLE, renderCloudFormation } from '../lib/lifecycle/index.js';

type ResolveVariable = (variable: string) => Promise<unknown>;

export async function awsDeployment(resolveVariable: ResolveVariable) {
  const given: Record<string, unknown> = {};
  for (const p of DEPLOYMENT_PARAMETERS) given[p.name] = await resolveVariable(`param:${p.name}`);
  const tracing = String(await resolveVariable('param:tracing'));
  if (tracing !== 'true' && tracing !== 'false')
    throw new DeploymentParameterError('tracing', `must be true or false, not ${JSON.stringify(tracing)}`);
  const settings = deploymentSettings('s3', given);
  return {
    lifecycle: renderCloudFormation(settings.rules, DEFAULT_LIFECYCLE.prefix),
    environment: settings.env,
    tracingMode: tracing === 'true' ? 'Active' : 'PassThrough',
  };
}
