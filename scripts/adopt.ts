/**
 * `npm run adopt -- --prefix P`: converts the sessions the AgentScope reference's OSS store wrote
 * under `P` (default `STATE_PREFIX`) on the configured backend (the same environment as the
 * server: `STORE_BACKEND`, `S3_BUCKET`, `OSS_BUCKET`, …), printing each step; resumable (run it
 * again after a failure). Afterwards `ADOPT_REFERENCE` can be off. docs/backends.md, "Reading data
 * written by the AgentScope reference".
 */
import { loadConfigOrExit } from '../lib/config.js';
import { createFsDriver } from '../lib/drivers/fs.js';
import type { ObjectStoreDriver } from '../lib/drivers/types.js';
import { ossDriverFrom } from '../lib/http/backends/aliyun.js';
import { s3DriverFrom } from '../lib/http/backends/aws.js';
import { adoptPrefix } from '../lib/store/adopt.js';

const args = process.argv.slice(2);
const at = args.indexOf('--prefix');
const config = loadConfigOrExit({ ...process.env, ALLOW_ANONYMOUS: 'true' });
const prefix = at >= 0 ? args[at + 1] : config.STATE_PREFIX;
if (prefix === undefined || prefix.startsWith('--')) {
  console.error('usage: npm run adopt -- --prefix <prefix ending with "/">');
  process.exit(2);
}

function driverFor(): ObjectStoreDriver {
  switch (config.STORE_BACKEND) {
    case 's3':
      return s3DriverFrom(config);
    case 'oss':
      return ossDriverFrom(config);
    case 'fs':
      return createFsDriver({ root: config.DATA_DIR });
    default:
      console.error('adopt: STORE_BACKEND=memory holds nothing to adopt');
      process.exit(2);
  }
}

const driver = driverFor();
try {
  const report = await adoptPrefix({
    driver,
    prefix,
    listJson: config.LIST_JSON,
    onStep: (s) => console.log(`${s.action}: ${s.name}${s.detail ? ` (${s.detail})` : ''}`),
  });
  console.log(`adopt: ${report.sessions} sessions under "${prefix}" converted; ${report.steps.length} steps`);
} catch (error) {
  console.error(`adopt stopped (run it again to resume): ${error instanceof Error ? error.message : error}`);
  process.exitCode = 1;
} finally {
  await driver.close();
}
