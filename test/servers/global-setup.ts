/**
 * Vitest global setup: starts every local server the suites need, on 127.0.0.1 with ephemeral
 * ports, and stops them at teardown (temp folders removed, nothing left running).
 * - s3rver, behind the S3 front (conditional writes, tags, faults);
 * - the OSS front over the S3 front (OSS signatures, forbid-overwrite);
 * - dynalite (DynamoDB).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import dynalite from 'dynalite';
import S3rver from 's3rver';
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { close, listen } from './http-util.js';
import { startOssFront } from './oss-front.js';
import { startS3Front } from './s3-front.js';

/** The bucket every suite shares; suites isolate themselves with random key prefixes. */
export const TEST_BUCKET = 'test-bucket';
/** The key pair the OSS front accepts. */
export const OSS_CREDENTIALS = { accessKeyId: 'LTAI-local-test', accessKeySecret: 'local-oss-secret' };

declare module 'vitest' {
  export interface ProvidedContext {
    servers: {
      s3rver: string;
      s3: string;
      oss: string;
      dynamodb: string;
      bucket: string;
    };
  }
}

export default async function setup(project: TestProject) {
  const dir = await mkdtemp(path.join(tmpdir(), 's3rver-'));
  const s3rver = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory: dir,
    silent: true,
    configureBuckets: [{ name: TEST_BUCKET, configs: [] }],
  });
  const { port: s3rverPort } = await s3rver.run();
  const s3Front = await startS3Front(s3rverPort);
  const ossFront = await startOssFront(s3Front.port, OSS_CREDENTIALS);
  const dynamo = dynalite({ createTableMs: 0 });
  const dynamoPort = await listen(dynamo);

  project.provide('servers', {
    s3rver: `http://127.0.0.1:${s3rverPort}`,
    s3: s3Front.endpoint,
    oss: ossFront.endpoint,
    dynamodb: `http://127.0.0.1:${dynamoPort}`,
    bucket: TEST_BUCKET,
  });

  return async () => {
    await ossFront.stop();
    await s3Front.stop();
    await close(dynamo);
    await s3rver.close();
    await rm(dir, { recursive: true, force: true });
  };
}
