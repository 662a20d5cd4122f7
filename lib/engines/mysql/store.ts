import { type BlobStore, EngineBlobs, type EngineUserStore } from '../../contract/blobs.js';
import { DEFAULTS } from '../../contract/defaults.js';
import {
  PreconditionFailedError,
  SessionNotFoundError,
  UnsupportedOperationError,
  ValidationError,
} from '../../contract/errors.js';
import {
  cursorOf,
  decodeId,
  encodeId,
  keyPageOptions,
  namedUser,
  sessionCursorOf,
  sessionPageOptions,
} from '../../contract/ids.js';
import { jsonBody } from '../../contract/json.js';
import type { TokenAuthority } from '../../contract/lock.js';
import { checkRevision } from '../../contract/revisions.js';
import type {
  KeyListInfo,
  KeyPage,
  KeyValueInfo,
  ListKeysOptions,
  MetricsSink,
  SaveOptions,
  SessionPage,
  StateStore,
  StoreCapabilities,
  WriteOptions,
} from '../../contract/types.js';
import { DAY_MS } from '../../util/units.js';
import type { MysqlConnection } from './connection.js';
import {
  type Ids,
  isLive,
  markIfEmpty,
  purge,
  selectSession,
  selectValues,
  sessionRow,
  touch,
  valueRows,
} from './rows.js';
import { type Context, keyRange, newVersion, parseBody, utf8 } from './scope.js';
import { mysqlError, rowsOf } from './sql.js';
import { TurnOps } from './turns.js';
/** Options of `createMysqlStateStore`. */
export interface MysqlStateStoreOptions {
  readonly connection: MysqlConnection;
  /** Days a session lives after its last write; default 30. */
  readonly retentionDays?: number;
  /** Counters sink; default none. */
  readonly metrics?: MetricsSink;
  /** Clock; default `Date.now`. */
  readonly now?: () => number;
  /** Enables `truncateAllSessions` (every user; for tests); default false. */
  readonly allowTruncate?: boolean;
  /** Largest list item, in bytes of JSON; default 64 MiB. */
  readonly maxValueBytes?: number;
  /**
   * The authority over fencing tokens (docs/DESIGN.md, "Fencing"). The engine's own lock
   * (`createMysqlLock` on the same connection) is read inside each write's transaction, with a
   * shared lock on its row; any other is asked beside the transaction's first round trip.
   */
  readonly authority?: TokenAuthority;
  /** Where workspaces and snapshots live (BLOB_BACKEND; lib/contract/blobs.ts); without it they are 501. */
  readonly blobs?: BlobStore;
}

/** The MySQL state store: a `StateStore`, and the bounded sweep of expired sessions. */
export interface MysqlStateStore extends StateStore {
  /** Deletes up to `limit` sessions past their expiry (indexed on `expires_at`); answers how many. */
  sweepExpired(limit?: number): Promise<number>;
}

/** What MySQL can do (`GET /v1/capabilities`). */
export const MYSQL_CAPABILITIES: StoreCapabilities = {
  versioning: true,
  revisions: true,
  conditionalOverwrite: true,
  ranges: false,
  presignedTransfer: false,
  atomicCommits: true,
};

/** Values live in MySQL, up to the request body limit: no direct transfer of them (501 `unsupported`). */
const NO_BLOBS = 'mysql (values live in MySQL; workspaces in BLOB_BACKEND)';

/** Creates the MySQL state store (the tables must exist: `connection.bootstrap()`). */
export function createMysqlStateStore(options: MysqlStateStoreOptions): MysqlStateStore {
  const retentionDays = options.retentionDays ?? DEFAULTS.retentionDays;
  if (!(retentionDays > 0)) throw new ValidationError('retentionDays', 'must be positive');
  const ctx: Context = {
    conn: options.connection,
    t: options.connection.tables,
    retentionMs: retentionDays * DAY_MS,
    now: options.now ?? Date.now,
    metrics: options.metrics ?? { count: () => {} },
    maxValueBytes: options.maxValueBytes ?? DEFAULTS.maxValueBytes,
  };
  const blobs = new EngineBlobs(options.blobs, 'mysql');
  const store: MysqlStateStore = {
    capabilities: MYSQL_CAPABILITIES,
    forUser: (userId, o = {}) => {
      const user = namedUser(userId);
      const authority = o.authority ?? options.authority;
      return blobs.wrap(guarded(new MysqlUserStore(ctx, user, authority)), user, authority);
    },
    // Every table of the schema, in one round trip: a missing one is named (run npm run bootstrap).
    checkReady: async () => {
      await ctx.conn.sql.run(
        Object.values(ctx.t).map((table) => ({ sql: `SELECT 1 FROM ${table} LIMIT 0` })),
      );
    },
    sweepExpired: (limit = 100) => sweep(ctx, limit),
  };
  if (options.allowTruncate) {
    store.truncateAllSessions = async () => {
      const { t } = ctx;
      await ctx.conn.sql.transaction((tx) =>
        tx.commit(
          [t.archiveItems, t.archives, t.items, t.lists, t.listWrites, t.values, t.commits, t.sessions].map(
            (table) => ({ sql: `DELETE FROM ${table}` }),
          ),
        ),
      );
    };
  }
  return store;
}

