/**
 * The engine's connection to MySQL / MariaDB (docs/backends.md, "MySQL and MariaDB"): a mysql2
 * pool whose connections speak UTC, a fixed `sql_mode` and READ COMMITTED; statements sent
 * several to a round trip (client-side escaping of every parameter, never string building); a
 * transaction that starts in its first round trip and commits in its last; the server's errors as
 * the store's typed ones.
 */
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import {
  BackendError,
  ContendedError,
  MisconfiguredBackendError,
  StoreError,
} from '../../contract/errors.js';
import { BACKOFF, backoff } from '../../util/backoff.js';

/** One statement and its parameters (`?` placeholders). */
export interface Statement {
  readonly sql: string;
  readonly params?: readonly unknown[];
}

/** What one statement answered: rows for a SELECT, a header for a write. */
export type Result = RowDataPacket[] | ResultSetHeader;

/** Sees each round trip before it is sent (tests count them, or kill the connection). */
export type RoundTripObserver = (trip: {
  readonly statements: readonly string[];
  /** The server's id of the connection (`KILL <id>`). */
  readonly connectionId: number;
  /** Inside a transaction (its first round trip included). */
  readonly transaction: boolean;
}) => void | Promise<void>;

/** The session settings every connection gets once (not per operation). */
export const CONNECTION_SETUP =
  "SET time_zone = '+00:00', sql_mode = 'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'; " +
  'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED';

const DUPLICATE = 1062;
const RETRYABLE_CODES = new Set([1205, 1213]); // lock wait timeout, deadlock
/** Retried from the start: a deadlock, a lock wait timeout, a racing writer's duplicate key. */
const RETRIED = new Set([1205, 1213, DUPLICATE]);
const TABLE_CODES = new Set([1146, 1049]); // no such table, no such database
const DENIED_CODES = new Set([1044, 1045, 1142, 1143, 1227]);
const LOST = new Set([
  'PROTOCOL_CONNECTION_LOST',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
  'ER_QUERY_INTERRUPTED',
  'PROTOCOL_SEQUENCE_TIMEOUT',
]);

interface SqlError {
  readonly errno?: number;
  readonly code?: string;
  readonly fatal?: boolean;
  readonly sqlMessage?: string;
}

const sqlError = (error: unknown): SqlError => (typeof error === 'object' && error !== null ? error : {});

/**
 * The connection is gone (killed, the server restarted, an idle timeout): a pooled connection
 * found so by the first statement sent on it.
 */
function isLost(error: unknown): boolean {
  const e = sqlError(error);
  if (e.fatal === true || (e.code !== undefined && LOST.has(e.code))) return true;
  return error instanceof Error && /connection is in closed state/.test(error.message);
}

/** Refused by the driver before anything was sent (the socket was already closed): safe to send again. */
const unsent = (error: unknown): boolean =>
  error instanceof Error && /connection is in closed state/.test(error.message);

const READ_ONLY = /^\s*SELECT\b/i;

/** A duplicate key (a racing writer took the row or position first). */
export const isDuplicate = (error: unknown): boolean => sqlError(error).errno === DUPLICATE;

/** The store's error for a server's or driver's failure. */
export function mysqlError(error: unknown): unknown {
  const e = sqlError(error);
  if (error instanceof StoreError) return error;
  const message = e.sqlMessage ?? (error instanceof Error ? error.message : String(error));
  if (e.errno !== undefined && TABLE_CODES.has(e.errno))
    return new MisconfiguredBackendError('mysql', 'table', `mysql: ${message} (run npm run bootstrap)`, {
      cause: error,
    });
  if (e.errno !== undefined && DENIED_CODES.has(e.errno))
    return new MisconfiguredBackendError('mysql', 'credentials', `mysql: ${message}`, { cause: error });
  const lost = e.fatal === true || (e.code !== undefined && LOST.has(e.code));
  const retryable = lost || (e.errno !== undefined && RETRYABLE_CODES.has(e.errno));
  return new BackendError(`mysql: ${message}`, retryable, { cause: error });
}

function join(statements: readonly Statement[]): { sql: string; values: unknown[] } {
  return {
    sql: statements.map((s) => s.sql).join(';\n'),
    values: statements.flatMap((s) => [...(s.params ?? [])]),
  };
}

