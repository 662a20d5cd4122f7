/**
 * `npm run bench:snapshots`: only the workspace snapshot section of `npm run bench`
 * (bench/workspace-bench.ts, the 1 GiB tree beside a tar upload of it, s3 driver on s3rver behind
 * the S3 front), printed; `-- --smoke` at CI's size. Writes nothing: it re-measures the time rows
 * on a quiet machine without the 40-minute whole run.
 */
import { createS3Driver } from '../lib/drivers/s3.js';
import { startLocalBackends } from '../test/servers/local-backends.js';
import { runSnapshotBench, SNAPSHOT_SMOKE_BYTES, snapshotTable } from './workspace-bench.js';

const bytes = process.argv.includes('--smoke') ? SNAPSHOT_SMOKE_BYTES : 1024 * 1024 * 1024;
const local = await startLocalBackends('bench');
try {
  const driver = createS3Driver({
    bucket: 'bench',
    endpoint: local.s3Front.endpoint,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  const table = snapshotTable(await runSnapshotBench(driver, bytes));
  console.log(`\nWorkspace snapshots (${bytes / 1024 / 1024} MiB tree, s3 driver on s3rver):\n`);
  console.log(table);
} finally {
  await local.stop();
}
