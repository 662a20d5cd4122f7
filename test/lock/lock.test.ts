import { DeleteItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { createDynamoDbLock, createLockTable } from '../../lib/lock/dynamodb.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { lockName } from '../../lib/lock/types.js';
import { describeLockSuite } from './lock-suite.js';

describeLockSuite('memory', async () => {
  const clock = { t: Date.now() };
  const now = () => clock.t;
  return { lock: createMemoryLock({ now }), clock, forget: async () => createMemoryLock({ now }) };
});

describeLockSuite('dynamodb (dynalite)', async () => {
  const client = new DynamoDBClient({
    endpoint: inject('servers').dynamodb,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const tableName = `locks-${Math.random().toString(36).slice(2)}`;
  await createLockTable(client, tableName);
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
