/** The MySQL / MariaDB engine (docs/backends.md, "MySQL and MariaDB"): the store, its lease lock, the schema. */
export { connectMysql, type MysqlConnection, type MysqlConnectionOptions } from './connection.js';
export { createMysqlLock, type MysqlLockOptions } from './lock.js';
export { checkSqlName, DEFAULT_TABLE_PREFIX, SQL_NAME, schemaStatements, tablesOf } from './schema.js';
export type { RoundTripObserver } from './sql.js';
export {
  createMysqlStateStore,
  MYSQL_CAPABILITIES,
  type MysqlStateStore,
  type MysqlStateStoreOptions,
} from './store.js';
