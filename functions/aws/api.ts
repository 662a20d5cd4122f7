/** AWS Lambda entry point (API Gateway HTTP API, payload 2.0): S3 + DynamoDB, the router behind middy. No logic here. */
import { loadConfigOrExit } from '../../lib/config.js';
import { createApiGatewayHandler } from '../../lib/http/adapters/apigw.js';
import { createApp } from '../../lib/http/app.js';
import { dynamoDbLockFrom, s3DriverFrom } from '../../lib/http/backends/aws.js';

const config = loadConfigOrExit();
export const handler = createApiGatewayHandler(
  createApp(config, { driver: s3DriverFrom(config), lock: dynamoDbLockFrom(config) }),
);
