/** Applies the rendered rules to a bucket: S3 PutBucketLifecycleConfiguration, or ali-oss putBucketLifecycle. */
import { PutBucketLifecycleConfigurationCommand, type S3Client } from '@aws-sdk/client-s3';
import type OSS from 'ali-oss';
import { type LifecycleConfig, lifecycleRules, renderOss, renderS3 } from './index.js';

/** Sends exactly the rendered S3 rules. */
export async function applyS3Lifecycle(
  client: S3Client,
  bucket: string,
  config: Partial<LifecycleConfig> = {},
) {
  const rules = renderS3(lifecycleRules('s3', config), config.prefix);
  await client.send(
    new PutBucketLifecycleConfigurationCommand({
      Bucket: bucket,
      LifecycleConfiguration:
        rules as unknown as PutBucketLifecycleConfigurationCommand['input']['LifecycleConfiguration'],
    }),
  );
  return rules;
}

/** Sends exactly the rendered OSS rules. */
export async function applyOssLifecycle(client: OSS, bucket: string, config: Partial<LifecycleConfig> = {}) {
  const rules = renderOss(lifecycleRules('oss', config), config.prefix);
  await applyOssRules(client, bucket, rules);
  return rules;
}

/** Sends rules already rendered by `renderOss` (as a template passes them: see ros-resource.ts). */
export async function applyOssRules(client: OSS, bucket: string, rules: readonly unknown[]) {
  // ali-oss rewrites the rules it is given in place: hand it a copy.
  await client.putBucketLifecycle(bucket, structuredClone(rules) as unknown as OSS.LifecycleRule[]);
}
