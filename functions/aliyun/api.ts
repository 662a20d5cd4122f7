/** Function Compute 3.0 entry point (HTTP trigger): OSS + the DynamoDB lock across clouds. No logic here. */
import { loadConfigOrExit } from '../../lib/config.js';
import { createFunctionComputeHandler } from '../../lib/http/adapters/fc.js';
import { createApp } from '../../lib/http/app.js';
import { ossDriverFrom } from '../../lib/http/backends/aliyun.js';
import { dynamoDbLockFrom } from '../../lib/http/backends/aws.js';

const config = loadConfigOrExit();
export const handler = createFunctionComputeHandler(
  createApp(config, { driver: ossDriverFrom(config), lock: dynamoDbLockFrom(config) }),
);
