/**
 * The statements the MySQL engine's operations share (docs/backends.md, "MySQL and MariaDB"): the
 * locking reads of a session, a list, a value and a lease at the start of a transaction, and the
 * writes of a session's row (created, kept alive, its token raised), of its leftovers' purge, and
 * of its emptied state.
 */
import type { RowDataPacket } from 'mysql2/promise';
import { EMPTY_HASH } from '../../contract/hash.js';
import type { LockGrant } from '../../contract/lock.js';
import type { Tables } from './schema.js';
import type { Statement } from './sql.js';

/** The ids of a session as the rows hold them. */
export interface Ids {
  readonly user: Buffer;
  readonly session: Buffer;
}

/** A session's row as a write reads it. */
export interface SessionRow {
  readonly state: number;
  readonly token: number | null;
  readonly expiresAt: Date | null;
}

/** The number a BIGINT column answered (mysql2 gives a number below 2^53), or null. */
export const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export function sessionRow(rows: RowDataPacket[]): SessionRow | undefined {
  const r = rows[0];
  if (!r) return undefined;
  return { state: Number(r.state), token: num(r.token), expiresAt: r.expires_at ?? null };
}

/** A session that holds (or may hold) state now: not deleted, not expired. */
export const isLive = (row: SessionRow | undefined, now: number): row is SessionRow =>
  row !== undefined && row.state !== 2 && (row.expiresAt === null || row.expiresAt.getTime() > now);

export const selectSession = (t: Tables, ids: Ids): Statement => ({
  sql: `SELECT state, token, expires_at FROM ${t.sessions} WHERE user_id = ? AND session_id = ? FOR UPDATE`,
  params: [ids.user, ids.session],
});

/** The lease row, read with a shared lock: a grant cannot change until the transaction ends. */
export const selectLease = (t: Tables, ids: Ids): Statement => ({
  sql: `SELECT owner, token, expires_at, commit_id, commit_digest FROM ${t.leases} WHERE user_id = ? AND session_id = ? LOCK IN SHARE MODE`,
  params: [ids.user, ids.session],
});

/** The lock's grant as a lease row says it (`leaseHolds` without skew: the row is the authority). */
export function grantOfRow(rows: RowDataPacket[], now: number): LockGrant | undefined {
  const r = rows[0];
  if (!r) return undefined;
  const live = r.owner !== null && (r.expires_at as Date).getTime() >= now;
  return {
    token: Number(r.token),
    live,
    ...(r.commit_id ? { commit: { commitId: String(r.commit_id), digest: String(r.commit_digest) } } : {}),
  };
}

/** A list's row as a write reads it. */
export interface ListRow {
  readonly count: number;
  readonly hash: string;
  readonly token: number | null;
}

export const selectList = (t: Tables, ids: Ids, key: Buffer): Statement => ({
  sql: `SELECT item_count, hash, token FROM ${t.lists} WHERE user_id = ? AND session_id = ? AND list_key = ? FOR UPDATE`,
  params: [ids.user, ids.session, key],
});

export function listRow(rows: RowDataPacket[]): ListRow | undefined {
  const r = rows[0];
  return r ? { count: Number(r.item_count), hash: String(r.hash), token: num(r.token) } : undefined;
}

/** The chain hash after item `position` (h0 before item 0). */
export const selectHashAt = (t: Tables, ids: Ids, key: Buffer, position: number): Statement => ({
  sql: `SELECT hash_after FROM ${t.items} WHERE user_id = ? AND session_id = ? AND list_key = ? AND position = ?`,
  params: [ids.user, ids.session, key, position],
});

export const hashAt = (rows: RowDataPacket[], position: number): string | undefined =>
  position < 0 ? EMPTY_HASH : rows[0] ? String(rows[0].hash_after) : undefined;

/** A value's row as a write reads it. */
export interface ValueRow {
  readonly version: string;
  readonly revision: number;
  readonly token: number | null;
}

export const selectValues = (t: Tables, ids: Ids, keys: readonly Buffer[]): Statement => ({
  sql: `SELECT value_key, version, revision, token FROM ${t.values} WHERE user_id = ? AND session_id = ? AND value_key IN (${keys.map(() => '?').join(', ')}) FOR UPDATE`,
  params: [ids.user, ids.session, ...keys],
});

export function valueRows(rows: RowDataPacket[]): Map<string, ValueRow> {
  const out = new Map<string, ValueRow>();
  for (const r of rows)
    out.set((r.value_key as Buffer).toString('utf8'), {
      version: String(r.version),
      revision: Number(r.revision),
      token: num(r.token),
    });
  return out;
}

/** Every table's rows of a session but its own row and its lease: what a delete or a new incarnation removes. */
export function purge(t: Tables, ids: Ids): Statement[] {
  const where = 'WHERE user_id = ? AND session_id = ?';
  const params = [ids.user, ids.session];
  return [
    {
      sql: `DELETE ai FROM ${t.archiveItems} ai JOIN ${t.archives} a ON a.archive_id = ai.archive_id WHERE a.user_id = ? AND a.session_id = ?`,
      params,
    },
    ...[t.archives, t.items, t.lists, t.listWrites, t.values, t.commits].map((table) => ({
      sql: `DELETE FROM ${table} ${where}`,
      params,
    })),
  ];
}

/** How a write changes the session's row. */
export interface Touch {
  readonly now: number;
  /** When it expires (null: never, the memory session). */
  readonly expiresAt: number | null;
  /** The write's fencing token (raises the row's). */
  readonly token: number | undefined;
}

