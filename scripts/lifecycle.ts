/**
 * `npm run lifecycle -- --backend s3|oss --bucket B [--apply]`: prints the rules rendered from the
 * environment's lifecycle settings, or applies them (credentials and endpoints from the environment,
 * as the functions read them).
 */
import { createOssClient } from '../lib/drivers/oss.js';
import { createS3Client } from '../lib/drivers/s3.js';
import { applyOssLifecycle, applyS3Lifecycle } from '../lib/lifecycle/apply.js';
import { lifecycleFromEnv, lifecycleRules, renderOss, renderS3 } from '../lib/lifecycle/index.js';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : undefined;
};
const backend = flag('backend');
const bucket = flag('bucket');
if ((backend !== 's3' && backend !== 'oss') || !bucket) {
  console.error('usage: npm run lifecycle -- --backend s3|oss --bucket <bucket> [--apply]');
  process.exit(2);
}
const config = lifecycleFromEnv();
if (!args.includes('--apply')) {
  const rules = lifecycleRules(backend, config);
  console.log(
    JSON.stringify(
      backend === 's3' ? renderS3(rules, config.prefix) : renderOss(rules, config.prefix),
      null,
      2,
    ),
  );
} else if (backend === 's3') {
  const client = createS3Client({ endpoint: process.env.S3_ENDPOINT, region: process.env.S3_REGION });
  await applyS3Lifecycle(client, bucket, config);
  console.log(`applied the lifecycle rules to s3://${bucket}`);
} else {
  const client = createOssClient({
    bucket,
    region: process.env.OSS_REGION,
    endpoint: process.env.OSS_ENDPOINT,
    accessKeyId: process.env.OSS_ACCESS_KEY_ID ?? '',
    accessKeySecret: process.env.OSS_ACCESS_KEY_SECRET ?? '',
  });
  await applyOssLifecycle(client, bucket, config);
  console.log(`applied the lifecycle rules to oss://${bucket}`);
}
