/**
 * Function Compute 3.0 entry point (HTTP trigger): OSS + the DynamoDB lock across clouds, or an
 * engine the configuration names (Redis, MySQL: evaluated only then). No logic here.
 */
import { loadConfigOrExit } from '../../lib/config.js';
import { createFunctionComputeHandler } from '../../lib/http/adapters/fc.js';
import { createApp } from '../../lib/http/app.js';
import { ALIYUN_BACKENDS } from '../../lib/http/backends/aliyun.js';
import { cloudParts } from '../../lib/http/backends/cloud.js';

const config = loadConfigOrExit();
export const handler = createFunctionComputeHandler(
  createApp(config, await cloudParts(config, ALIYUN_BACKENDS)),
);
