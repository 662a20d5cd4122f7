/** Lock throughput: acquire+release pairs per second, uncontended and with 8 contenders, and DynamoDB requests per acquire. */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoDbLock, createLockTable } from '../lib/lock/dynamodb.js';

export interface LockBenchRow {
  scenario: string;
  pairs: number;
  pairsPerSecond: number;
  requestsPerAcquire: number;
}

export async function runLockBench(endpoint: string, pairs: number): Promise<LockBenchRow[]> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
  });
  const tableName = `bench-locks-${randomUUID()}`;
  await createLockTable(client, tableName);
  const rows: LockBenchRow[] = [];
  for (const contenders of [1, 8]) {
    let acquires = 0;
    let requests = 0;
    const lock = createDynamoDbLock({
      tableName,
      client,
      onRequests: (op, n) => {
        if (op === 'acquire') {
          acquires++;
          requests += n;
        }
      },
    });
    const key = { userId: 'bench', sessionId: `s-${contenders}` };
    const perWorker = Math.ceil(pairs / contenders);
    const started = performance.now();
    await Promise.all(
      Array.from({ length: contenders }, async () => {
        for (let i = 0; i < perWorker; i++) {
          const lease = await lock.acquire(key, { waitMs: 10_000 });
          await lock.release(key, lease.owner, lease.token);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    rows.push({
      scenario: contenders === 1 ? 'uncontended' : `${contenders} contenders`,
      pairs: perWorker * contenders,
      pairsPerSecond: (perWorker * contenders) / seconds,
      requestsPerAcquire: requests / acquires,
    });
  }
  client.destroy();
  return rows;
}

export function lockTable(rows: LockBenchRow[]): string {
  return [
    '| scenario | acquire+release pairs | pairs per second | DynamoDB requests per acquire |',
    '|---|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${r.pairs} | ${r.pairsPerSecond.toFixed(0)} | ${r.requestsPerAcquire.toFixed(2)} |`,
    ),
  ].join('\n');
}
