import {
  AppendConflictError,
  ListPreconditionFailedError,
  ListTooShortError,
} from '../../contract/errors.js';
import { chainHash, EMPTY_HASH, requestDigest } from '../../contract/hash.js';
import { ARCHIVE_ID_PATTERN, MAX_APPEND_ITEMS } from '../../contract/limits.js';
import {
  checkAppendOptions,
  checkListSaveOptions,
  checkPage,
  checkTruncateOptions,
} from '../../contract/turns.js';
import type {
  AppendOptions,
  ArchiveInfo,
  ListPage,
  ListSaveOptions,
  ListWriteResult,
  PageOptions,
  TruncateOptions,
  WriteOptions,
} from '../../contract/types.js';
import {
  archive,
  deleteItems,
  hashAt,
  insertItems,
  insertWrite,
  isLive,
  listRow,
  markIfEmpty,
  selectHashAt,
  selectList,
  selectSession,
  selectWrite,
  sessionRow,
  touch,
  upsertList,
} from './rows.js';
import {
  checkItems,
  commitInBatches,
  hashesAfter,
  maxToken,
  newWriteId,
  parseBody,
  rangeOf,
  recorded,
  UserScope,
  utf8,
} from './scope.js';
import { rowsOf } from './sql.js';

/** The list operations of a user's store. */
export class ListOps extends UserScope {
  async appendList(sessionId: string, key: string, items: readonly unknown[], options: AppendOptions) {
    const ids = this.ids(sessionId, key);
    const bodies = checkItems(items, 1, MAX_APPEND_ITEMS, this.ctx.maxValueBytes);
    const { expectedCount, expectedHash, writeId } = checkAppendOptions(options);
    // The key is bound to the request: the same key with another request is refused, not replayed.
    const digest = requestDigest({ append: items, expectedCount, expectedHash });
    const { t } = this.ctx;
    const k = utf8(key);
    const fence = this.fence(sessionId, ids, options.token);
    return this.ctx.conn.sql.transaction(async (tx) => {
      const reads = [
        selectSession(t, ids),
        selectList(t, ids, k),
        // Without an expected hash, a retried append is recognised by the hash before its items.
        selectHashAt(t, ids, k, expectedCount - 1),
        ...(writeId !== undefined ? [selectWrite(t, ids, k, writeId)] : []),
        ...fence.reads,
      ];
      const got = await tx.run(reads);
      const [s, l, base] = got;
      const record = writeId !== undefined ? got[3] : undefined;
      const lease = fence.reads.length ? got.at(-1) : undefined;
      const session = sessionRow(rowsOf(s));
      const live = isLive(session, this.ctx.now());
      const list = live ? listRow(rowsOf(l)) : undefined;
      const count = list?.count ?? 0;
      const hash = list?.hash ?? EMPTY_HASH;
      // A replay is answered from its record before the fencing check (docs/DESIGN.md, "Fencing").
      const replay = live ? recorded(rowsOf(record), digest) : undefined;
      if (replay) return replay;
      await fence.check(lease, session?.token, list?.token);
      if (count !== expectedCount || (expectedHash !== undefined && hash !== expectedHash)) {
        const before = expectedHash ?? hashAt(rowsOf(base), expectedCount - 1);
        if (
          count === expectedCount + items.length &&
          before !== undefined &&
          chainHash(before, items) === hash
        )
          return { action: 'unchanged' as const, count, hash };
        this.ctx.metrics.count('appendConflicts');
        throw new AppendConflictError(count, hash);
      }
      const hashes = hashesAfter(hash, items);
      const result: ListWriteResult = {
        action: list ? 'appended' : 'created',
        count: count + items.length,
        hash: hashes.at(-1) as string,
      };
      await tx.commit([
        ...touch(t, ids, session, this.touching(sessionId, options.token)),
        // At position expectedCount: the items' primary key lets one of racing appenders in.
        ...insertItems(t, ids, k, expectedCount, bodies, hashes),
        upsertList(t, ids, k, {
          ...result,
          token: maxToken(list?.token ?? null, options.token),
          writeId: writeId ?? newWriteId(),
          now: this.ctx.now(),
        }),
        ...(writeId !== undefined ? [insertWrite(t, ids, k, { writeId, digest, ...result })] : []),
      ]);
      return result;
    });
  }

