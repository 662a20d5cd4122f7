/**
 * Function Compute 3.0 entry point (HTTP trigger): OSS + the DynamoDB lock across clouds, or an
 * engine the configuration names (Redis, MySQL: evaluated only then). No logic here.
 */
import { enginesOf, loadConfigOrExit } from '../../lib/config.js';
import { createFunctionComputeHandler } from '../../lib/http/adapters/fc.js';
import { createApp } from '../../lib/http/app.js';
import { ossDriverFrom } from '../../lib/http/backends/aliyun.js';
import { dynamoDbLockFrom } from '../../lib/http/backends/aws.js';

const config = loadConfigOrExit();
const engines = enginesOf(config);
const engine =
  engines.store || engines.lock
    ? await (await import('../../lib/http/backends/engines.js')).loadEngine(config)
    : undefined;
export const handler = createFunctionComputeHandler(
  createApp(config, {
    ...(engines.store ? {} : { driver: ossDriverFrom(config) }),
    ...(engines.lock ? {} : { lock: dynamoDbLockFrom(config) }),
    engine,
  }),
);
