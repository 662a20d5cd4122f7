/**
 * DynamoDB lease lock with fencing tokens, on conditional writes (one item per lock key):
 * `lockKey` (partition key), `owner`, `expiresAt` (ms), `token` (the fencing counter), `version`
 * (changes with every grant or renewal), `ttl` (seconds: last grant + session retention + 1 day, so
 * DynamoDB's TTL removes abandoned items). Expired items are treated as free: TTL deletes lazily.
 *
 * An uncontended acquire is ONE UpdateItem. The token is set to the current time in ms when that is
 * above the stored counter (almost always), otherwise counter + 1 (a second request, only for grants
 * less than a millisecond apart). So tokens strictly increase, and a counter lost to TTL restarts
 * from the clock, above every token issued before.
 */

import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  type DynamoDBClientConfig,
  GetItemCommand,
  ResourceInUseException,
  UpdateItemCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { DEFAULTS } from '../contract/defaults.js';
import {
  BackendError,
  type BackendResource,
  LockConflictError,
  LockLostError,
  MisconfiguredBackendError,
} from '../contract/errors.js';
import {
  type AcquireOptions,
  type CommitIdentity,
  checkLeaseMs,
  checkOwner,
  checkToken,
  checkWaitMs,
  type Lease,
  type LockGrant,
  type LockHolder,
  type LockKey,
  leaseHolds,
  type SessionLock,
} from '../contract/lock.js';
import { callerIdentity, rememberSigningKey } from '../util/identity.js';
import { DAY_MS } from '../util/units.js';
import { lockName, waitFor } from './common.js';

/** Options of the DynamoDB lock. */
export interface DynamoDbLockOptions {
  readonly tableName: string;
  /** A client to use (tests inject one); default one built from `endpoint` and `region`. */
  readonly client?: DynamoDBClient;
  readonly endpoint?: string;
  readonly region?: string;
  readonly credentials?: DynamoDBClientConfig['credentials'];
  /** A lease counts as expired only this long after its expiry, for clocks that disagree; default 500 ms. */
  readonly clockSkewMs?: number;
  /** Days a session lives; sets the TTL of lock items (plus one day); default 30. */
  readonly retentionDays?: number;
  /** Clock; default `Date.now`. */
  readonly now?: () => number;
  /** Called with the number of DynamoDB requests each call made (for metrics and benchmarks). */
  readonly onRequests?: (
    operation: 'acquire' | 'renew' | 'release' | 'grantOf' | 'holderOf' | 'recordCommit',
    requests: number,
  ) => void;
}

/** DynamoDB's codes for a missing table, a table these credentials may not use, and refused credentials. */
const UNAVAILABLE = new Map<string, BackendResource>([
  ['ResourceNotFoundException', 'table'],
  ['AccessDeniedException', 'table'],
  ['UnrecognizedClientException', 'credentials'],
  ['InvalidSignatureException', 'credentials'],
  ['ExpiredTokenException', 'credentials'],
]);

/** The lock table's partition key and TTL attribute (bootstrap and infra create the table with them). */
export const LOCK_TABLE_KEY = 'lockKey';
export const LOCK_TTL_ATTRIBUTE = 'ttl';

/** Creates the lock table (on-demand, TTL on `ttl`); for local servers and tests, infra does it in the cloud. */
export async function createLockTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        AttributeDefinitions: [{ AttributeName: LOCK_TABLE_KEY, AttributeType: 'S' }],
        KeySchema: [{ AttributeName: LOCK_TABLE_KEY, KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  // A table is usable once ACTIVE; before that, requests to it fail with ResourceNotFoundException.
  const deadline = Date.now() + 60_000;
  for (let delay = 20; ; delay = Math.min(1000, delay * 2)) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') break;
    if (Date.now() > deadline) throw new Error(`lock table ${tableName} is still ${Table?.TableStatus}`);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  // dynalite has no TTL; DynamoDB does. Expired items are treated as free either way.
  await client
    .send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: LOCK_TTL_ATTRIBUTE, Enabled: true },
      }),
    )
    .catch(() => undefined);
}

const n = (v: number): AttributeValue => ({ N: String(v) });
const s = (v: string): AttributeValue => ({ S: v });

type Item = Record<string, AttributeValue>;

/** The update of a commit's identity (`commitId`, `commitDigest`), or nothing. */
function recording(commit: CommitIdentity | undefined): { set: string; values: Item } {
  return commit
    ? {
        set: ', commitId = :commitId, commitDigest = :commitDigest',
        values: { ':commitId': s(commit.commitId), ':commitDigest': s(commit.digest) },
      }
    : { set: '', values: {} };
}

function toLease(item: Item | undefined, leaseMs: number): Lease {
  return {
    owner: item?.owner?.S ?? '',
    token: Number(item?.token?.N),
    expiresAt: new Date(Number(item?.expiresAt?.N)),
    leaseMs,
  };
}

/** The lock's calls on its table (`createDynamoDbLock` names their deployment errors). */
class DynamoDbLock implements Omit<SessionLock, 'checkReady'> {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #now: () => number;
  readonly #skew: number;
  readonly #retentionMs: number;
  readonly #report: NonNullable<DynamoDbLockOptions['onRequests']>;

