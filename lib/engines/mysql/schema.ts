/**
 * The MySQL / MariaDB engine's schema (docs/backends.md, "MySQL and MariaDB"): tables a person can
 * query with SQL, created idempotently by `bootstrapMysql`.
 *
 * - Ids (user, session, key) are `VARBINARY` of their UTF-8, so `ORDER BY` is the UTF-8 byte order
 *   the API pages in; the anonymous user is `''` (no named user can be blank).
 * - JSON is kept as the exact text the store was sent, in `LONGTEXT … utf8mb4_bin` with
 *   `CHECK (JSON_VALID(…))`: it reads back byte for byte (MySQL 8's `JSON` type would reorder keys).
 * - One row per value, per list (its count, chain hash, highest token and last write id), per list
 *   item (its position and the chain hash after it), per session (its highest token and expiry),
 *   per archive and archived item, per commit (its digest and answer) and per lease.
 * - Only SQL that MySQL 8.0.16+ runs too (CHECK constraints are enforced from 8.0.16; MariaDB 10.2+).
 */
import { ValidationError } from '../../contract/errors.js';

/** A database or table name this engine accepts (and quotes with backticks all the same). */
export const SQL_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** Checks a database or table name (`[A-Za-z_][A-Za-z0-9_]{0,63}`). */
export function checkSqlName(field: string, name: unknown): string {
  if (typeof name !== 'string' || !SQL_NAME.test(name))
    throw new ValidationError(field, 'must be a letter or _ then at most 63 letters, digits or _');
  return name;
}

/** The default prefix of the engine's tables. */
export const DEFAULT_TABLE_PREFIX = 'agent_state_';

/** The engine's tables, by role, each a checked and quoted name. */
export interface Tables {
  readonly sessions: string;
  readonly values: string;
  readonly lists: string;
  readonly items: string;
  readonly listWrites: string;
  readonly archives: string;
  readonly archiveItems: string;
  readonly commits: string;
  readonly leases: string;
}

const ROLES = {
  sessions: 'sessions',
  values: 'values',
  lists: 'lists',
  items: 'list_items',
  listWrites: 'list_writes',
  archives: 'archives',
  archiveItems: 'archive_items',
  commits: 'commits',
  leases: 'leases',
} as const satisfies Record<keyof Tables, string>;

/** The tables under `prefix` (each whole name checked as `SQL_NAME`), quoted. */
export function tablesOf(prefix = DEFAULT_TABLE_PREFIX): Tables {
  if (prefix !== '') checkSqlName('tablePrefix', prefix);
  const out: Record<string, string> = {};
  for (const [role, suffix] of Object.entries(ROLES))
    out[role] = `\`${checkSqlName('tablePrefix', `${prefix}${suffix}`)}\``;
  return out as unknown as Tables;
}

// Column types shared by the tables.
const USER = 'VARBINARY(128) NOT NULL';
const SESSION = 'VARBINARY(180) NOT NULL';
const KEY = 'VARBINARY(128) NOT NULL';
const HASH = 'CHAR(71) CHARACTER SET ascii COLLATE ascii_bin NOT NULL';
const json = (column: string) =>
  `${column} LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL CHECK (JSON_VALID(${column}))`;
const TABLE = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin';

