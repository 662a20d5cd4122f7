/**
 * A backend's refusal of the deployment (a missing bucket or table, access denied, refused
 * credentials), as the S3 and OSS drivers and the DynamoDB lock type it: the resource by its name,
 * the backend's code, who was refused (the ARN the refusal names, else the access key id that
 * signed the request, shortened: never the secret), and not retryable. Each SDK talks to a small
 * server on 127.0.0.1 that answers every request with one scripted refusal, as S3, OSS and DynamoDB
 * word theirs.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MisconfiguredBackendError } from '../../lib/contract/errors.js';
import { UnavailableResourceError } from '../../lib/drivers/errors.js';
import { createOssDriver } from '../../lib/drivers/oss.js';
import { createS3Driver } from '../../lib/drivers/s3.js';
import { createDynamoDbLock } from '../../lib/lock/dynamodb.js';
import { callerIdentity, shortKeyId, signingKeyOf } from '../../lib/util/identity.js';

const KEY = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
};
const ROLE = 'arn:aws:sts::123456789012:assumed-role/agent-state-api/agent-state-dev-api';

/** What the server answers next: status, content type, body. */
let next: { status: number; type?: string; body?: string } = { status: 403 };
/** The Authorization header of each request it got. */
const seen: string[] = [];
let endpoint = '';
const server = http.createServer((req, res) => {
  seen.push(String(req.headers.authorization ?? ''));
  req.resume();
  req.on('end', () => {
    res.writeHead(next.status, next.type ? { 'content-type': next.type } : {});
    res.end(req.method === 'HEAD' ? undefined : next.body);
  });
});
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const s3Error = (code: string, message: string) => ({
  status: code === 'NoSuchBucket' ? 404 : 403,
  type: 'application/xml',
  body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message><RequestId>r1</RequestId></Error>`,
});
const refusalOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('accepted');
    },
    (error: unknown) => error as UnavailableResourceError,
  );

describe('who a refused request was made as (lib/util/identity.ts)', () => {
  it('the ARN a refusal names, else the access key id shortened to its kind and last four characters', () => {
    expect(shortKeyId('AKIAIOSFODNN7EXAMPLE')).toBe('AKIA…MPLE');
    expect(shortKeyId('S3RVER')).toBe('S3RV…');
    const denied = `User: ${ROLE} is not authorized to perform: s3:PutObject on resource: "arn:aws:s3:::b/k" because no identity-based policy allows the s3:PutObject action`;
    expect(callerIdentity(denied, KEY.accessKeyId)).toBe(`${ROLE} (from the backend's message)`);
    expect(callerIdentity('Access Denied', KEY.accessKeyId)).toBe('access key id AKIA…MPLE');
    expect(callerIdentity('Access Denied', undefined)).toBeUndefined();
    expect(
      signingKeyOf(
        `AWS4-HMAC-SHA256 Credential=${KEY.accessKeyId}/20260115/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=abc`,
      ),
    ).toBe(KEY.accessKeyId);
    expect(signingKeyOf('OSS LTAI:sig')).toBeUndefined();
  });
});

describe('the S3 driver types a refusal', () => {
  const driver = () => createS3Driver({ bucket: 'agent-state', endpoint, credentials: KEY, maxAttempts: 1 });

  it('AccessDenied: the bucket refused access, as the access key id that signed the request; not retryable', async () => {
    next = s3Error('AccessDenied', 'Access Denied');
    seen.length = 0;
    const error = await refusalOf(driver().put('agent-state/u/s/k.json', '{}'));
    expect(error).toBeInstanceOf(UnavailableResourceError);
    expect(error).toMatchObject({
      resource: 'bucket',
      code: 'AccessDenied',
      resourceName: 'agent-state',
      identity: 'access key id AKIA…MPLE',
      retryable: false,
      message: 's3 bucket agent-state refused access (AccessDenied); credentials: access key id AKIA…MPLE',
    });
    expect(seen).toHaveLength(1); // not retried
    expect(error.message).not.toContain(KEY.secretAccessKey);
  });

  it('AccessDenied naming the caller: its ARN', async () => {
    next = s3Error('AccessDenied', `User: ${ROLE} is not authorized to perform: s3:PutObject`);
    const error = await refusalOf(driver().put('agent-state/u/s/k.json', '{}'));
    expect(error.identity).toBe(`${ROLE} (from the backend's message)`);
  });

  it('a HEAD answered 403 (no body to name the refusal) is a refused bucket too; NoSuchBucket is a missing one', async () => {
    next = { status: 403 };
    expect(await refusalOf(driver().head('agent-state/u/s/k.json'))).toMatchObject({
      resource: 'bucket',
      code: 'Forbidden',
      retryable: false,
    });
    next = s3Error('NoSuchBucket', 'The specified bucket does not exist');
    expect((await refusalOf(driver().get('agent-state/u/s/k.json'))).message).toBe(
      's3 bucket agent-state does not exist (NoSuchBucket); credentials: access key id AKIA…MPLE',
    );
  });
});

describe('the OSS driver types a refusal', () => {
  it('AccessDenied: the bucket refused access, as the access key id the client has', async () => {
    next = s3Error('AccessDenied', 'You have no right to access this object because of bucket acl.');
    const driver = createOssDriver({
      bucket: 'agent-state',
      endpoint: endpoint.replace('127.0.0.1', 'localhost'),
      accessKeyId: 'LTAI5tExampleKeyId42',
      accessKeySecret: 'secret-of-the-example',
      maxAttempts: 1,
    });
    const error = await refusalOf(driver.put('agent-state/u/s/k.json', '{}'));
    expect(error).toMatchObject({
      resource: 'bucket',
      code: 'AccessDenied',
      retryable: false,
      message: 'oss bucket agent-state refused access (AccessDenied); credentials: access key id LTAI…Id42',
    });
  });
});

describe('the DynamoDB lock types a refusal', () => {
  const lock = () =>
    createDynamoDbLock({ tableName: 'agent-state-locks', endpoint, region: 'us-east-1', credentials: KEY });
  const dynamoError = (type: string, message: string) => ({
    status: 400,
    type: 'application/x-amz-json-1.0',
    body: JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message }),
  });

  it('AccessDeniedException: the table refused access, as the ARN the refusal names; not retryable', async () => {
    next = dynamoError(
      'AccessDeniedException',
      `User: ${ROLE} is not authorized to perform: dynamodb:PutItem on resource: arn:aws:dynamodb:us-east-1:123456789012:table/agent-state-locks`,
    );
    const error = (await refusalOf(
      lock().acquire({ userId: 'u', sessionId: 's' }),
    )) as unknown as MisconfiguredBackendError;
    expect(error).toBeInstanceOf(MisconfiguredBackendError);
    expect(error).toMatchObject({
      backend: 'dynamodb',
      resource: 'table',
      resourceName: 'agent-state-locks',
      identity: `${ROLE} (from the backend's message)`,
      retryable: false,
    });
    expect(error.message).toMatch(
      /^dynamodb lock table agent-state-locks refused access \(AccessDeniedException\); credentials: arn:aws:sts::/,
    );
  });

  it('ResourceNotFoundException: the table does not exist, as the access key id that signed the request', async () => {
    next = dynamoError('ResourceNotFoundException', 'Requested resource not found');
    const error = (await refusalOf(
      lock().acquire({ userId: 'u', sessionId: 's' }),
    )) as unknown as MisconfiguredBackendError;
    expect(error.message).toBe(
      'dynamodb lock table agent-state-locks does not exist (ResourceNotFoundException); credentials: access key id AKIA…MPLE',
    );
  });
});