/** An open transaction on one connection: round trips, then `commit` (its last) or a rollback. */
export interface Tx {
  /** One round trip (the transaction's first starts it). */
  run(statements: readonly Statement[]): Promise<Result[]>;
  /** The last round trip: these statements and COMMIT. */
  commit(statements: readonly Statement[]): Promise<Result[]>;
}

/** The pool, with round trips counted and errors typed. */
export class Sql {
  constructor(
    readonly pool: Pool,
    private readonly observer?: RoundTripObserver,
  ) {}

  private async send(
    conn: PoolConnection,
    statements: readonly Statement[],
    transaction: boolean,
  ): Promise<Result[]> {
    await this.observer?.({
      statements: statements.map((s) => s.sql),
      connectionId: conn.threadId,
      transaction,
    });
    const [results] = await conn.query(join(statements));
    return statements.length === 1 ? [results as Result] : (results as Result[]);
  }

  /**
   * One round trip outside a transaction (each statement on its own; a single SELECT is
   * consistent). Reads found on a lost pooled connection, and any statement the driver refused to
   * send on a closed one, are sent again once on a new connection.
   */
  async run(statements: readonly Statement[]): Promise<Result[]> {
    const reads = statements.every((s) => READ_ONLY.test(s.sql));
    for (let attempt = 0; ; attempt++) {
      let conn: PoolConnection | undefined;
      try {
        conn = await this.pool.getConnection();
        const results = await this.send(conn, statements, false);
        conn.release();
        return results;
      } catch (error) {
        conn?.destroy();
        if (attempt === 0 && conn && (unsent(error) || (reads && isLost(error)))) continue;
        throw mysqlError(error);
      }
    }
  }

  /**
   * Runs `body` in one transaction (READ COMMITTED), retried from the start when the server
   * chose it as a deadlock victim or its lock wait timed out; a failure rolls it back. A
   * connection lost before COMMIT was answered leaves the outcome to the server (each caller's
   * idempotency makes the retry safe); one lost on the first round trip, before any write was
   * sent (a pooled connection the server closed), is replaced once at once.
   */
  async transaction<T>(body: (tx: Tx) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let conn: PoolConnection | undefined;
      let open = false;
      let done = false;
      let trips = 0;
      let wrote = false;
      try {
        conn = await this.pool.getConnection();
        const c = conn;
        const tx: Tx = {
          run: async (statements) => {
            const first = !open;
            open = true;
            trips++;
            if (!statements.every((x) => READ_ONLY.test(x.sql))) wrote = true;
            const results = await this.send(
              c,
              first ? [{ sql: 'START TRANSACTION' }, ...statements] : statements,
              true,
            );
            return first ? results.slice(1) : results;
          },
          commit: async (statements) => {
            const first = !open;
            open = true;
            trips++;
            wrote = true;
            const all = [...(first ? [{ sql: 'START TRANSACTION' }] : []), ...statements, { sql: 'COMMIT' }];
            const results = await this.send(c, all, true);
            done = true;
            return results.slice(first ? 1 : 0, -1);
          },
        };
        const result = await body(tx);
        // Decided on the reads alone (a replay, nothing to change): the transaction is ended.
        if (open && !done) await this.send(c, [{ sql: 'ROLLBACK' }], true);
        conn.release();
        return result;
      } catch (error) {
        if (conn) {
          const fatal = sqlError(error).fatal === true || !open;
          if (open && !done && !fatal) {
            try {
              await conn.query('ROLLBACK');
              conn.release();
            } catch {
              conn.destroy();
            }
          } else if (fatal && open) conn.destroy();
          else conn.release();
        }
        if (attempt === 0 && trips === 1 && !wrote && isLost(error)) continue;
        const e = sqlError(error);
        if (e.errno !== undefined && RETRIED.has(e.errno)) {
          if (attempt >= 4)
            throw new ContendedError('the rows are too contended; nothing was written; retry');
          await backoff(BACKOFF.storeRace, attempt);
          continue;
        }
        throw mysqlError(error);
      }
    }
  }
}

/** The rows of a SELECT result. */
export const rowsOf = (result: Result | undefined): RowDataPacket[] =>
  Array.isArray(result) ? (result as RowDataPacket[]) : [];

/** The header of a write result. */
export const headerOf = (result: Result | undefined): ResultSetHeader => result as ResultSetHeader;