/** The `CREATE TABLE IF NOT EXISTS` statements, in order. */
export function schemaStatements(t: Tables): string[] {
  return [
    // A session: state 1 live, 0 emptied (holds nothing), 2 deleted with a token (a tombstone
    // that keeps the token). `expires_at` NULL: never (the memory session).
    `CREATE TABLE IF NOT EXISTS ${t.sessions} (
      user_id ${USER},
      session_id ${SESSION},
      state TINYINT NOT NULL,
      token BIGINT NULL,
      created_at DATETIME(3) NOT NULL,
      last_activity DATETIME(3) NOT NULL,
      expires_at DATETIME(3) NULL,
      PRIMARY KEY (user_id, session_id),
      KEY by_activity (user_id, last_activity),
      KEY by_expiry (expires_at)
    ) ${TABLE}`,
    // A single value: its version (the etag, opaque), its revision (1 on create, +1 per write),
    // the highest token its writes carried, the commit that wrote it last.
    `CREATE TABLE IF NOT EXISTS ${t.values} (
      user_id ${USER},
      session_id ${SESSION},
      value_key ${KEY},
      ${json('body')},
      version CHAR(24) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      revision BIGINT NOT NULL,
      token BIGINT NULL,
      commit_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
      updated_at DATETIME(3) NOT NULL,
      PRIMARY KEY (user_id, session_id, value_key)
    ) ${TABLE}`,
    // A list: its count and chain hash, the highest token, the last write's id.
    `CREATE TABLE IF NOT EXISTS ${t.lists} (
      user_id ${USER},
      session_id ${SESSION},
      list_key ${KEY},
      item_count BIGINT NOT NULL,
      hash ${HASH},
      token BIGINT NULL,
      write_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
      updated_at DATETIME(3) NOT NULL,
      PRIMARY KEY (user_id, session_id, list_key)
    ) ${TABLE}`,
    // One row per item: position 0 … count - 1, and the chain hash after it. The primary key
    // makes exactly one of racing appenders at one position win.
    `CREATE TABLE IF NOT EXISTS ${t.items} (
      user_id ${USER},
      session_id ${SESSION},
      list_key ${KEY},
      position BIGINT NOT NULL,
      ${json('body')},
      hash_after ${HASH},
      PRIMARY KEY (user_id, session_id, list_key, position)
    ) ${TABLE}`,
    // The named writes of a list (Idempotency-Key, a truncate's writeId): the digest of the
    // request and the answer a replay gets.
    `CREATE TABLE IF NOT EXISTS ${t.listWrites} (
      user_id ${USER},
      session_id ${SESSION},
      list_key ${KEY},
      write_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      digest CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      action VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      item_count BIGINT NOT NULL,
      hash ${HASH},
      PRIMARY KEY (user_id, session_id, list_key, write_id)
    ) ${TABLE}`,
    // An archived list (a rewrite, a delete, a truncate's removed items): `first_position` is the
    // list position of its first item; count and hash are the archived items' own.
    `CREATE TABLE IF NOT EXISTS ${t.archives} (
      archive_id BIGINT NOT NULL AUTO_INCREMENT,
      user_id ${USER},
      session_id ${SESSION},
      list_key ${KEY},
      item_count BIGINT NOT NULL,
      hash ${HASH},
      first_position BIGINT NOT NULL,
      archived_at DATETIME(3) NOT NULL,
      PRIMARY KEY (archive_id),
      KEY by_list (user_id, session_id, list_key, archive_id)
    ) ${TABLE}`,
    `CREATE TABLE IF NOT EXISTS ${t.archiveItems} (
      archive_id BIGINT NOT NULL,
      position BIGINT NOT NULL,
      ${json('body')},
      PRIMARY KEY (archive_id, position)
    ) ${TABLE}`,
    // A commit: the digest of its body and its answer (a replay gets the same answer).
    `CREATE TABLE IF NOT EXISTS ${t.commits} (
      user_id ${USER},
      session_id ${SESSION},
      commit_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      digest CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      ${json('answer')},
      committed_at DATETIME(3) NOT NULL,
      PRIMARY KEY (user_id, session_id, commit_id)
    ) ${TABLE}`,
    // A session's lease (LOCK_BACKEND=mysql): the row outlives every lease, so its token only grows.
    `CREATE TABLE IF NOT EXISTS ${t.leases} (
      user_id ${USER},
      session_id ${SESSION},
      owner VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL,
      token BIGINT NOT NULL,
      expires_at DATETIME(3) NOT NULL,
      lease_ms INT NOT NULL,
      commit_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
      commit_digest CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
      PRIMARY KEY (user_id, session_id)
    ) ${TABLE}`,
  ];
}
