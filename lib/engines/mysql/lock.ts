/**
 * The session lock on MySQL / MariaDB (LOCK_BACKEND=mysql; docs/backends.md, "MySQL and MariaDB"):
 * a lease row per (user, session), changed by one conditional statement each, never `GET_LOCK`
 * (a lease must outlive a connection). Tokens come from the row's counter: `GREATEST(token + 1,
 * now in ms)`, the rule of every lock (lib/contract/lock.ts), and the row outlives every lease,
 * so a token only grows. `acquire` learns its token from the same statement
 * (`LAST_INSERT_ID(expr)`, answered in the OK packet); a held lock costs one SELECT more, to name
 * its holder.
 *
 * It is the store's authority over tokens (docs/DESIGN.md, "Fencing"): the MySQL store given this
 * lock reads the lease row inside each write's transaction, with a shared lock on it, so a grant
 * cannot change between a write's check and its COMMIT.
 */
import { randomUUID } from 'node:crypto';
import { BackendError, LockConflictError, LockLostError } from '../../contract/errors.js';
import { checkId, namedUser } from '../../contract/ids.js';
import {
  type AcquireOptions,
  checkLeaseMs,
  checkOwner,
  checkToken,
  checkWaitMs,
  type Lease,
  type LockKey,
  type SessionLock,
  type TokenAuthority,
  waitFor,
} from '../../contract/lock.js';
import type { MysqlConnection } from './connection.js';
import { grantOfRow } from './rows.js';
import { headerOf, rowsOf } from './sql.js';

const OWN = Symbol('mysql leases');

/** Whether `authority` is the lease lock of this connection (read inside the store's transactions). */
export function isOwnLeases(authority: TokenAuthority | undefined, conn: MysqlConnection): boolean {
  return (authority as { [OWN]?: MysqlConnection } | undefined)?.[OWN] === conn;
}

/** Options of `createMysqlLock`. */
export interface MysqlLockOptions {
  readonly connection: MysqlConnection;
  /** Clock; default `Date.now`. */
  readonly now?: () => number;
}

/** What the lock's statements need. */
interface Leases {
  readonly sql: MysqlConnection['sql'];
  readonly t: MysqlConnection['tables'];
  readonly now: () => number;
}

const idsOf = (key: LockKey) => [
  Buffer.from(namedUser(key.userId) ?? '', 'utf8'),
  Buffer.from(checkId('sessionId', key.sessionId), 'utf8'),
];
/** The lease row of a key. */
async function readLease({ sql, t }: Leases, key: LockKey) {
  const [rows] = await sql.run([
    {
      sql: `SELECT owner, token, expires_at, commit_id, commit_digest FROM ${t.leases} WHERE user_id = ? AND session_id = ?`,
      params: idsOf(key),
    },
  ]);
  return rowsOf(rows);
}

/** One statement: the lease granted (its token in the OK packet), extended (its owner, explicit), or 0 (held). */
async function tryAcquire(
  leases: Leases,
  key: LockKey,
  owner: string,
  explicit: boolean,
  leaseMs: number,
): Promise<Lease> {
  const { sql, t, now } = leases;
  const at = now();
  const expires = new Date(at + leaseMs);
  const nowDate = new Date(at);
  const free = '(owner IS NULL OR expires_at < ?)';
  const mine = '(owner = ? AND ?)';
  // Assignments run left to right and see the columns already assigned: `owner` is assigned
  // after every condition that reads it but the last, which asks whether it is now ours.
  const [result] = await sql.run([
    {
      sql: `INSERT INTO ${t.leases} (user_id, session_id, owner, token, expires_at, lease_ms)
          VALUES (?, ?, ?, LAST_INSERT_ID(?), ?, ?)
          ON DUPLICATE KEY UPDATE
            token = IF(${free}, LAST_INSERT_ID(GREATEST(token + 1, ?)), IF(${mine}, LAST_INSERT_ID(token), token + 0 * LAST_INSERT_ID(0))),
            lease_ms = IF(${free} OR ${mine}, ?, lease_ms),
            owner = IF(${free} OR ${mine}, ?, owner),
            expires_at = IF(owner = ?, ?, expires_at)`,
      params: [
        ...idsOf(key),
        owner,
        Math.max(1, at),
        expires,
        leaseMs,
        nowDate,
        at,
        owner,
        explicit,
        nowDate,
        owner,
        explicit,
        leaseMs,
        nowDate,
        owner,
        explicit,
        owner,
        owner,
        expires,
      ],
    },
  ]);
  const token = Number(headerOf(result).insertId);
  if (token > 0) return { owner, token, expiresAt: expires, leaseMs };
  const row = (await readLease(leases, key))[0];
  const holds = row?.owner !== null && row !== undefined && (row.expires_at as Date).getTime() >= now();
  if (!holds) {
    // Ours, yet no token: a server whose statement answers no insert id is refused.
    if (row?.owner === owner) throw new BackendError('mysql: the lease statement answered no token', false);
    // Released by its holder between the two statements (each time another caller made
    // progress, so under any contention this ends): try again.
    return tryAcquire(leases, key, owner, explicit, leaseMs);
  }
  throw new LockConflictError(String(row.owner), row.expires_at as Date);
}