  async saveList(sessionId: string, key: string, items: readonly unknown[], options: ListSaveOptions = {}) {
    const ids = this.ids(sessionId, key);
    const bodies = checkItems(items, 0, Number.MAX_SAFE_INTEGER, this.ctx.maxValueBytes);
    checkListSaveOptions(options);
    const { t } = this.ctx;
    const k = utf8(key);
    const fence = this.fence(sessionId, ids, options.token);
    return this.ctx.conn.sql.transaction(async (tx) => {
      const [s, l, lease] = await tx.run([selectSession(t, ids), selectList(t, ids, k), ...fence.reads]);
      const session = sessionRow(rowsOf(s));
      const list = isLive(session, this.ctx.now()) ? listRow(rowsOf(l)) : undefined;
      const hash = list?.hash ?? EMPTY_HASH;
      if (options.ifHash !== undefined && options.ifHash !== hash)
        throw new ListPreconditionFailedError(hash);
      // Saving [] over an absent list changes nothing: no session is created for it.
      if (items.length === 0 && !list) return { action: 'unchanged' as const, count: 0, hash: EMPTY_HASH };
      await fence.check(lease, session?.token, list?.token);
      const { statements, result } = this.replaceList(ids, k, list, items, bodies, options.token);
      if (result.action === 'unchanged') return result;
      await commitInBatches(tx, [
        ...touch(t, ids, session, this.touching(sessionId, options.token)),
        ...statements,
      ]);
      return result;
    });
  }

  async truncateList(sessionId: string, key: string, options: TruncateOptions) {
    const ids = this.ids(sessionId, key);
    const { count: keep, expectedHash, writeId } = checkTruncateOptions(options);
    const digest = requestDigest({ truncate: keep, expectedHash });
    const { t } = this.ctx;
    const k = utf8(key);
    const fence = this.fence(sessionId, ids, options.token);
    return this.ctx.conn.sql.transaction(async (tx) => {
      const got = await tx.run([
        selectSession(t, ids),
        selectList(t, ids, k),
        selectHashAt(t, ids, k, keep - 1),
        this.selectItemsFrom(ids, k, keep),
        ...(writeId !== undefined ? [selectWrite(t, ids, k, writeId)] : []),
        ...fence.reads,
      ]);
      const [s, l, base, removed] = got;
      const session = sessionRow(rowsOf(s));
      const live = isLive(session, this.ctx.now());
      const list = live ? listRow(rowsOf(l)) : undefined;
      const count = list?.count ?? 0;
      const hash = list?.hash ?? EMPTY_HASH;
      const replay = live && writeId !== undefined ? recorded(rowsOf(got[4]), digest) : undefined;
      if (replay) return replay;
      await fence.check(fence.reads.length ? got.at(-1) : undefined, session?.token, list?.token);
      if (expectedHash !== hash) throw new ListPreconditionFailedError(hash);
      if (keep > count) throw new ListTooShortError(keep, count);
      if (keep === count) return { action: 'unchanged' as const, count, hash };
      const cut = rowsOf(removed).map((r) => parseBody(r.body, key, this.ctx.metrics));
      const result: ListWriteResult = {
        action: 'truncated',
        count: keep,
        hash: hashAt(rowsOf(base), keep - 1) as string,
      };
      this.ctx.metrics.count('archivedLists');
      await tx.commit([
        ...touch(t, ids, session, this.touching(sessionId, options.token)),
        ...archive(t, ids, k, {
          from: keep,
          count: cut.length,
          hash: chainHash(EMPTY_HASH, cut),
          now: this.ctx.now(),
        }),
        deleteItems(t, ids, k, keep),
        upsertList(t, ids, k, {
          ...result,
          token: maxToken(list?.token ?? null, options.token),
          writeId: writeId ?? newWriteId(),
          now: this.ctx.now(),
        }),
        ...(writeId !== undefined ? [insertWrite(t, ids, k, { writeId, digest, ...result })] : []),
      ]);
      return result;
    });
  }
  async getList<T>(sessionId: string, key: string, page: PageOptions = {}): Promise<ListPage<T>> {
    const ids = this.ids(sessionId, key);
    checkPage(page);
    const [rows] = await this.ctx.conn.sql.run([this.selectPage(ids, utf8(key), page)]);
    return this.pageOf(rowsOf(rows), key, page) as ListPage<T>;
  }

