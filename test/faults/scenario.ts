/**
 * The fault scenario: an agent's turns (lock, read, conditional append, save, release) against S3
 * or OSS and DynamoDB through private fronts that inject 500, 503, connection resets and answers
 * lost after the write (object store) and throttling, 500 and resets (DynamoDB) at random. The test
 * asserts its outcome; `npm run bench` reports it.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BackendError, ContendedError } from '../../lib/contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { createOssDriver } from '../../lib/drivers/oss.js';
import { createS3Driver } from '../../lib/drivers/s3.js';
import { createDynamoDbLock, createLockTable } from '../../lib/lock/dynamodb.js';
import { createStateStore } from '../../lib/store/store.js';
import { startDynamoFront } from '../servers/dynamo-front.js';
import { startOssFront } from '../servers/oss-front.js';
import { startS3Front } from '../servers/s3-front.js';

const OSS_KEYS = { accessKeyId: 'LTAI-faults', accessKeySecret: 'faults-secret' };

export interface FaultOutcome {
  backend: 's3' | 'oss';
  operations: number;
  injectedStore: number;
  injectedDynamo: number;
  callerRetries: number;
  /** Acknowledged appends missing or present twice at the end. */
  lost: number;
  tornReads: number;
  acknowledged: number[];
  final: number[];
  plan: unknown;
}

/** Runs `turns` turns with faults; s3rver and dynalite are the upstreams of the private fronts. */
export async function runFaultScenario(
  backend: 's3' | 'oss',
  upstream: { s3rverPort: number; dynamoPort: number; bucket: string },
  turns = 40,
): Promise<FaultOutcome> {
  const s3 = await startS3Front(upstream.s3rverPort);
  const oss = await startOssFront(s3.port, OSS_KEYS);
  const dynamo = await startDynamoFront(upstream.dynamoPort);
  const faulty = backend === 's3' ? s3.endpoint : oss.endpoint;
  const post = (base: string, path: string, body: unknown) =>
    fetch(`${base}/__front/${path}`, { method: 'POST', body: JSON.stringify(body) });
  const driver =
    backend === 's3'
      ? createS3Driver({
          bucket: upstream.bucket,
          endpoint: s3.endpoint,
          credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
          maxAttempts: 6,
        })
      : createOssDriver({ bucket: upstream.bucket, endpoint: oss.endpoint, ...OSS_KEYS, maxAttempts: 6 });
  const client = new DynamoDBClient({
    endpoint: dynamo.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    maxAttempts: 8,
  });
  try {
    const prefix = `faults-${randomUUID()}/`;
    for (const kind of ['500', '503', 'reset']) {
      await post(faulty, 'faults', { kind, probability: 0.06, match: prefix.slice(0, -1) });
      await post(faulty, 'faults', { kind, probability: 0.03, match: prefix.slice(0, -1), after: true });
    }
    const table = `faults-${randomUUID()}`;
    // The table is created directly; the lock's own requests go through the faulty front.
    const setupClient = new DynamoDBClient({
      endpoint: `http://127.0.0.1:${upstream.dynamoPort}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    });
    await createLockTable(setupClient, table);
    setupClient.destroy();
    for (const kind of ['throttle', '500', 'reset'])
      await post(dynamo.endpoint, 'faults', { kind, probability: 0.1 });
    const lock = createDynamoDbLock({ tableName: table, client });
    // Small lists caps: seals and merges (CAS) and rollovers (append) happen under the faults too.
    const store = createStateStore({
      driver,
      prefix,
      listHeadBytes: 1024,
      listSealBytes: 512,
      listLogBytes: 1024,
    }).forUser('agent');

    let operations = 0;
    let callerRetries = 0;
    let tornReads = 0;
    /** An agent's call: retried by the caller until acknowledged, as agents do with retryable errors. */
    const persist = async <T>(fn: () => Promise<T>): Promise<T> => {
      for (let attempt = 0; ; attempt++) {
        operations++;
        try {
          return await fn();
        } catch (error) {
          const retryable =
            (error instanceof BackendError && error.retryable) || error instanceof ContendedError;
          if (!retryable || attempt > 20) throw error;
          callerRetries++;
        }
      }
    };
    const acknowledged: number[] = [];
    for (let turn = 0; turn < turns; turn++) {
      const lease = await persist(() =>
        lock.acquire({ userId: 'agent', sessionId: 's' }, { waitMs: 5000, owner: 'agent-1' }),
      );
      const page = await persist(() => store.getList<{ turn: number }>('s', 'turns'));
      if (page.count !== page.items.length || page.hash !== chainHash(EMPTY_HASH, page.items)) tornReads++;
      await persist(() =>
        store.appendList('s', 'turns', [{ turn }], {
          expectedCount: page.count,
          expectedHash: page.hash,
          token: lease.token,
        }),
      );
      acknowledged.push(turn);
      await persist(() => store.save('s', 'plan', { turn }, { token: lease.token }));
      if (turn % 13 === 12) {
        const current = await persist(() => store.getList<{ turn: number }>('s', 'turns'));
        await persist(() => store.saveList('s', 'turns', current.items)); // an unchanged save under faults
      }
      await persist(() => lock.release({ userId: 'agent', sessionId: 's' }, lease.owner, lease.token));
    }
    const injected = async (base: string) =>
      ((await (await fetch(`${base}/__front/injected`)).json()) as { injected: number }).injected;
    const injectedStore = await injected(faulty);
    const injectedDynamo = await injected(dynamo.endpoint);
    await post(faulty, 'reset', {});
    const final = (await store.getList<{ turn: number }>('s', 'turns')).items.map((i) => i.turn);
    const lost = acknowledged.filter((t) => final.filter((f) => f === t).length !== 1).length;
    return {
      backend,
      operations,
      injectedStore,
      injectedDynamo,
      callerRetries,
      lost,
      tornReads,
      acknowledged,
      final,
      plan: await store.get('s', 'plan'),
    };
  } finally {
    client.destroy();
    await driver.close();
    await oss.stop();
    await s3.stop();
    await dynamo.stop();
  }
}

export function faultTable(outcomes: FaultOutcome[]): string {
  return [
    '| object store | operations | object-store faults | DynamoDB faults | caller retries | acknowledged writes lost (goal 0) | torn reads (goal 0) |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...outcomes.map(
      (o) =>
        `| ${o.backend === 's3' ? 'S3 (s3rver)' : 'OSS (ali-oss)'} | ${o.operations} | ${o.injectedStore} | ${o.injectedDynamo} | ${o.callerRetries} | ${o.lost} | ${o.tornReads} |`,
    ),
  ].join('\n');
}
