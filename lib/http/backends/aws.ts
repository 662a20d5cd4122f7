/** Backends of the AWS entry point: S3 and the DynamoDB lock (only their SDKs are bundled). */
import type { Config } from '../../config.js';
import type { SessionLock } from '../../contract/lock.js';
import { createS3Driver } from '../../drivers/s3.js';
import type { ObjectStoreDriver } from '../../drivers/types.js';
import { createDynamoDbLock } from '../../lock/dynamodb.js';
import type { PlatformBackends } from './cloud.js';

/** The S3 driver the configuration names. */
export function s3DriverFrom(config: Config): ObjectStoreDriver {
  return createS3Driver({
    bucket: config.S3_BUCKET as string,
    endpoint: config.S3_ENDPOINT,
    region: config.S3_REGION,
    dialect: config.S3_DIALECT,
  });
}

/** The DynamoDB lock the configuration names (on AWS, and across clouds from Function Compute). */
export function dynamoDbLockFrom(config: Config): SessionLock {
  return createDynamoDbLock({
    tableName: config.LOCK_TABLE as string,
    endpoint: config.DYNAMODB_ENDPOINT,
    region: config.DYNAMODB_REGION,
    clockSkewMs: config.LOCK_CLOCK_SKEW_MS,
    retentionDays: config.RETENTION_DAYS,
  });
}

/** What the Lambda entries (the API, the sweep) build on: S3, the DynamoDB lock, S3 for an engine's blobs. */
export const AWS_BACKENDS: PlatformBackends = {
  driver: s3DriverFrom,
  lock: dynamoDbLockFrom,
  blobs: { s3: s3DriverFrom },
};