/** Creates the lease lock on the engine's `leases` table. */
export function createMysqlLock(options: MysqlLockOptions): SessionLock {
  const { connection } = options;
  const { sql } = connection;
  const t = connection.tables;
  const now = options.now ?? Date.now;
  const leases: Leases = { sql, t, now };
  const read = (key: LockKey) => readLease(leases, key);
  const lock: SessionLock & { [OWN]: MysqlConnection } = {
    [OWN]: connection,
    async acquire(key, o: AcquireOptions = {}) {
      const leaseMs = checkLeaseMs(o.leaseMs);
      const waitMs = checkWaitMs(o.waitMs);
      const owner = o.owner === undefined ? randomUUID() : checkOwner(o.owner);
      return waitFor(() => tryAcquire(leases, key, owner, o.owner !== undefined, leaseMs), waitMs, now);
    },
    async renew(key, owner, token, o = {}) {
      checkOwner(owner);
      checkToken(token);
      const leaseMs = checkLeaseMs(o.leaseMs);
      const expires = new Date(now() + leaseMs);
      const [result] = await sql.run([
        {
          sql: `UPDATE ${t.leases} SET expires_at = ?, lease_ms = ?, commit_id = COALESCE(?, commit_id), commit_digest = COALESCE(?, commit_digest)
            WHERE user_id = ? AND session_id = ? AND owner = ? AND token = ?`,
          params: [
            expires,
            leaseMs,
            o.commit?.commitId ?? null,
            o.commit?.digest ?? null,
            ...idsOf(key),
            owner,
            token,
          ],
        },
      ]);
      if (headerOf(result).affectedRows === 0) throw new LockLostError();
      return { owner, token, expiresAt: expires, leaseMs };
    },
    async release(key, owner, token, o = {}) {
      checkOwner(owner);
      checkToken(token);
      const at = new Date(now());
      const [result] = await sql.run([
        {
          sql: `UPDATE ${t.leases} SET owner = NULL, expires_at = ?, commit_id = COALESCE(?, commit_id), commit_digest = COALESCE(?, commit_digest)
            WHERE user_id = ? AND session_id = ? AND owner = ? AND token = ? AND expires_at >= ?`,
          params: [at, o.commit?.commitId ?? null, o.commit?.digest ?? null, ...idsOf(key), owner, token, at],
        },
      ]);
      if (headerOf(result).affectedRows > 0) return;
      // Free or expired: released already. Held by another owner: lost.
      const row = (await read(key))[0];
      if (row && row.owner !== null && (row.expires_at as Date).getTime() >= now())
        throw new LockLostError('another owner holds the lock');
    },
    async recordCommit(key, token, commit) {
      checkToken(token);
      await sql.run([
        {
          sql: `UPDATE ${t.leases} SET commit_id = ?, commit_digest = ?
            WHERE user_id = ? AND session_id = ? AND owner IS NOT NULL AND token = ? AND expires_at >= ?`,
          params: [commit.commitId, commit.digest, ...idsOf(key), token, new Date(now())],
        },
      ]);
    },
    async holderOf(key) {
      const row = (await read(key))[0];
      if (!row || row.owner === null || (row.expires_at as Date).getTime() < now()) return undefined;
      return { owner: String(row.owner), token: Number(row.token), expiresAt: row.expires_at as Date };
    },
    async grantOf(key) {
      return grantOfRow(await read(key), now());
    },
    async checkReady() {
      await sql.run([{ sql: `SELECT 1 FROM ${t.leases} LIMIT 0` }]);
    },
  };
  return lock;
}
