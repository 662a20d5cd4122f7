/**
 * What the MySQL engine's operations share (docs/backends.md, "MySQL and MariaDB"): the engine's
 * context, one user's scope (ids as rows hold them, the session's expiry, the fencing of a write by
 * the contract's rule, docs/DESIGN.md "Fencing"), the value and list statements several operations
 * write, and small helpers.
 */
import { randomBytes } from 'node:crypto';
import type { RowDataPacket } from 'mysql2/promise';
import { CorruptValueError, IdempotencyKeyReusedError, ValidationError } from '../../contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../contract/hash.js';
import { checkId, isMemorySession } from '../../contract/ids.js';
import { jsonBody } from '../../contract/json.js';
import { checkToken, fencingRefusal, type LockGrant, type TokenAuthority } from '../../contract/lock.js';
import type {
  ListAction,
  ListPage,
  ListWriteResult,
  MetricsSink,
  PageOptions,
} from '../../contract/types.js';
import type { MysqlConnection } from './connection.js';
import { isOwnLeases } from './lock.js';
import {
  archive,
  deleteItems,
  grantOfRow,
  type Ids,
  insertItems,
  type ListRow,
  selectLease,
  upsertList,
} from './rows.js';
import type { Tables } from './schema.js';
import { type Result, rowsOf, type Statement, type Tx } from './sql.js';

/** What every operation of the engine reads its settings from. */
export interface Context {
  readonly conn: MysqlConnection;
  readonly t: Tables;
  readonly retentionMs: number;
  readonly now: () => number;
  readonly metrics: MetricsSink;
  readonly maxValueBytes: number;
}

export const utf8 = (s: string) => Buffer.from(s, 'utf8');
export const newVersion = () => randomBytes(12).toString('hex');
export const newWriteId = () => `w.${randomBytes(12).toString('base64url')}`;

export function parseBody(body: unknown, key: string, metrics: MetricsSink): unknown {
  try {
    return JSON.parse(String(body));
  } catch (error) {
    metrics.count('corruptObjects');
    throw new CorruptValueError(key, { cause: error });
  }
}

/** The chain hash after each of `bodies` (their parsed items), from `from`. */
export function hashesAfter(from: string, items: readonly unknown[]): string[] {
  const out: string[] = [];
  let h = from;
  for (const item of items) {
    h = chainHash(h, [item]);
    out.push(h);
  }
  return out;
}

/** The item range `[from, to)` a checked page asks for in a list of `count` items. */
export function rangeOf(page: PageOptions, count: number): { from: number; to: number } {
  if (page.last !== undefined) return { from: Math.max(0, count - page.last), to: count };
  const from = Math.min(page.offset ?? 0, count);
  const to = page.limit === undefined ? count : Math.min(count, from + page.limit);
  return { from, to };
}

export function checkItems(items: unknown, min: number, max: number, maxItemBytes: number): string[] {
  if (!Array.isArray(items)) throw new ValidationError('items', 'must be an array');
  if (items.length < min || items.length > max)
    throw new ValidationError('items', `must hold ${min} to ${max} items`);
  return items.map((item) => {
    const body = jsonBody(item);
    if (Buffer.byteLength(body) > maxItemBytes)
      throw new ValidationError('items', `an item is over ${maxItemBytes} bytes (maxValueBytes)`);
    return body;
  });
}

/** The SQL condition and parameters of "key after `after`, starting with `prefix`" on `column`. */
export function keyRange(
  column: string,
  prefix: string,
  after: string | undefined,
): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  if (prefix !== '') {
    const p = utf8(prefix);
    parts.push(`${column} >= ? AND LEFT(${column}, ?) = ?`);
    params.push(p, p.length, p);
  }
  if (after !== undefined) {
    parts.push(`${column} > ?`);
    params.push(utf8(after));
  }
  return { sql: parts.length ? ` AND ${parts.join(' AND ')}` : '', params };
}

/** One user's scope: the base of the user store's operations. */
export class UserScope {
  protected readonly user: Buffer;

  constructor(
    protected readonly ctx: Context,
    protected readonly userId: string | null,
    protected readonly authority: TokenAuthority | undefined,
  ) {
    this.user = utf8(userId ?? '');
  }

  protected ids(sessionId: string, key?: string): Ids {
    checkId('sessionId', sessionId);
    if (key !== undefined) checkId('key', key);
    return { user: this.user, session: utf8(sessionId) };
  }

