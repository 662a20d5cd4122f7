/**
 * Vitest global setup: starts every local server the suites need, on 127.0.0.1 with ephemeral
 * ports, and stops them at teardown (temp folders removed, nothing left running).
 * - s3rver, behind the S3 front (conditional writes, tags, faults);
 * - the OSS front over the S3 front (OSS signatures, forbid-overwrite);
 * - dynalite (DynamoDB);
 * - Ceph RGW, a real S3 (test/servers/rgw.sh), for the `rgw` tier only (test/tiers.ts), which
 *   vitest.config.ts leaves out where Ceph is not installed (never in CI).
 */
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { createS3Client } from '../../lib/drivers/s3.js';
import type { TierName } from '../tiers.js';
import { startLocalBackends } from './local-backends.js';
import { startOssFront } from './oss-front.js';
import { missingRgwBinaries, RGW_INSTALL } from './rgw-binaries.js';

/** The bucket every suite shares; suites isolate themselves with random key prefixes. */
export const TEST_BUCKET = 'test-bucket';
/** The key pair the OSS front accepts. */
export const OSS_CREDENTIALS = { accessKeyId: 'LTAI-local-test', accessKeySecret: 'local-oss-secret' };

declare module 'vitest' {
  export interface ProvidedContext {
    /** The tier (vitest project) a file runs in. */
    tier: TierName;
    servers: {
      s3rver: string;
      s3: string;
      oss: string;
      dynamodb: string;
      bucket: string;
      /** Ceph RGW, in the rgw tier (null in the others). */
      rgw: { endpoint: string; accessKeyId: string; secretAccessKey: string; conf: string } | null;
    };
  }
}

export default async function setup(project: TestProject) {
  const local = await startLocalBackends(TEST_BUCKET);
  const s3rverPort = local.s3rverPort;
  const s3Front = local.s3Front;
  const ossFront = await startOssFront(s3Front.port, OSS_CREDENTIALS);
  const dynamoPort = local.dynamoPort;

  const rgw = project.name === 'rgw' ? await startRgw() : { server: null, stop: async () => {} };

  project.provide('servers', {
    s3rver: `http://127.0.0.1:${s3rverPort}`,
    s3: s3Front.endpoint,
    oss: ossFront.endpoint,
    dynamodb: `http://127.0.0.1:${dynamoPort}`,
    bucket: TEST_BUCKET,
    rgw: rgw.server,
  });

  return async () => {
    await rgw.stop();
    await ossFront.stop();
    await local.stop();
  };
}

const run = promisify(execFile);

/** Starts Ceph RGW with rgw.sh and creates the test bucket. */
async function startRgw() {
  const missing = missingRgwBinaries();
  if (missing.length > 0) throw new Error(`the RGW tier needs ${missing.join(', ')}: ${RGW_INSTALL}`);
  const dir = await mkdtemp(path.join(tmpdir(), 'rgw-'));
  const script = path.join(import.meta.dirname, 'rgw.sh');
  const { stdout } = await run('bash', [script, 'up', dir], { timeout: 120_000 }).catch(
    (error: { stderr?: string }) => {
      throw new Error(`Ceph RGW did not start:\n${error.stderr ?? error}`);
    },
  );
  const env = Object.fromEntries(
    stdout
      .trim()
      .split('\n')
      .map((line) => line.split('=', 2) as [string, string]),
  );
  const server = {
    endpoint: env.RGW_ENDPOINT ?? '',
    accessKeyId: env.RGW_ACCESS_KEY ?? '',
    secretAccessKey: env.RGW_SECRET_KEY ?? '',
    conf: env.RGW_CONF ?? '',
  };
  const client = createS3Client({ endpoint: server.endpoint, credentials: server });
  await client.send(new CreateBucketCommand({ Bucket: TEST_BUCKET }));
  client.destroy();
  console.log(`RGW tier: Ceph RGW at ${server.endpoint}`);
  return { server, stop: () => run('bash', [script, 'down', dir]).then(() => undefined) };
}