/** Deletes up to `limit` expired sessions, each in its own transaction (re-checked under its row lock). */
async function sweep(ctx: Context, limit: number): Promise<number> {
  const { t } = ctx;
  const [found] = await ctx.conn.sql.run([
    {
      sql: `SELECT user_id, session_id FROM ${t.sessions} WHERE expires_at < ? ORDER BY expires_at LIMIT ?`,
      params: [new Date(ctx.now()), limit],
    },
  ]);
  let swept = 0;
  for (const r of rowsOf(found)) {
    const ids: Ids = { user: r.user_id as Buffer, session: r.session_id as Buffer };
    swept += await ctx.conn.sql.transaction(async (tx) => {
      const [rows] = await tx.run([selectSession(t, ids)]);
      const row = sessionRow(rowsOf(rows));
      if (!row || row.expiresAt === null || row.expiresAt.getTime() >= ctx.now()) return 0;
      await tx.commit([
        ...purge(t, ids),
        {
          sql: `DELETE FROM ${t.sessions} WHERE user_id = ? AND session_id = ?`,
          params: [ids.user, ids.session],
        },
      ]);
      return 1;
    });
  }
  return swept;
}

/** Every method's failures as the store's typed errors. */
function guarded(target: MysqlUserStore): EngineUserStore {
  return new Proxy(target, {
    get(obj, name, receiver) {
      const value = Reflect.get(obj, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        (value as (...a: unknown[]) => Promise<unknown>).apply(obj, args).catch((error: unknown) => {
          throw mysqlError(error);
        });
    },
  });
}

/** One user's sessions on MySQL. */
class MysqlUserStore extends TurnOps implements EngineUserStore {
  // ---- single values -------------------------------------------------------------------------

  async get<T>(sessionId: string, key: string): Promise<T | undefined> {
    return (await this.getVersioned<T>(sessionId, key))?.value;
  }

  async getVersioned<T>(sessionId: string, key: string) {
    const ids = this.ids(sessionId, key);
    const { t } = this.ctx;
    const [rows] = await this.ctx.conn.sql.run([
      {
        sql: `SELECT v.body, v.version, v.revision FROM ${t.values} v JOIN ${t.sessions} s ON s.user_id = v.user_id AND s.session_id = v.session_id
          WHERE v.user_id = ? AND v.session_id = ? AND v.value_key = ? AND s.state <> 2 AND (s.expires_at IS NULL OR s.expires_at > ?)`,
        params: [ids.user, ids.session, utf8(key), new Date(this.ctx.now())],
      },
    ]);
    const r = rowsOf(rows)[0];
    if (!r) return undefined;
    return {
      value: parseBody(r.body, key, this.ctx.metrics) as T,
      version: String(r.version),
      revision: Number(r.revision),
    };
  }

  async save(sessionId: string, key: string, value: unknown, options: SaveOptions = {}) {
    const ids = this.ids(sessionId, key);
    const body = jsonBody(value);
    checkRevision('ifRevision', options.ifRevision);
    if ((options.ifVersion !== undefined || options.ifRevision !== undefined) && options.ifAbsent)
      throw new ValidationError(
        options.ifVersion !== undefined ? 'ifVersion' : 'ifRevision',
        'cannot be combined with ifAbsent',
      );
    const { t } = this.ctx;
    const k = utf8(key);
    const fence = this.fence(sessionId, ids, options.token);
    return this.ctx.conn.sql.transaction(async (tx) => {
      const [s, v, lease] = await tx.run([selectSession(t, ids), selectValues(t, ids, [k]), ...fence.reads]);
      const session = sessionRow(rowsOf(s));
      const live = isLive(session, this.ctx.now());
      const current = live ? valueRows(rowsOf(v)).get(key) : undefined;
      await fence.check(lease, session?.token, current?.token);
      const refused = () => new PreconditionFailedError(current?.version ?? null, current?.revision ?? null);
      if (options.ifAbsent && current) throw refused();
      if (options.ifVersion !== undefined && current?.version !== options.ifVersion) throw refused();
      if (options.ifRevision !== undefined && current?.revision !== options.ifRevision) throw refused();
      const version = newVersion();
      await tx.commit([
        ...touch(t, ids, session, this.touching(sessionId, options.token)),
        this.writeValue(ids, k, body, version, current, options.token, null),
      ]);
      return { version, revision: current ? current.revision + 1 : 1 };
    });
  }

  async deleteKey(sessionId: string, key: string, options: WriteOptions = {}) {
    const ids = this.ids(sessionId, key);
    const { t } = this.ctx;
    const k = utf8(key);
    const fence = this.fence(sessionId, ids, options.token);
    await this.ctx.conn.sql.transaction(async (tx) => {
      const [s, v, lease] = await tx.run([selectSession(t, ids), selectValues(t, ids, [k]), ...fence.reads]);
      const session = sessionRow(rowsOf(s));
      const live = isLive(session, this.ctx.now());
      const current = live ? valueRows(rowsOf(v)).get(key) : undefined;
      await fence.check(lease, session?.token, current?.token);
      if (!live || !current) return;
      await tx.commit([
        ...touch(t, ids, session, this.touching(sessionId, options.token)),
        this.deleteValue(ids, k),
        markIfEmpty(t, ids),
      ]);
    });
  }

  // ---- lists ---------------------------------------------------------------------------------

  async listKeys(sessionId: string, options: ListKeysOptions = {}): Promise<KeyPage> {
    const ids = this.ids(sessionId);
    const { prefix, after, limit } = keyPageOptions(options);
    const { t } = this.ctx;
    const values = keyRange('value_key', prefix, after);
    const lists = keyRange('list_key', prefix, after);
    const [s, v, l] = await this.ctx.conn.sql.run([
      {
        sql: `SELECT 1 FROM ${t.sessions} WHERE user_id = ? AND session_id = ? AND state = 1 AND (expires_at IS NULL OR expires_at > ?)`,
        params: [ids.user, ids.session, new Date(this.ctx.now())],
      },
      {
        sql: `SELECT value_key, version, revision, LENGTH(body) AS size, updated_at FROM ${t.values} WHERE user_id = ? AND session_id = ?${values.sql} ORDER BY value_key LIMIT ?`,
        params: [ids.user, ids.session, ...values.params, limit + 1],
      },
      {
        sql: `SELECT list_key, item_count, hash, updated_at FROM ${t.lists} WHERE user_id = ? AND session_id = ?${lists.sql} ORDER BY list_key LIMIT ?`,
        params: [ids.user, ids.session, ...lists.params, limit + 1],
      },
    ]);
    if (rowsOf(s).length === 0) throw new SessionNotFoundError(sessionId);
    const vs = rowsOf(v).map((r) => ({ k: r.value_key as Buffer, r }));
    const ls = rowsOf(l).map((r) => ({ k: r.list_key as Buffer, r }));
    const keys = [...new Set([...vs, ...ls].map((e) => e.k.toString('hex')))]
      .map((hex) => Buffer.from(hex, 'hex'))
      .sort(Buffer.compare);
    const page = keys.slice(0, limit);
    const last = page.at(-1);
    const inPage = (k: Buffer) => last !== undefined && Buffer.compare(k, last) <= 0;
    return {
      values: vs
        .filter((e) => inPage(e.k))
        .map(
          (e): KeyValueInfo => ({
            key: e.k.toString('utf8'),
            etag: String(e.r.version),
            revision: Number(e.r.revision),
            size: Number(e.r.size),
            lastModified: e.r.updated_at as Date,
          }),
        ),
      lists: ls
        .filter((e) => inPage(e.k))
        .map(
          (e): KeyListInfo => ({
            key: e.k.toString('utf8'),
            count: Number(e.r.item_count),
            hash: String(e.r.hash),
            lastModified: e.r.updated_at as Date,
          }),
        ),
      ...(keys.length > limit && last ? { nextCursor: cursorOf(last.toString('utf8')) } : {}),
    };
  }

  async createValueUpload(): Promise<never> {
    throw new UnsupportedOperationError('direct transfer', NO_BLOBS);
  }
  async commitValueUpload(): Promise<never> {
    throw new UnsupportedOperationError('direct transfer', NO_BLOBS);
  }
  /**
   * A value is read inline: one too large for an answer has no URL to be read from, so it is
   * `unsupported` (501, as on object storage that cannot presign), never answered as absent.
   */
  async locateValue(sessionId: string, key: string) {
    this.ids(sessionId, key);
    if ((await this.getVersioned(sessionId, key)) === undefined) return undefined;
    throw new UnsupportedOperationError('direct transfer', NO_BLOBS);
  }
  async locateListItem(sessionId: string, key: string) {
    this.ids(sessionId, key);
    return undefined;
  }

  // ---- sessions ------------------------------------------------------------------------------

  async exists(sessionId: string): Promise<boolean> {
    const ids = this.ids(sessionId);
    const [rows] = await this.ctx.conn.sql.run([
      {
        sql: `SELECT 1 FROM ${this.ctx.t.sessions} WHERE user_id = ? AND session_id = ? AND state = 1 AND (expires_at IS NULL OR expires_at > ?)`,
        params: [ids.user, ids.session, new Date(this.ctx.now())],
      },
    ]);
    return rowsOf(rows).length > 0;
  }

  async delete(sessionId: string, options: WriteOptions = {}) {
    const ids = this.ids(sessionId);
    const { t } = this.ctx;
    const { token } = options;
    const fence = this.fence(sessionId, ids, token);
    await this.ctx.conn.sql.transaction(async (tx) => {
      const [s, lease] = await tx.run([selectSession(t, ids), ...fence.reads]);
      const session = sessionRow(rowsOf(s));
      await fence.check(lease, session?.token);
      if (!session && token === undefined) return;
      const now = new Date(this.ctx.now());
      // The tombstone lives as long as a session would.
      const expires = new Date(this.ctx.now() + this.ctx.retentionMs);
      const kept = token ?? session?.token ?? null;
      await tx.commit([
        ...purge(t, ids),
        // A token (this delete's, or one the session recorded) stays as a tombstone that keeps
        // it: a stale holder cannot bring the session back (docs/DESIGN.md, "Fencing").
        kept === null
          ? {
              sql: `DELETE FROM ${t.sessions} WHERE user_id = ? AND session_id = ?`,
              params: [ids.user, ids.session],
            }
          : {
              sql: `INSERT INTO ${t.sessions} (user_id, session_id, state, token, created_at, last_activity, expires_at)
                VALUES (?, ?, 2, ?, ?, ?, ?)
                ON DUPLICATE KEY UPDATE state = 2, token = GREATEST(COALESCE(token, -1), ?), last_activity = ?, expires_at = ?`,
              params: [ids.user, ids.session, kept, now, now, expires, kept, now, expires],
            },
      ]);
    });
  }

  async deleteAllSessions() {
    const { t } = this.ctx;
    const user = this.user;
    await this.ctx.conn.sql.transaction((tx) =>
      tx.commit([
        {
          sql: `DELETE ai FROM ${t.archiveItems} ai JOIN ${t.archives} a ON a.archive_id = ai.archive_id WHERE a.user_id = ?`,
          params: [user],
        },
        ...[t.archives, t.items, t.lists, t.listWrites, t.values, t.commits].map((table) => ({
          sql: `DELETE FROM ${table} WHERE user_id = ?`,
          params: [user],
        })),
        { sql: `DELETE FROM ${t.sessions} WHERE user_id = ? AND state <> 2`, params: [user] },
      ]),
    );
  }

  async listSessionIds(options: { limit?: number; cursor?: string } = {}): Promise<SessionPage> {
    const checked = sessionPageOptions(options);
    const { limit } = checked;
    const after = checked.after === undefined ? undefined : utf8(decodeId('sessionId', checked.after));
    const { t } = this.ctx;
    const [rows] = await this.ctx.conn.sql.run([
      {
        sql: `SELECT session_id, last_activity FROM ${t.sessions}
          WHERE user_id = ? AND state = 1 AND (expires_at IS NULL OR expires_at > ?)${after ? ' AND session_id > ?' : ''}
          ORDER BY session_id LIMIT ?`,
        params: [this.user, new Date(this.ctx.now()), ...(after ? [after] : []), limit + 1],
      },
    ]);
    const found = rowsOf(rows);
    const page = found.slice(0, limit);
    const last = page.at(-1);
    return {
      sessions: page.map((r) => ({
        sessionId: (r.session_id as Buffer).toString('utf8'),
        lastActivity: r.last_activity as Date,
      })),
      nextCursor:
        found.length > limit && last
          ? sessionCursorOf(encodeId('sessionId', (last.session_id as Buffer).toString('utf8')))
          : null,
    };
  }
}