  /**
   * One indexed SELECT of a page: the session's row, the list's, and the items of the page with
   * the one before it (its hash is the page's `baseHash`), by the items' primary key.
   */
  async deleteList(sessionId: string, key: string, options: WriteOptions = {}) {
    const ids = this.ids(sessionId, key);
    const { t } = this.ctx;
    const k = utf8(key);
    const fence = this.fence(sessionId, ids, options.token);
    await this.ctx.conn.sql.transaction(async (tx) => {
      const [s, l, lease] = await tx.run([selectSession(t, ids), selectList(t, ids, k), ...fence.reads]);
      const session = sessionRow(rowsOf(s));
      const list = isLive(session, this.ctx.now()) ? listRow(rowsOf(l)) : undefined;
      await fence.check(lease, session?.token, list?.token);
      if (!list) return;
      if (list.count > 0) this.ctx.metrics.count('archivedLists');
      const where = {
        sql: 'WHERE user_id = ? AND session_id = ? AND list_key = ?',
        params: [ids.user, ids.session, k],
      };
      await tx.commit([
        ...touch(t, ids, session, this.touching(sessionId, options.token)),
        ...(list.count > 0
          ? archive(t, ids, k, { from: 0, count: list.count, hash: list.hash, now: this.ctx.now() })
          : []),
        deleteItems(t, ids, k, 0),
        // The named writes stay: a replay after the delete answers what it answered, writing
        // nothing back (as on every store); the session's deletion or expiry purges them.
        { sql: `DELETE FROM ${t.lists} ${where.sql}`, params: where.params },
        markIfEmpty(t, ids),
      ]);
    });
  }

  async listArchives(sessionId: string, key: string): Promise<ArchiveInfo[]> {
    const ids = this.ids(sessionId, key);
    const { t } = this.ctx;
    const [rows] = await this.ctx.conn.sql.run([
      {
        sql: `SELECT a.archive_id, a.item_count, a.hash, a.first_position, a.archived_at FROM ${t.archives} a
          JOIN ${t.sessions} s ON s.user_id = a.user_id AND s.session_id = a.session_id
          WHERE a.user_id = ? AND a.session_id = ? AND a.list_key = ? AND s.state <> 2 AND (s.expires_at IS NULL OR s.expires_at > ?)
          ORDER BY a.archive_id`,
        params: [ids.user, ids.session, utf8(key), new Date(this.ctx.now())],
      },
    ]);
    return rowsOf(rows).map((r) => ({
      archiveId: String(r.archive_id),
      count: Number(r.item_count),
      hash: String(r.hash),
      archivedAt: r.archived_at as Date,
      offset: Number(r.first_position),
    }));
  }

  async getArchive<T>(sessionId: string, key: string, archiveId: string, page: PageOptions = {}) {
    const ids = this.ids(sessionId, key);
    checkPage(page);
    if (typeof archiveId !== 'string' || !ARCHIVE_ID_PATTERN.test(archiveId)) return undefined;
    const { t } = this.ctx;
    const [head, rows] = await this.ctx.conn.sql.run([
      {
        sql: `SELECT a.item_count, a.hash FROM ${t.archives} a
          JOIN ${t.sessions} s ON s.user_id = a.user_id AND s.session_id = a.session_id
          WHERE a.archive_id = ? AND a.user_id = ? AND a.session_id = ? AND a.list_key = ? AND s.state <> 2 AND (s.expires_at IS NULL OR s.expires_at > ?)`,
        params: [archiveId, ids.user, ids.session, utf8(key), new Date(this.ctx.now())],
      },
      {
        sql: `SELECT ai.body FROM ${t.archiveItems} ai JOIN ${t.archives} a ON a.archive_id = ai.archive_id
          WHERE ai.archive_id = ? AND a.user_id = ? AND a.session_id = ? AND a.list_key = ? ORDER BY ai.position`,
        params: [archiveId, ids.user, ids.session, utf8(key)],
      },
    ]);
    const a = rowsOf(head)[0];
    if (!a) return undefined;
    const items = rowsOf(rows).map((r) => parseBody(r.body, key, this.ctx.metrics)) as T[];
    const { from, to } = rangeOf(page, items.length);
    const hash = String(a.hash);
    const baseHash =
      from === 0 ? EMPTY_HASH : from === items.length ? hash : chainHash(EMPTY_HASH, items.slice(0, from));
    return { items: items.slice(from, to), count: items.length, hash, offset: from, baseHash };
  }

  // ---- keys, snapshots, commits --------------------------------------------------------------
}
