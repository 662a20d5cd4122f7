/**
 * The statement pattern of the reference's MySQL store (AgentScope Java `MysqlAgentStateStore`,
 * ../shared/REFERENCE.md and the seeds), re-implemented minimally on mysql2 so that it runs on the
 * same server as the engine and is counted the same way. One table, one row per value and per list
 * item, and a `<key>:_hash` row:
 * `agentscope_sessions(session_id, state_key, item_index, state_data, created_at, updated_at,
 * PRIMARY KEY(session_id, state_key, item_index))`. Every statement is its own round trip, as a
 * JDBC `PreparedStatement` sends it (a batch without `rewriteBatchedStatements` too):
 * - a value's save is a transaction with one upsert (`INSERT … ON DUPLICATE KEY UPDATE`);
 * - a list save is a transaction: `SELECT` the hash row, `SELECT MAX(item_index)`, then `DELETE` +
 *   one `INSERT` per item (a rewrite) or one `INSERT` per new item, then the hash row's upsert;
 * - a read of a list is the whole list (`ORDER BY item_index`): the reference has no `last: N`;
 * - a conditional save (the newer `saveIfVersion`), modelled as `SELECT … FOR UPDATE`, compare,
 *   upsert, in one transaction;
 * - the lock is `GET_LOCK` on a pooled connection held for the whole lease, `RELEASE_LOCK` on it.
 * Transactions are `START TRANSACTION … COMMIT` (JDBC's `setAutoCommit` would add two round trips:
 * the pattern is counted generously). It exists only to be measured against.
 */
import type { Pool, PoolConnection, RowDataPacket } from 'mysql2/promise';
import { sampledHash } from './reference-store.js';

const TABLE = 'agentscope_sessions';

/** The statements it sent (each one round trip), for counting. */
export interface ReferenceLog {
  statements: string[];
}

export class ReferenceMysqlStore {
  private readonly held = new Map<string, PoolConnection>();

  constructor(
    private readonly pool: Pool,
    readonly log: ReferenceLog = { statements: [] },
  ) {}

  /** `CREATE TABLE IF NOT EXISTS`, as the reference's `createIfNotExist`. */
  async bootstrap(): Promise<void> {
    await this.pool.query(
      `CREATE TABLE IF NOT EXISTS ${TABLE} (session_id VARCHAR(255) NOT NULL, state_key VARCHAR(255) NOT NULL, ` +
        'item_index INT NOT NULL DEFAULT 0, state_data LONGTEXT NOT NULL, created_at DATETIME DEFAULT CURRENT_TIMESTAMP, ' +
        'updated_at DATETIME DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, ' +
        'PRIMARY KEY (session_id, state_key, item_index)) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci',
    );
  }

  private async q(
    conn: Pool | PoolConnection,
    sql: string,
    params: unknown[] = [],
  ): Promise<RowDataPacket[]> {
    this.log.statements.push(sql);
    const [rows] = await conn.query(sql, params);
    return rows as RowDataPacket[];
  }

  private async tx<T>(body: (conn: PoolConnection) => Promise<T>): Promise<T> {
    const conn = await this.pool.getConnection();
    try {
      await this.q(conn, 'START TRANSACTION');
      const result = await body(conn);
      await this.q(conn, 'COMMIT');
      return result;
    } catch (error) {
      await conn.query('ROLLBACK');
      throw error;
    } finally {
      conn.release();
    }
  }

  private upsert(conn: PoolConnection, sessionId: string, key: string, data: string) {
    return this.q(
      conn,
      `INSERT INTO ${TABLE} (session_id, state_key, item_index, state_data) VALUES (?, ?, 0, ?) ON DUPLICATE KEY UPDATE state_data = VALUES(state_data)`,
      [sessionId, key, data],
    );
  }

  async save(sessionId: string, key: string, value: unknown): Promise<void> {
    await this.tx((conn) => this.upsert(conn, sessionId, key, JSON.stringify(value)));
  }

  async get(sessionId: string, key: string): Promise<unknown> {
    const rows = await this.q(
      this.pool,
      `SELECT state_data FROM ${TABLE} WHERE session_id = ? AND state_key = ? AND item_index = 0`,
      [sessionId, key],
    );
    return rows[0] ? JSON.parse(String(rows[0].state_data)) : undefined;
  }

  /** The modelled `saveIfVersion`: the stored JSON is the version; false (nothing written) on a mismatch. */
  async saveIf(sessionId: string, key: string, expected: unknown, value: unknown): Promise<boolean> {
    return this.tx(async (conn) => {
      const rows = await this.q(
        conn,
        `SELECT state_data FROM ${TABLE} WHERE session_id = ? AND state_key = ? AND item_index = 0 FOR UPDATE`,
        [sessionId, key],
      );
      if (String(rows[0]?.state_data) !== JSON.stringify(expected)) return false;
      await this.upsert(conn, sessionId, key, JSON.stringify(value));
      return true;
    });
  }

  async saveList(sessionId: string, key: string, items: readonly unknown[]): Promise<void> {
    if (items.length === 0) return;
    const hashKey = `${key}:_hash`;
    await this.tx(async (conn) => {
      const stored = await this.q(
        conn,
        `SELECT state_data FROM ${TABLE} WHERE session_id = ? AND state_key = ? AND item_index = 0`,
        [sessionId, hashKey],
      );
      const max = await this.q(
        conn,
        `SELECT MAX(item_index) AS max_index FROM ${TABLE} WHERE session_id = ? AND state_key = ?`,
        [sessionId, key],
      );
      const existing = max[0]?.max_index === null || max[0] === undefined ? 0 : Number(max[0].max_index) + 1;
      const storedHash = stored[0] ? String(stored[0].state_data) : null;
      const rewrite =
        items.length < existing ||
        (storedHash === null && existing > 0) ||
        (existing > 0 && sampledHash(items.slice(0, existing)) !== storedHash);
      const from = rewrite ? 0 : existing;
      if (rewrite)
        await this.q(conn, `DELETE FROM ${TABLE} WHERE session_id = ? AND state_key = ?`, [sessionId, key]);
      else if (items.length === existing) return;
      for (let i = from; i < items.length; i++)
        await this.q(
          conn,
          `INSERT INTO ${TABLE} (session_id, state_key, item_index, state_data) VALUES (?, ?, ?, ?)`,
          [sessionId, key, i, JSON.stringify(items[i])],
        );
      await this.upsert(conn, sessionId, hashKey, sampledHash(items));
    });
  }

  async getList(sessionId: string, key: string): Promise<unknown[]> {
    const rows = await this.q(
      this.pool,
      `SELECT state_data FROM ${TABLE} WHERE session_id = ? AND state_key = ? ORDER BY item_index`,
      [sessionId, key],
    );
    return rows.map((r) => JSON.parse(String(r.state_data)) as unknown);
  }

  /** `GET_LOCK` on a connection taken from the pool and held until `unlock`. */
  async lock(sessionId: string, waitSeconds = 10): Promise<boolean> {
    const conn = await this.pool.getConnection();
    const rows = await this.q(conn, 'SELECT GET_LOCK(?, ?) AS got', [`agentscope:${sessionId}`, waitSeconds]);
    if (Number(rows[0]?.got) !== 1) {
      conn.release();
      return false;
    }
    this.held.set(sessionId, conn);
    return true;
  }

  async unlock(sessionId: string): Promise<void> {
    const conn = this.held.get(sessionId);
    if (!conn) return;
    this.held.delete(sessionId);
    await this.q(conn, 'SELECT RELEASE_LOCK(?)', [`agentscope:${sessionId}`]);
    conn.release();
  }
}
