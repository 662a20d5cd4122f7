/**
 * The renderer osls calls at package time (infra/aws/deployment.cjs imports this file's bundle,
 * dist/sls-deployment.mjs, which `npm run package` builds): reads every deployment parameter with
 * osls's `resolveVariable`, refuses invalid combinations naming the parameter, and returns the
 * bucket's lifecycle rules, the tracing mode, and the CORS settings (`corsOrigins`: the HTTP API's
 * `httpApi.cors` and the functions' CORS_ORIGINS, checked as lib/config.ts checks CORS_ORIGINS)
 * for serverless.yml.
 */
import { parseCorsOrigins } from '../lib/config.js';
import { apiGatewayCors } from '../lib/http/cors.js';
import {
  DEPLOYMENT_PARAMETERS,
  DeploymentParameterError,
  deploymentSettings,
} from '../lib/lifecycle/deployment.js';
import { DEFAULT_LIFECYCLE, renderCloudFormation } from '../lib/lifecycle/index.js';

type ResolveVariable = (variable: string) => Promise<unknown>;

export async function awsDeployment(resolveVariable: ResolveVariable) {
  const given: Record<string, unknown> = {};
  // An absent parameter is null (the generator's default then applies).
  for (const p of DEPLOYMENT_PARAMETERS) given[p.name] = await resolveVariable(`param:${p.name}, null`);
  const tracing = String(await resolveVariable('param:tracing'));
  if (tracing !== 'true' && tracing !== 'false')
    throw new DeploymentParameterError('tracing', `must be true or false, not ${JSON.stringify(tracing)}`);
  const settings = deploymentSettings('s3', given);
  const origins = corsOrigins(await resolveVariable('param:corsOrigins'));
  return {
    lifecycle: renderCloudFormation(settings.rules, DEFAULT_LIFECYCLE.prefix),
    environment: settings.env,
    tracingMode: tracing === 'true' ? 'Active' : 'PassThrough',
    cors: apiGatewayCors(origins),
    corsOrigins: origins === undefined ? '' : origins === '*' ? '*' : origins.join(','),
  };
}

/** The `corsOrigins` parameter read (empty: CORS off); a `DeploymentParameterError` when malformed. */
function corsOrigins(raw: unknown) {
  const text = raw === undefined || raw === null ? '' : String(raw).trim();
  if (text === '') return undefined;
  try {
    return parseCorsOrigins(text, { quote: true });
  } catch (error) {
    throw new DeploymentParameterError('corsOrigins', (error as Error).message);
  }
}
