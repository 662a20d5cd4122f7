/**
 * Function Compute 3.0 entry point of the ROS custom resource that puts the bucket's lifecycle rules
 * (infra/aliyun/ros.yaml, `BucketLifecycle`; lib/lifecycle/ros-resource.ts). Credentials: the
 * function role's, which FC hands over in ALIBABA_CLOUD_*; OSS_ENDPOINT overrides the region's
 * endpoint (tests). No logic here.
 */
import { createOssClient } from '../../lib/drivers/oss.js';
import { applyOssRules } from '../../lib/lifecycle/apply.js';
import { handleLifecycleResource, type RosResourceRequest } from '../../lib/lifecycle/ros-resource.js';

export async function handler(event: Buffer | string) {
  const request = JSON.parse(event.toString()) as RosResourceRequest;
  const env = process.env;
  const outcome = await handleLifecycleResource(request, async (bucket, rules, region) => {
    const client = createOssClient({
      bucket,
      region: env.OSS_REGION ?? (region ? `oss-${region}` : undefined),
      endpoint: env.OSS_ENDPOINT,
      accessKeyId: env.OSS_ACCESS_KEY_ID ?? env.ALIBABA_CLOUD_ACCESS_KEY_ID ?? '',
      accessKeySecret: env.OSS_ACCESS_KEY_SECRET ?? env.ALIBABA_CLOUD_ACCESS_KEY_SECRET ?? '',
      stsToken: env.OSS_STS_TOKEN ?? env.ALIBABA_CLOUD_SECURITY_TOKEN,
    });
    await applyOssRules(client, bucket, rules);
  });
  console.log(
    JSON.stringify({
      level: 'INFO',
      message: 'lifecycle resource',
      request: request.RequestType,
      ...outcome,
    }),
  );
  return outcome;
}
