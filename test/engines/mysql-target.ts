/**
 * Where the MySQL engine's tests run: a MariaDB the test starts (test/servers/mariadb.ts), and a
 * real MySQL too when `MYSQL_URL` points at one. Each target gets tables of its own (a random
 * table prefix), so runs never see each other's rows.
 */
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { connectMysql, type MysqlConnection } from '../../lib/engines/mysql/connection.js';
import type { RoundTripObserver } from '../../lib/engines/mysql/sql.js';
import { hasMariaDb, startMariaDb } from '../servers/mariadb.js';

export interface MysqlServer {
  readonly url: string;
  stop(): Promise<void>;
  /** SIGKILL, then a restart on the same data (only a server the test started). */
  readonly crashAndRestart?: () => Promise<void>;
}

export interface MysqlTarget {
  readonly name: string;
  /** Opens the server (started for MariaDB): its URL, how to stop it, and (MariaDB) to crash it. */
  open(): Promise<MysqlServer>;
}

/** The targets this machine has: MariaDB (required unless MARIADB=off), MySQL when MYSQL_URL is set. */
export function mysqlTargets(): MysqlTarget[] {
  const out: MysqlTarget[] = [];
  if (hasMariaDb())
    out.push({
      name: 'MariaDB (started by the test)',
      open: async () => {
        const db = await startMariaDb();
        return { url: db.url, stop: () => db.stop(), crashAndRestart: () => db.crashAndRestart() };
      },
    });
  // Required, as the rgw tier's Ceph is (.ci/run installs it): MARIADB=off skips it where it is missing.
  if (out.length === 0 && process.env.MARIADB !== 'off')
    throw new Error(
      'the mysql tier needs mariadb-server and mariadb-client (apt-get install; or MARIADB=off)',
    );
  const external = process.env.MYSQL_URL;
  if (external) out.push({ name: 'MYSQL_URL', open: async () => ({ url: external, stop: async () => {} }) });
  return out;
}

/** The round trips a connection made, and a hook that runs before each is sent. */
export interface Trips {
  readonly log: Array<{ statements: readonly string[]; transaction: boolean }>;
  before?: RoundTripObserver;
}

/** A connection on fresh tables of a target (bootstrapped), its round trips logged. */
export async function openTables(
  url: string,
): Promise<{ conn: MysqlConnection; trips: Trips; admin: mysql.Connection }> {
  const trips: Trips = { log: [] };
  const conn = await connectMysql({
    url,
    tablePrefix: `t${randomBytes(4).toString('hex')}_`,
    observer: async (trip) => {
      trips.log.push({ statements: trip.statements, transaction: trip.transaction });
      await trips.before?.(trip);
    },
  });
  await conn.bootstrap();
  return { conn, trips, admin: await adminConnection(url) };
}

/** A connection of the test's own, beside the engine's pool (inspection, KILL). */
export const adminConnection = (url: string): Promise<mysql.Connection> =>
  mysql.createConnection({ uri: url, multipleStatements: true, jsonStrings: true });

/**
 * The writes a server has made: its requests to insert, update and delete a row of a table,
 * server-wide (`SHOW GLOBAL STATUS` Handler_write, Handler_update, Handler_delete; internal
 * temporary tables are counted apart, in Handler_tmp_*). An UPDATE that matches no row, or sets a
 * row to what it already holds, makes no request; reads and locking reads make none either. An
 * INSERT refused by a duplicate key does count (the request was made). MariaDB 10.11 has no
 * Innodb_rows_* counters.
 */
export async function rowChanges(admin: mysql.Connection): Promise<number> {
  const [rows] = await admin.query<mysql.RowDataPacket[]>(
    "SHOW GLOBAL STATUS WHERE Variable_name IN ('Handler_write', 'Handler_update', 'Handler_delete')",
  );
  if (rows.length !== 3) throw new Error(`expected 3 handler counters, got ${rows.length}`);
  return rows.reduce((sum, row) => sum + Number(row.Value), 0);
}
