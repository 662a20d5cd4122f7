/** s3rver behind the S3 front, and dynalite, on 127.0.0.1: started the same way by tests, bench and soak. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import dynalite from 'dynalite';
import S3rver from 's3rver';
import { close, listen } from './http-util.js';
import { startS3Front } from './s3-front.js';

export interface LocalBackends {
  readonly s3rverPort: number;
  /** The S3 front (conditional writes, tags, faults) over s3rver. */
  readonly s3Front: Awaited<ReturnType<typeof startS3Front>>;
  readonly dynamoPort: number;
  stop(): Promise<void>;
}

/** Starts s3rver (temp folder, one bucket), its S3 front, and dynalite; `stop` removes everything. */
export async function startLocalBackends(bucket: string): Promise<LocalBackends> {
  const dir = await mkdtemp(path.join(tmpdir(), 's3rver-'));
  const s3rver = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory: dir,
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const { port: s3rverPort } = await s3rver.run();
  const s3Front = await startS3Front(s3rverPort);
  const dynamo = dynalite({ createTableMs: 0 });
  const dynamoPort = await listen(dynamo);
  return {
    s3rverPort,
    s3Front,
    dynamoPort,
    async stop() {
      await close(dynamo);
      await s3Front.stop();
      await s3rver.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
