/** Backends of the Function Compute entry point: OSS (the lock is DynamoDB, from aws.ts). */
import type { Config } from '../../config.js';
import { createOssDriver, type OssDriverOptions } from '../../drivers/oss.js';
import type { ObjectStoreDriver } from '../../drivers/types.js';
import { dynamoDbLockFrom } from './aws.js';
import type { PlatformBackends } from './cloud.js';

/** The OSS connection the configuration names (the driver's and bootstrap's). */
export function ossOptionsFrom(config: Config): OssDriverOptions {
  return {
    bucket: config.OSS_BUCKET as string,
    region: config.OSS_REGION,
    endpoint: config.OSS_ENDPOINT,
    // Function Compute hands the function its role's temporary credentials in these variables.
    accessKeyId: config.OSS_ACCESS_KEY_ID ?? config.ALIBABA_CLOUD_ACCESS_KEY_ID ?? '',
    accessKeySecret: config.OSS_ACCESS_KEY_SECRET ?? config.ALIBABA_CLOUD_ACCESS_KEY_SECRET ?? '',
    stsToken: config.OSS_STS_TOKEN ?? config.ALIBABA_CLOUD_SECURITY_TOKEN,
  };
}

/** The OSS driver the configuration names. */
export function ossDriverFrom(config: Config): ObjectStoreDriver {
  return createOssDriver(ossOptionsFrom(config));
}

/** What the Function Compute entries (the API, the sweep) build on: OSS, the DynamoDB lock, OSS for an engine's blobs. */
export const ALIYUN_BACKENDS: PlatformBackends = {
  driver: ossDriverFrom,
  lock: dynamoDbLockFrom,
  blobs: { oss: ossDriverFrom },
};