/**
 * The session's row after a write: created, made live, kept alive, its token raised. A row read
 * but expired or deleted is locked by the read: what its incarnation left is purged first. No row
 * read: a plain INSERT, so that a racing creator (whose row the read could not lock) makes this
 * transaction fail with a duplicate key and start again, never purge what the other wrote.
 */
export function touch(t: Tables, ids: Ids, row: SessionRow | undefined, how: Touch): Statement[] {
  const now = new Date(how.now);
  const expires = how.expiresAt === null ? null : new Date(how.expiresAt);
  const token = how.token ?? null;
  const columns = `INSERT INTO ${t.sessions} (user_id, session_id, state, token, created_at, last_activity, expires_at)
        VALUES (?, ?, 1, ?, ?, ?, ?)`;
  if (!row) return [{ sql: columns, params: [ids.user, ids.session, token, now, now, expires] }];
  const fresh = !isLive(row, how.now);
  return [
    ...(fresh ? purge(t, ids) : []),
    {
      sql: `${columns}
        ON DUPLICATE KEY UPDATE state = 1, token = IF(? IS NULL, token, GREATEST(COALESCE(token, -1), ?)),
          created_at = IF(?, ?, created_at), last_activity = ?, expires_at = ?`,
      params: [ids.user, ids.session, token, now, now, expires, token, token, fresh, now, now, expires],
    },
  ];
}

/** After a delete: the session is marked emptied when it holds no value and no list. */
export const markIfEmpty = (t: Tables, ids: Ids): Statement => ({
  sql: `UPDATE ${t.sessions} SET state = IF(
      EXISTS (SELECT 1 FROM ${t.values} WHERE user_id = ? AND session_id = ?)
      OR EXISTS (SELECT 1 FROM ${t.lists} WHERE user_id = ? AND session_id = ?), 1, 0)
    WHERE user_id = ? AND session_id = ? AND state <> 2`,
  params: [ids.user, ids.session, ids.user, ids.session, ids.user, ids.session],
});

/** Rows of items from `from` on: a multi-row INSERT per 500 items. */
export function insertItems(
  t: Tables,
  ids: Ids,
  key: Buffer,
  from: number,
  bodies: readonly string[],
  hashes: readonly string[],
): Statement[] {
  const out: Statement[] = [];
  for (let i = 0; i < bodies.length; i += 500) {
    const chunk = bodies.slice(i, i + 500);
    out.push({
      sql: `INSERT INTO ${t.items} (user_id, session_id, list_key, position, body, hash_after) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}`,
      params: chunk.flatMap((body, j) => [ids.user, ids.session, key, from + i + j, body, hashes[i + j]]),
    });
  }
  return out;
}

/** The list's row after a write. */
export function upsertList(
  t: Tables,
  ids: Ids,
  key: Buffer,
  list: { count: number; hash: string; token: number | null; writeId: string; now: number },
): Statement {
  const now = new Date(list.now);
  return {
    sql: `INSERT INTO ${t.lists} (user_id, session_id, list_key, item_count, hash, token, write_id, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON DUPLICATE KEY UPDATE item_count = ?, hash = ?, token = ?, write_id = ?, updated_at = ?`,
    params: [
      ids.user,
      ids.session,
      key,
      list.count,
      list.hash,
      list.token,
      list.writeId,
      now,
      list.count,
      list.hash,
      list.token,
      list.writeId,
      now,
    ],
  };
}

/**
 * Archives a list's items from `from` on as one archive (`count` and `hash`: the archived items'
 * own), copied by the server (no item passes through the engine).
 */
export function archive(
  t: Tables,
  ids: Ids,
  key: Buffer,
  a: { from: number; count: number; hash: string; now: number },
): Statement[] {
  return [
    {
      sql: `INSERT INTO ${t.archives} (user_id, session_id, list_key, item_count, hash, first_position, archived_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      params: [ids.user, ids.session, key, a.count, a.hash, a.from, new Date(a.now)],
    },
    {
      sql: `INSERT INTO ${t.archiveItems} (archive_id, position, body)
        SELECT LAST_INSERT_ID(), position - ?, body FROM ${t.items}
        WHERE user_id = ? AND session_id = ? AND list_key = ? AND position >= ?`,
      params: [a.from, ids.user, ids.session, key, a.from],
    },
  ];
}

/** Removes a list's items from `from` on. */
export const deleteItems = (t: Tables, ids: Ids, key: Buffer, from: number): Statement => ({
  sql: `DELETE FROM ${t.items} WHERE user_id = ? AND session_id = ? AND list_key = ? AND position >= ?`,
  params: [ids.user, ids.session, key, from],
});

/** A named list write's record (what a replay answers). */
export const selectWrite = (t: Tables, ids: Ids, key: Buffer, writeId: string): Statement => ({
  sql: `SELECT digest, action, item_count, hash FROM ${t.listWrites} WHERE user_id = ? AND session_id = ? AND list_key = ? AND write_id = ?`,
  params: [ids.user, ids.session, key, writeId],
});

export const insertWrite = (
  t: Tables,
  ids: Ids,
  key: Buffer,
  w: { writeId: string; digest: string; action: string; count: number; hash: string },
): Statement => ({
  sql: `INSERT INTO ${t.listWrites} (user_id, session_id, list_key, write_id, digest, action, item_count, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  params: [ids.user, ids.session, key, w.writeId, w.digest, w.action, w.count, w.hash],
});