  /** Where the session's state goes after a write of `token`. */
  protected touching(sessionId: string, token: number | undefined) {
    const now = this.ctx.now();
    return { now, expiresAt: isMemorySession(sessionId) ? null : now + this.ctx.retentionMs, token };
  }

  /**
   * The fencing of a write to the session: the lease row in the transaction's first round trip
   * (the engine's own lock), or the authority's read started now, beside it.
   */
  protected fence(sessionId: string, ids: Ids, token: number | undefined) {
    checkToken(token, 'optional');
    const { authority } = this;
    const own = token !== undefined && isOwnLeases(authority, this.ctx.conn);
    const outside =
      token !== undefined && authority && !own
        ? authority.grantOf({ userId: this.userId, sessionId })
        : undefined;
    outside?.catch(() => {});
    const reads: Statement[] = own ? [selectLease(this.ctx.t, ids)] : [];
    return {
      token,
      reads,
      /** Refuses (`FencedError`) on what was read: the lease row's result (when read) and the tokens the targets record. */
      check: async (leaseRows: Result | undefined, ...recorded: Array<number | null | undefined>) => {
        const grant: LockGrant | undefined = own
          ? grantOfRow(rowsOf(leaseRows), this.ctx.now())
          : outside
            ? await outside
            : undefined;
        const refusal = fencingRefusal(token, recorded, own || outside !== undefined, grant);
        if (refusal) {
          this.ctx.metrics.count('fencedWrites');
          throw refusal;
        }
        return grant;
      },
    };
  }

  /** A value's row written: created at revision 1, or its revision raised (its token never lowered). */
  protected writeValue(
    ids: Ids,
    k: Buffer,
    body: string,
    version: string,
    current: { token: number | null } | undefined,
    token: number | undefined,
    commitId: string | null,
  ): Statement {
    const { t } = this.ctx;
    const now = new Date(this.ctx.now());
    const recorded = token === undefined ? (current?.token ?? null) : Math.max(token, current?.token ?? -1);
    if (!current)
      return {
        sql: `INSERT INTO ${t.values} (user_id, session_id, value_key, body, version, revision, token, commit_id, updated_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?)`,
        params: [ids.user, ids.session, k, body, version, recorded, commitId, now],
      };
    return {
      sql: `UPDATE ${t.values} SET body = ?, version = ?, revision = revision + 1, token = ?, commit_id = ?, updated_at = ? WHERE user_id = ? AND session_id = ? AND value_key = ?`,
      params: [body, version, recorded, commitId, now, ids.user, ids.session, k],
    };
  }

  protected deleteValue(ids: Ids, k: Buffer): Statement {
    return {
      sql: `DELETE FROM ${this.ctx.t.values} WHERE user_id = ? AND session_id = ? AND value_key = ?`,
      params: [ids.user, ids.session, k],
    };
  }

  protected selectItemsFrom(ids: Ids, k: Buffer, from: number): Statement {
    return {
      sql: `SELECT body FROM ${this.ctx.t.items} WHERE user_id = ? AND session_id = ? AND list_key = ? AND position >= ? ORDER BY position`,
      params: [ids.user, ids.session, k, from],
    };
  }

  /**
   * One indexed SELECT of a page: the session's row, the list's, and the items of the page with
   * the one before it (its hash is the page's `baseHash`), by the items' primary key.
   */
  protected selectPage(ids: Ids, k: Buffer, page: PageOptions): Statement {
    const { t } = this.ctx;
    let range: string;
    const params: unknown[] = [];
    if (page.last !== undefined) {
      range = 'AND i.position >= l.item_count - ? - 1';
      params.push(page.last);
    } else {
      const from = page.offset ?? 0;
      range = 'AND i.position >= ?';
      params.push(from - 1);
      if (page.limit !== undefined) {
        range += ' AND i.position < ?';
        params.push(from + page.limit);
      }
    }
    return {
      sql: `SELECT l.item_count, l.hash, i.position, i.body, i.hash_after
        FROM ${t.sessions} s
        JOIN ${t.lists} l ON l.user_id = s.user_id AND l.session_id = s.session_id AND l.list_key = ?
        LEFT JOIN ${t.items} i ON i.user_id = l.user_id AND i.session_id = l.session_id AND i.list_key = l.list_key ${range}
        WHERE s.user_id = ? AND s.session_id = ? AND s.state <> 2 AND (s.expires_at IS NULL OR s.expires_at > ?)
        ORDER BY i.position`,
      params: [k, ...params, ids.user, ids.session, new Date(this.ctx.now())],
    };
  }

