/**
 * The MySQL / MariaDB engine (docs/backends.md, "MySQL and MariaDB"): the store, its lease lock, the
 * schema; and the engine as a deployment configures it — one pool, the store over it and, with the
 * lock on the same engine, the lock whose lease rows the store's transactions read (fencing inside
 * each transaction, no extra round trip).
 */

import type { BlobStore } from '../../contract/blobs.js';
import type { SessionLock } from '../../contract/lock.js';
import type { MetricsSink } from '../../contract/types.js';
import { connectMysql, type Mysql2, type MysqlConnection } from './connection.js';
import { createMysqlLock } from './lock.js';
import { createMysqlStateStore, type MysqlStateStore } from './store.js';

export {
  connectMysql,
  type Mysql2,
  type MysqlConnection,
  type MysqlConnectionOptions,
} from './connection.js';
export { createMysqlLock, type MysqlLockOptions } from './lock.js';
export { checkSqlName, DEFAULT_TABLE_PREFIX, SQL_NAME, schemaStatements, tablesOf } from './schema.js';
export type { RoundTripObserver } from './sql.js';
export {
  createMysqlStateStore,
  MYSQL_CAPABILITIES,
  type MysqlStateStore,
  type MysqlStateStoreOptions,
} from './store.js';

/** What a deployment of MySQL needs. */
export interface MysqlEngineOptions {
  /** MYSQL_URL. */
  readonly url: string;
  /** mysql2's promise API, when the caller bundles it; else loaded as an optional peer. */
  readonly mysql2?: Mysql2;
  readonly retentionDays: number;
  readonly maxValueBytes: number;
  readonly metrics: MetricsSink;
  /** Where the store keeps workspaces and snapshots (BLOB_BACKEND; lib/contract/blobs.ts). */
  readonly blobs?: BlobStore;
  /** Make the store (STORE_BACKEND=mysql). */
  readonly store: boolean;
  /** Make the lock (LOCK_BACKEND=mysql). */
  readonly lock: boolean;
}

/** The pool, and the store and lock asked for, on it (the tables: `npm run bootstrap`). */
export function mysqlEngine(options: MysqlEngineOptions): {
  connection: MysqlConnection;
  store?: MysqlStateStore;
  lock?: SessionLock;
} {
  const connection = connectMysql({
    url: options.url,
    ...(options.mysql2 ? { mysql2: options.mysql2 } : {}),
  });
  const lock = options.lock ? createMysqlLock({ connection }) : undefined;
  const store = options.store
    ? createMysqlStateStore({
        connection,
        retentionDays: options.retentionDays,
        maxValueBytes: options.maxValueBytes,
        metrics: options.metrics,
        ...(lock ? { authority: lock } : {}),
        ...(options.blobs ? { blobs: options.blobs } : {}),
      })
    : undefined;
  return { connection, ...(store ? { store } : {}), ...(lock ? { lock } : {}) };
}
