/**
 * What the MySQL engine's store and lock share (docs/backends.md, "MySQL and MariaDB"): one pool
 * (from `MYSQL_URL`) with its connection settings, the checked table names, and the idempotent
 * bootstrap of the schema. mysql2 is an optional peer: loaded here, only when the engine is used.
 */
import type { Pool, PoolOptions } from 'mysql2/promise';
import { ValidationError } from '../../contract/errors.js';
import { requirePeer } from '../../util/peer.js';
import { checkSqlName, DEFAULT_TABLE_PREFIX, schemaStatements, type Tables, tablesOf } from './schema.js';
import { CONNECTION_SETUP, type RoundTripObserver, rowsOf, Sql } from './sql.js';

/** mysql2's promise API. */
export type Mysql2 = typeof import('mysql2/promise');

/** Options of `connectMysql`. */
export interface MysqlConnectionOptions {
  /** `mysql://user:password@host:port/database` (MYSQL_URL); the database name is checked. */
  readonly url: string;
  /** Prefix of the engine's tables; default `agent_state_`. */
  readonly tablePrefix?: string;
  /** Most connections of the pool; default 10. */
  readonly connectionLimit?: number;
  /** Sees every round trip (tests). */
  readonly observer?: RoundTripObserver;
  /**
   * mysql2's promise API, when the caller bundles it (the function entries); else it is loaded as an
   * optional peer on first use.
   */
  readonly mysql2?: Mysql2;
}

/** An open pool and the tables it works on. */
export interface MysqlConnection {
  readonly sql: Sql;
  readonly tables: Tables;
  /** Creates the tables that are missing (idempotent); answers the names of those it created. */
  bootstrap(): Promise<string[]>;
  close(): Promise<void>;
}

/** The database a URL names, checked. */
export function databaseOf(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ValidationError('MYSQL_URL', 'must be a mysql:// URL');
  }
  if (parsed.protocol !== 'mysql:') throw new ValidationError('MYSQL_URL', 'must be a mysql:// URL');
  return checkSqlName('MYSQL_URL database', decodeURIComponent(parsed.pathname.replace(/^\//, '')));
}

/**
 * Opens a pool (no connection is made until the first statement). mysql2 is loaded synchronously
 * on first use, as the Redis engine loads ioredis: a `MissingPeerError` names it when it is not installed.
 */
export function connectMysql(options: MysqlConnectionOptions): MysqlConnection {
  const database = databaseOf(options.url);
  const tables = tablesOf(options.tablePrefix ?? DEFAULT_TABLE_PREFIX);
  const loaded =
    (options.mysql2 as (Mysql2 & { default?: Mysql2 }) | undefined) ??
    requirePeer<Mysql2 & { default?: Mysql2 }>('agent-state-store (STORE_BACKEND=mysql)', 'mysql2/promise');
  const mysql = loaded.default ?? loaded;
  const config: PoolOptions = {
    uri: options.url,
    connectionLimit: options.connectionLimit ?? 10,
    // Several statements per round trip; every parameter is escaped by the driver.
    multipleStatements: true,
    supportBigNumbers: true,
    bigNumberStrings: false,
    timezone: 'Z',
    charset: 'utf8mb4',
    dateStrings: false,
    // The JSON columns as the exact text stored (MariaDB marks a JSON_VALID-checked LONGTEXT as JSON).
    jsonStrings: true,
  };
  const pool: Pool = mysql.createPool(config);
  // Once per connection, before its first statement: UTC, the sql_mode, READ COMMITTED.
  pool.pool.on('connection', (conn) => {
    conn.query(CONNECTION_SETUP);
  });
  const sql = new Sql(pool, options.observer);
  return {
    sql,
    tables,
    bootstrap: async () => {
      const names = Object.values(tables).map((quoted) => quoted.slice(1, -1));
      const [found] = await sql.run([
        {
          sql: 'SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN (?)',
          params: [database, names],
        },
      ]);
      const there = new Set(rowsOf(found).map((r) => String(r.name)));
      await sql.run(schemaStatements(tables).map((s) => ({ sql: s })));
      return names.filter((name) => !there.has(name));
    },
    close: () => pool.end(),
  };
}