  /** The page the rows of `selectPage` hold. */
  protected pageOf(rows: RowDataPacket[], key: string, page: PageOptions): ListPage {
    const first = rows[0];
    if (!first) return { items: [], count: 0, hash: EMPTY_HASH, offset: 0, baseHash: EMPTY_HASH };
    const count = Number(first.item_count);
    const hash = String(first.hash);
    const { from, to } = rangeOf(page, count);
    let baseHash = from === 0 ? EMPTY_HASH : from === count ? hash : undefined;
    const items: unknown[] = [];
    for (const r of rows) {
      if (r.position === null) continue;
      const position = Number(r.position);
      if (position === from - 1) baseHash = String(r.hash_after);
      else if (position >= from && position < to) items.push(parseBody(r.body, key, this.ctx.metrics));
    }
    if (baseHash === undefined || items.length !== to - from) throw new CorruptValueError(key);
    return { items, count, hash, offset: from, baseHash };
  }
  /** The writes of a whole-list save: nothing (unchanged), an append (grown), or an archived rewrite. */
  protected replaceList(
    ids: Ids,
    k: Buffer,
    list: ListRow | undefined,
    items: readonly unknown[],
    bodies: readonly string[],
    token: number | undefined,
  ): { statements: Statement[]; result: ListWriteResult } {
    const { t } = this.ctx;
    const count = list?.count ?? 0;
    const hash = list?.hash ?? EMPTY_HASH;
    const hashes = hashesAfter(EMPTY_HASH, items);
    const at = (n: number) => (n === 0 ? EMPTY_HASH : (hashes[n - 1] as string));
    const end = at(items.length);
    const row = (action: ListAction) => ({
      action,
      count: items.length,
      hash: end,
    });
    const listWrite = (result: ListWriteResult) =>
      upsertList(t, ids, k, {
        ...result,
        token: maxToken(list?.token ?? null, token),
        writeId: newWriteId(),
        now: this.ctx.now(),
      });
    if (count <= items.length && at(count) === hash) {
      if (count === items.length && list) return { statements: [], result: row('unchanged') };
      const result = row(list ? 'appended' : 'created');
      return {
        statements: [
          ...insertItems(t, ids, k, count, bodies.slice(count), hashes.slice(count)),
          listWrite(result),
        ],
        result,
      };
    }
    // Shrunk, or an earlier item changed: the previous list is archived first.
    this.ctx.metrics.count('listRewrites');
    if (count > 0) this.ctx.metrics.count('archivedLists');
    const result = row('rewritten');
    return {
      statements: [
        ...(count > 0 ? archive(t, ids, k, { from: 0, count, hash, now: this.ctx.now() }) : []),
        deleteItems(t, ids, k, 0),
        ...insertItems(t, ids, k, 0, bodies, hashes),
        listWrite(result),
      ],
      result,
    };
  }
}

/** A named write's recorded answer: the same request's, or `IdempotencyKeyReusedError` for another body. */
export function recorded(rows: RowDataPacket[], digest: string): ListWriteResult | undefined {
  const r = rows[0];
  if (!r) return undefined;
  if (String(r.digest) !== digest) throw new IdempotencyKeyReusedError();
  return { action: String(r.action) as ListAction, count: Number(r.item_count), hash: String(r.hash) };
}

export function maxToken(recordedToken: number | null, token: number | undefined): number | null {
  if (token === undefined) return recordedToken;
  return recordedToken === null ? token : Math.max(recordedToken, token);
}

/** Sends a transaction's writes and COMMIT: one round trip, or several when the rows are many megabytes. */
export async function commitInBatches(tx: Tx, statements: readonly Statement[]): Promise<void> {
  const LIMIT = 4 * 1024 * 1024;
  const groups: Statement[][] = [[]];
  let bytes = 0;
  for (const s of statements) {
    const size = (s.params ?? []).reduce<number>(
      (n, p) => n + (typeof p === 'string' ? Buffer.byteLength(p) : Buffer.isBuffer(p) ? p.length * 2 : 16),
      s.sql.length,
    );
    if (bytes + size > LIMIT && (groups.at(-1) as Statement[]).length > 0) {
      groups.push([]);
      bytes = 0;
    }
    (groups.at(-1) as Statement[]).push(s);
    bytes += size;
  }
  for (const group of groups.slice(0, -1)) await tx.run(group);
  await tx.commit(groups.at(-1) as Statement[]);
}
