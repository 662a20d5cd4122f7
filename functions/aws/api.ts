/**
 * AWS Lambda entry point (API Gateway HTTP API, payload 2.0): S3 + DynamoDB, or an engine the
 * configuration names (Redis, MySQL: loaded only then), the router behind middy. No logic here.
 */
import { loadConfigOrExit } from '../../lib/config.js';
import { createApiGatewayHandler } from '../../lib/http/adapters/apigw.js';
import { createApp } from '../../lib/http/app.js';
import { AWS_BACKENDS } from '../../lib/http/backends/aws.js';
import { cloudParts } from '../../lib/http/backends/cloud.js';

const config = loadConfigOrExit();
const api = createApiGatewayHandler(createApp(config, await cloudParts(config, AWS_BACKENDS)));

/**
 * X-Ray through Powertools Tracer, only with TRACING=true (serverless.yml's `--param tracing=true`,
 * which also turns on Lambda's active tracing): a segment per invocation with the cold start
 * annotated, and a subsegment per outgoing S3 and DynamoDB request (the SDKs' HTTPS calls). Answers
 * are not recorded (they carry users' state); errors are. Loaded on demand, so it costs nothing off.
 */
async function traced(handler: typeof api): Promise<typeof api> {
  const [{ Tracer }, { captureLambdaHandler }] = await Promise.all([
    import('@aws-lambda-powertools/tracer'),
    import('@aws-lambda-powertools/tracer/middleware'),
  ]);
  const tracer = new Tracer({ serviceName: 'agent-state' });
  return handler.use(captureLambdaHandler(tracer, { captureResponse: false }));
}

export const handler = config.TRACING ? await traced(api) : api;
