/** dynalite, started by the global setup, answers conditional writes as DynamoDB does (the lock relies on it). */
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DynamoDBClient,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';

describe('local DynamoDB (dynalite)', () => {
  it('refuses a conditional put on an existing item', async () => {
    const client = new DynamoDBClient({
      endpoint: inject('servers').dynamodb,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const TableName = `smoke-${Date.now()}`;
    await client.send(
      new CreateTableCommand({
        TableName,
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    const put = () =>
      client.send(
        new PutItemCommand({
          TableName,
          Item: { pk: { S: 'lock' } },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    await put();
    await expect(put()).rejects.toBeInstanceOf(ConditionalCheckFailedException);
    client.destroy();
  });
});