  constructor(client: DynamoDBClient, options: DynamoDbLockOptions) {
    this.#client = client;
    this.#table = options.tableName;
    this.#now = options.now ?? Date.now;
    this.#skew = options.clockSkewMs ?? DEFAULTS.lockClockSkewMs;
    this.#retentionMs = (options.retentionDays ?? DEFAULTS.retentionDays) * DAY_MS;
    this.#report = options.onRequests ?? (() => {});
  }

  /** The TTL of an item granted or renewed at `t`: after the session's retention, plus a day. */
  #ttl(t: number): AttributeValue {
    return n(Math.ceil((t + this.#retentionMs + DAY_MS) / 1000));
  }

  /** A lock item, read consistently. */
  async #item(name: string): Promise<Item | undefined> {
    const { Item: item } = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: { lockKey: s(name) }, ConsistentRead: true }),
    );
    return item;
  }

  /** Whether a lock item has a holder whose lease holds at `t` (default: the clock now). */
  #held(item: Item | undefined, t?: number): boolean {
    return (
      item?.owner?.S !== undefined && leaseHolds(Number(item.expiresAt?.N), t ?? this.#now(), this.#skew)
    );
  }

  /** One grant attempt; counts its requests into `used`. */
  async #grant(name: string, owner: string, explicit: boolean, leaseMs: number, used: { n: number }) {
    const t = this.#now();
    const common = {
      ':owner': s(owner),
      ':exp': n(t + leaseMs),
      ':version': s(randomUUID()),
      ':ttl': this.#ttl(t),
      ':expired': n(t - this.#skew),
    };
    const free = '(attribute_not_exists(lockKey) OR attribute_not_exists(#owner) OR expiresAt < :expired)';
    const attempts: Array<[string, string, Item]> = [
      // Almost always: the clock is above the counter, and the token becomes the clock.
      [', #token = :now', `${free} AND (attribute_not_exists(#token) OR #token < :now)`, { ':now': n(t) }],
      // Grants less than a millisecond apart: the counter + 1.
      [', #token = #token + :one', `${free} AND #token >= :now`, { ':now': n(t), ':one': n(1) }],
    ];
    if (explicit) {
      // Reentrant: the same explicit owner keeps its token and extends its lease.
      attempts.push(['', '#owner = :owner AND expiresAt >= :expired', {}]);
    }
    for (const [token, condition, values] of attempts) {
      used.n++;
      try {
        const names: Record<string, string> =
          token.includes('#token') || condition.includes('#token') ? { '#token': 'token' } : {};
        const out = await this.#client.send(
          new UpdateItemCommand({
            TableName: this.#table,
            Key: { lockKey: s(name) },
            UpdateExpression: `SET #owner = :owner, expiresAt = :exp, version = :version, #ttl = :ttl, leaseMs = :lease${token}`,
            ConditionExpression: condition,
            ExpressionAttributeNames: { '#owner': 'owner', '#ttl': 'ttl', ...names },
            ExpressionAttributeValues: { ...common, ':lease': n(leaseMs), ...values },
            ReturnValues: 'ALL_NEW',
          }),
        );
        return toLease(out.Attributes, leaseMs);
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
    used.n++;
    const item = await this.#item(name);
    if (this.#held(item, t)) {
      throw new LockConflictError(item?.owner?.S as string, new Date(Number(item?.expiresAt?.N)));
    }
    // Released or expired between our attempts: let the caller retry at once.
    throw new LockConflictError('', new Date(t));
  }

  async acquire(key: LockKey, o: AcquireOptions = {}): Promise<Lease> {
    const leaseMs = checkLeaseMs(o.leaseMs);
    const waitMs = checkWaitMs(o.waitMs);
    const owner = o.owner === undefined ? randomUUID() : checkOwner(o.owner);
    const name = lockName(key);
    const used = { n: 0 };
    try {
      return await waitFor(
        () => this.#grant(name, owner, o.owner !== undefined, leaseMs, used),
        waitMs,
        this.#now,
      );
    } finally {
      this.#report('acquire', used.n);
    }
  }

  async renew(
    key: LockKey,
    owner: string,
    token: number,
    o: { leaseMs?: number; commit?: CommitIdentity } = {},
  ): Promise<Lease> {
    checkOwner(owner);
    checkToken(token);
    const leaseMs = checkLeaseMs(o.leaseMs);
    const t = this.#now();
    const commit = recording(o.commit);
    this.#report('renew', 1);
    try {
      const out = await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { lockKey: s(lockName(key)) },
          UpdateExpression: `SET expiresAt = :exp, version = :version, #ttl = :ttl, leaseMs = :lease${commit.set}`,
          ConditionExpression: '#owner = :owner AND #token = :token',
          ExpressionAttributeNames: { '#owner': 'owner', '#token': 'token', '#ttl': 'ttl' },
          ExpressionAttributeValues: {
            ':owner': s(owner),
            ':token': n(token),
            ':exp': n(t + leaseMs),
            ':version': s(randomUUID()),
            ':ttl': this.#ttl(t),
            ':lease': n(leaseMs),
            ...commit.values,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return toLease(out.Attributes, leaseMs);
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new LockLostError();
      throw error;
    }
  }

  async release(
    key: LockKey,
    owner: string,
    token: number,
    o: { commit?: CommitIdentity } = {},
  ): Promise<void> {
    checkOwner(owner);
    checkToken(token);
    const name = lockName(key);
    const commit = recording(o.commit);
    let requests = 1;
    try {
      // The counter stays: only the holder is removed.
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { lockKey: s(name) },
          UpdateExpression: `REMOVE #owner SET expiresAt = :zero, version = :version${commit.set}`,
          ConditionExpression: '#owner = :owner AND #token = :token',
          ExpressionAttributeNames: { '#owner': 'owner', '#token': 'token' },
          ExpressionAttributeValues: {
            ':owner': s(owner),
            ':token': n(token),
            ':zero': n(0),
            ':version': s(randomUUID()),
            ...commit.values,
          },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      requests++;
      if (this.#held(await this.#item(name))) throw new LockLostError('another owner holds the lock');
    } finally {
      this.#report('release', requests);
    }
  }

  async recordCommit(key: LockKey, token: number, commit: CommitIdentity): Promise<void> {
    checkToken(token);
    const update = recording(commit);
    this.#report('recordCommit', 1);
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { lockKey: s(lockName(key)) },
          UpdateExpression: `SET version = :version${update.set}`,
          ConditionExpression: 'attribute_exists(#owner) AND #token = :token AND expiresAt >= :expired',
          ExpressionAttributeNames: { '#owner': 'owner', '#token': 'token' },
          ExpressionAttributeValues: {
            ':token': n(token),
            ':expired': n(this.#now() - this.#skew),
            ':version': s(randomUUID()),
            ...update.values,
          },
        }),
      );
    } catch (error) {
      // The lease is gone: nothing to record it in (the commit's own records remain).
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async holderOf(key: LockKey): Promise<LockHolder | undefined> {
    this.#report('holderOf', 1);
    const item = await this.#item(lockName(key));
    const token = Number(item?.token?.N);
    if (!this.#held(item) || !Number.isSafeInteger(token)) return undefined;
    return { owner: item?.owner?.S as string, token, expiresAt: new Date(Number(item?.expiresAt?.N)) };
  }

  async grantOf(key: LockKey): Promise<LockGrant | undefined> {
    this.#report('grantOf', 1);
    const item = await this.#item(lockName(key));
    const token = Number(item?.token?.N);
    if (!item || !Number.isSafeInteger(token)) return undefined;
    const live = this.#held(item);
    const commitId = item.commitId?.S;
    const digest = item.commitDigest?.S;
    return { token, live, ...(commitId && digest ? { commit: { commitId, digest } } : {}) };
  }
}

/** Creates a DynamoDB lock on an existing table. */
export function createDynamoDbLock(options: DynamoDbLockOptions): SessionLock {
  const client =
    options.client ??
    new DynamoDBClient({
      region: options.region ?? process.env.AWS_REGION ?? 'us-east-1',
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
    });
  const lock = new DynamoDbLock(client, options);
  const TableName = options.tableName;
  const signingKey = rememberSigningKey(client);
  // A missing table, one these credentials may not use, or refused credentials is a deployment
  // problem: say so, whatever the call, naming the table and who asked.
  const named = (error: unknown): never => {
    const code = (error as { name?: string })?.name ?? '';
    const resource = UNAVAILABLE.get(code);
    if (!resource) throw error;
    const what =
      resource === 'credentials'
        ? 'refused the credentials'
        : `lock table ${TableName} ${code === 'ResourceNotFoundException' ? 'does not exist' : 'refused access'}`;
    const identity = callerIdentity((error as Error | undefined)?.message, signingKey());
    throw new MisconfiguredBackendError(
      'dynamodb',
      resource,
      `dynamodb ${what} (${code})${identity ? `; credentials: ${identity}` : ''}`,
      { cause: error, ...(resource === 'table' ? { resourceName: TableName } : {}), identity },
    );
  };
  return {
    acquire: (key, o) => lock.acquire(key, o).catch(named),
    renew: (key, owner, token, o) => lock.renew(key, owner, token, o).catch(named),
    release: (key, owner, token, o) => lock.release(key, owner, token, o).catch(named),
    recordCommit: (key, token, commit) => lock.recordCommit(key, token, commit).catch(named),
    holderOf: (key) => lock.holderOf(key).catch(named),
    grantOf: (key) => lock.grantOf(key).catch(named),
    // One DescribeTable: a table that is not ACTIVE yet (or any other failure) is worth a retry.
    checkReady: () =>
      client.send(new DescribeTableCommand({ TableName })).then(
        ({ Table }) => {
          if (Table?.TableStatus !== 'ACTIVE')
            throw new BackendError(`lock table ${TableName} is ${Table?.TableStatus ?? 'in no state'}`, true);
        },
        (error: unknown) => {
          named(error);
          throw new BackendError(`dynamodb: ${(error as Error)?.message ?? String(error)}`, true, {
            cause: error,
          });
        },
      ),
  };
}
