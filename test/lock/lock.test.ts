import { DeleteItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { FencedError } from '../../lib/contract/errors.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { lockName } from '../../lib/lock/common.js';
import { createDynamoDbLock, createLockTable } from '../../lib/lock/dynamodb.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { createStateStore } from '../../lib/store/store.js';
import { onTier } from '../backends.js';
import { describeLockSuite } from './lock-suite.js';

if (onTier('fast'))
  describeLockSuite('memory', async () => {
    const clock = { t: Date.now() };
    const now = () => clock.t;
    return { lock: createMemoryLock({ now }), clock, forget: async () => createMemoryLock({ now }) };
  });

/** A client of dynalite and a fresh lock table on it. */
async function dynaliteTable() {
  const client = new DynamoDBClient({
    endpoint: inject('servers').dynamodb,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const tableName = `locks-${Math.random().toString(36).slice(2)}`;
  await createLockTable(client, tableName);
  return { client, tableName };
}

if (onTier('servers'))
  describeLockSuite('dynamodb (dynalite)', async () => {
    const { client, tableName } = await dynaliteTable();
    const clock = { t: Date.now() };
    const make = () => createDynamoDbLock({ tableName, client, now: () => clock.t });
    return {
      lock: make(),
      clock,
      forget: async (key) => {
        // As DynamoDB's TTL would: the whole item, counter included, is gone.
        await client.send(
          new DeleteItemCommand({ TableName: tableName, Key: { lockKey: { S: lockName(key) } } }),
        );
        return make();
      },
    };
  });

describe.runIf(onTier('servers'))('holderOf on DynamoDB (dynalite)', () => {
  it('is one consistent GetItem, whatever the lock holds', async () => {
    const { client, tableName } = await dynaliteTable();
    const reads: number[] = [];
    const sent: unknown[] = [];
    client.middlewareStack.add(
      (next) => async (args) => {
        sent.push(args.input);
        return next(args);
      },
      { step: 'initialize' },
    );
    const lock = createDynamoDbLock({
      tableName,
      client,
      onRequests: (operation, n) => {
        if (operation === 'holderOf') reads.push(n);
      },
    });
    const key = { userId: 'alice', sessionId: 'read' };
    expect(await lock.holderOf(key)).toBeUndefined();
    const lease = await lock.acquire(key, { owner: 'op' });
    sent.length = 0;
    expect(await lock.holderOf(key)).toMatchObject({ owner: 'op', token: lease.token });
    expect(reads).toEqual([1, 1]);
    expect(sent).toEqual([
      { TableName: tableName, Key: { lockKey: { S: lockName(key) } }, ConsistentRead: true },
    ]);
    client.destroy();
  });
});

describe.runIf(onTier('servers'))('the store with the DynamoDB lock as its authority (dynalite)', () => {
  it('a token the lock never granted, a released lease and a stale one write nothing; the granted one writes, reading the lock once per write', async () => {
    const { client, tableName } = await dynaliteTable();
    const reads: number[] = [];
    const lock = createDynamoDbLock({
      tableName,
      client,
      onRequests: (operation, n) => {
        if (operation === 'grantOf') reads.push(n);
      },
    });
    const user = createStateStore({ driver: createMemoryDriver(), authority: lock }).forUser('alice');
    const key = { userId: 'alice', sessionId: 's' };
    const first = await lock.acquire(key);
    await user.save('s', 'plan', 'by the first holder', { token: first.token });
    expect(reads).toEqual([1]);
    for (const token of [first.token + 1_000_000_000, first.token - 1])
      await expect(user.save('s', 'plan', 'forged', { token })).rejects.toBeInstanceOf(FencedError);
    await lock.release(key, first.owner, first.token);
    await expect(user.save('s', 'plan', 'after release', { token: first.token })).rejects.toBeInstanceOf(
      FencedError,
    );
    const second = await lock.acquire(key);
    await expect(
      user.appendList('s', 'l', [1], { expectedCount: 0, token: first.token }),
    ).rejects.toBeInstanceOf(FencedError);
    await expect(user.delete('s', { token: first.token })).rejects.toBeInstanceOf(FencedError);
    await user.appendList('s', 'l', [1], { expectedCount: 0, token: second.token });
    expect(await user.get('s', 'plan')).toBe('by the first holder');
    expect((await user.getList('s', 'l')).items).toEqual([1]);
    client.destroy();
  });
});
