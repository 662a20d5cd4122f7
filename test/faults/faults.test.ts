/**
 * Faults: S3 (500, 503 SlowDown, connection resets, answers lost after the write) and DynamoDB
 * (throttling, 500, resets) injected at random into every request of agents' turns, through private
 * fronts. With the SDKs' retries and the callers' own retries, every acknowledged write reads back
 * exactly once, and no read is ever torn.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createS3Driver } from '../../lib/drivers/s3.js';
import { createDynamoDbLock, createLockTable } from '../../lib/lock/dynamodb.js';
import { BackendError } from '../../lib/store/errors.js';
import { chainHash, EMPTY_HASH } from '../../lib/store/hash.js';
import { createStateStore } from '../../lib/store/store.js';
import { startDynamoFront } from '../servers/dynamo-front.js';
import { startS3Front } from '../servers/s3-front.js';

const servers = inject('servers');
const portOf = (url: string) => Number(new URL(url).port);

describe('faults injected at random points of every operation', () => {
  let s3: Awaited<ReturnType<typeof startS3Front>>;
  let dynamo: Awaited<ReturnType<typeof startDynamoFront>>;
  beforeAll(async () => {
    s3 = await startS3Front(portOf(servers.s3rver));
    dynamo = await startDynamoFront(portOf(servers.dynamodb));
  });
  afterAll(async () => {
    await s3.stop();
    await dynamo.stop();
  });
  const post = (base: string, path: string, body: unknown) =>
    fetch(`${base}/__front/${path}`, { method: 'POST', body: JSON.stringify(body) });

  it('loses no acknowledged write and shows no torn read', async () => {
    const prefix = `faults-${randomUUID()}/`;
    for (const kind of ['500', '503', 'reset']) {
      await post(s3.endpoint, 'faults', { kind, probability: 0.04, match: prefix.slice(0, -1) });
      await post(s3.endpoint, 'faults', { kind, probability: 0.02, match: prefix.slice(0, -1), after: true });
    }

    const driver = createS3Driver({
      bucket: servers.bucket,
      endpoint: s3.endpoint,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      maxAttempts: 6,
    });
    const client = new DynamoDBClient({
      endpoint: dynamo.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      maxAttempts: 8,
    });
    const table = `faults-${randomUUID()}`;
    const setupClient = new DynamoDBClient({
      endpoint: servers.dynamodb,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    });
    await createLockTable(setupClient, table);
    setupClient.destroy();
    // The table is created directly; the lock's own requests go through the faulty front.
    for (const kind of ['throttle', '500', 'reset'])
      await post(dynamo.endpoint, 'faults', { kind, probability: 0.1 });
    const lock = createDynamoDbLock({ tableName: table, client });
    const store = createStateStore({ driver, prefix, foldEvery: 4, rolloverAt: 10 }).forUser('agent');

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
          if (!(error instanceof BackendError) || !error.retryable || attempt > 20) throw error;
          callerRetries++;
        }
      }
    };
    const acknowledged: number[] = [];
    for (let turn = 0; turn < 40; turn++) {
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
    const injectedS3 = (
      (await (await fetch(`${s3.endpoint}/__front/injected`)).json()) as { injected: number }
    ).injected;
    const injectedDynamo = (
      (await (await fetch(`${dynamo.endpoint}/__front/injected`)).json()) as { injected: number }
    ).injected;
    await fetch(`${s3.endpoint}/__front/reset`, { method: 'POST' });
    const final = await store.getList<{ turn: number }>('s', 'turns');
    const lost = acknowledged.filter((t) => final.items.filter((i) => i.turn === t).length !== 1).length;
    console.log(
      `faults: ${operations} operations, ${injectedS3} S3 and ${injectedDynamo} DynamoDB faults injected, ${callerRetries} caller retries, ${lost} acknowledged writes lost or doubled, ${tornReads} torn reads`,
    );
    expect(injectedS3 + injectedDynamo).toBeGreaterThan(20);
    expect(lost).toBe(0);
    expect(tornReads).toBe(0);
    expect(final.items.map((i) => i.turn)).toEqual(acknowledged);
    expect(await store.get('s', 'plan')).toEqual({ turn: 39 });
    client.destroy();
  }, 150_000);
});
