import type { RowDataPacket } from 'mysql2/promise';
import {
  type CommitFailure,
  CommitMismatchError,
  CommitPreconditionError,
  CorruptValueError,
} from '../../contract/errors.js';
import { chainHash, commitDigest, EMPTY_HASH } from '../../contract/hash.js';
import { cursorOf, keyOfCursor } from '../../contract/ids.js';
import { jsonBody } from '../../contract/json.js';
import { checkCommit, checkSnapshot } from '../../contract/turns.js';
import type {
  CommitList,
  CommitRequest,
  CommitResult,
  ListWriteResult,
  Snapshot,
  SnapshotList,
  SnapshotRequest,
  SnapshotValue,
} from '../../contract/types.js';
import { ListOps } from './lists.js';
import type { Ids, ListRow, SessionRow, ValueRow } from './rows.js';
import {
  archive,
  deleteItems,
  hashAt,
  insertItems,
  isLive,
  listRow,
  markIfEmpty,
  selectHashAt,
  selectList,
  selectSession,
  selectValues,
  sessionRow,
  touch,
  upsertList,
  valueRows,
} from './rows.js';
import { commitInBatches, hashesAfter, keyRange, maxToken, newVersion, parseBody, utf8 } from './scope.js';
import type { Result, Tx } from './sql.js';
import { rowsOf, type Statement } from './sql.js';

/** The turn operations of a user's store. */
export class TurnOps extends ListOps {
  /**
   * A turn's reads as ONE SELECT (so one consistent view: a commit is seen whole or not at all):
   * the session's row, the values named, the value page, each list's row and its last items.
   */
  async snapshot(sessionId: string, request: SnapshotRequest): Promise<Snapshot> {
    const ids = this.ids(sessionId);
    const { values, lists, page } = checkSnapshot(request);
    const { t } = this.ctx;
    const now = new Date(this.ctx.now());
    const where = 'user_id = ? AND session_id = ?';
    const parts: Statement[] = [
      {
        sql: `SELECT 's' AS kind, CAST(NULL AS BINARY(1)) AS k, CAST(NULL AS SIGNED) AS n, CAST(NULL AS CHAR) AS body, CAST(NULL AS CHAR) AS tag, CAST(NULL AS CHAR) AS tag2
          FROM ${t.sessions} WHERE ${where} AND state = 1 AND (expires_at IS NULL OR expires_at > ?)`,
        params: [ids.user, ids.session, now],
      },
    ];
    if (values.length > 0)
      parts.push({
        sql: `SELECT 'v', value_key, revision, body, version, NULL FROM ${t.values} WHERE ${where} AND value_key IN (${values.map(() => '?').join(', ')})`,
        params: [ids.user, ids.session, ...values.map(utf8)],
      });
    let pageAfter: string | undefined;
    if (page) {
      pageAfter = page.cursor === undefined ? undefined : keyOfCursor(page.cursor, 'valuePage.cursor');
      const range = keyRange('value_key', page.prefix ?? '', pageAfter);
      parts.push({
        sql: `(SELECT 'p', value_key, revision, body, version, NULL FROM ${t.values} WHERE ${where}${range.sql} ORDER BY value_key LIMIT ?)`,
        params: [ids.user, ids.session, ...range.params, page.limit + 1],
      });
    }
    for (const { key, last } of lists) {
      const k = utf8(key);
      const range = last === undefined ? '' : ' AND i.position >= l.item_count - ? - 1';
      parts.push(
        {
          sql: `SELECT 'l', list_key, item_count, NULL, hash, NULL FROM ${t.lists} WHERE ${where} AND list_key = ?`,
          params: [ids.user, ids.session, k],
        },
        {
          sql: `SELECT 'i', i.list_key, i.position, i.body, i.hash_after, NULL FROM ${t.items} i
            JOIN ${t.lists} l ON l.user_id = i.user_id AND l.session_id = i.session_id AND l.list_key = i.list_key
            WHERE i.user_id = ? AND i.session_id = ? AND i.list_key = ?${range}`,
          params: [ids.user, ids.session, k, ...(last === undefined ? [] : [last])],
        },
      );
    }
    const [rows] = await this.ctx.conn.sql.run([
      {
        sql: `${parts.map((p) => p.sql).join('\nUNION ALL\n')} ORDER BY kind, k, n`,
        params: parts.flatMap((p) => [...(p.params ?? [])]),
      },
    ]);
    const all = rowsOf(rows);
    if (!all.some((r) => r.kind === 's')) return { exists: false, values: [], lists: [] };
    const { metrics } = this.ctx;
    const answered = (key: string, r: RowDataPacket | undefined): SnapshotValue => {
      if (!r) return { key, absent: true };
      try {
        return { key, value: JSON.parse(String(r.body)), etag: String(r.tag), revision: Number(r.n) };
      } catch {
        metrics.count('corruptObjects');
        return { key, corrupt: true };
      }
    };
    const named = new Map(
      all.filter((r) => r.kind === 'v').map((r) => [(r.k as Buffer).toString('utf8'), r]),
    );
    const paged = all.filter((r) => r.kind === 'p');
    const more = page !== undefined && paged.length > page.limit;
    const shown = paged.slice(0, page?.limit ?? 0);
    const out: SnapshotValue[] = values.map((key) => answered(key, named.get(key)));
    for (const r of shown) {
      const key = (r.k as Buffer).toString('utf8');
      if (!values.includes(key)) out.push(answered(key, r));
    }
    const listsOut = lists.map(({ key, last }): SnapshotList => {
      const head = all.find((r) => r.kind === 'l' && (r.k as Buffer).toString('utf8') === key);
      if (!head) return { key, items: [], count: 0, hash: EMPTY_HASH, offset: 0, baseHash: EMPTY_HASH };
      const itemRows = all
        .filter((r) => r.kind === 'i' && (r.k as Buffer).toString('utf8') === key)
        .map((r) => ({ item_count: head.n, hash: head.tag, position: r.n, body: r.body, hash_after: r.tag }));
      try {
        return {
          key,
          ...this.pageOf(itemRows as unknown as RowDataPacket[], key, last === undefined ? {} : { last }),
        };
      } catch (error) {
        if (error instanceof CorruptValueError) return { key, corrupt: true };
        throw error;
      }
    });
    const lastShown = shown.at(-1);
    return {
      exists: true,
      values: out,
      lists: listsOut,
      ...(more && lastShown ? { nextCursor: cursorOf((lastShown.k as Buffer).toString('utf8')) } : {}),
    };
  }

  async commit(sessionId: string, request: CommitRequest): Promise<CommitResult> {
    const ids = this.ids(sessionId);
    checkCommit(request);
    const { commitId, token } = request;
    const digest = commitDigest(request);
    const { t } = this.ctx;
    const fence = this.fence(sessionId, ids, token);
    return this.ctx.conn.sql.transaction(async (tx) => {
      // ---- 1. one round trip of locking reads ---------------------------------------------------
      const read = await this.readCommit(tx, ids, request, fence.reads);
      const { session, live } = read;
      // ---- 2. a replay: the recorded answer, or the same id with another body -------------------
      if (live && read.record) {
        if (String(read.record.digest) !== digest) throw new CommitMismatchError(commitId, 'commit', '');
        return JSON.parse(String(read.record.answer)) as CommitResult;
      }
      // ---- 3. fencing: a stale token writes nothing at all -----------------------------------
      const grant = await fence.check(
        read.lease,
        session?.token,
        ...(request.values ?? []).map((v) => read.value(v.key)?.token),
        ...read.lists.map((l) => l?.token),
      );
      if (grant?.commit?.commitId === commitId && grant.commit.digest !== digest)
        throw new CommitMismatchError(commitId, 'commit', '');
      // ---- 4. every precondition, before any write -------------------------------------------
      const failures = commitFailures(request, read);
      if (failures.length > 0) throw new CommitPreconditionError(commitId, failures);
      // ---- 5. the writes, and the record, in the same transaction ------------------------------
      const { writes, answer, deletes } = this.commitWrites(ids, request, read);
      // A commit that changes nothing (deletes of absent values, unchanged lists) writes nothing.
      if (writes.length === 0) return answer;
      await commitInBatches(tx, [
        ...touch(t, ids, session, this.touching(sessionId, token)),
        ...writes,
        ...(deletes ? [markIfEmpty(t, ids)] : []),
        {
          sql: `INSERT INTO ${t.commits} (user_id, session_id, commit_id, digest, answer, committed_at) VALUES (?, ?, ?, ?, ?, ?)`,
          params: [ids.user, ids.session, commitId, digest, JSON.stringify(answer), new Date(this.ctx.now())],
        },
      ]);
      return answer;
    });
  }

  /**
   * A commit's first round trip: the session's row, the commit's record, the values' and lists'
   * rows (locked), what a truncate needs (the hash at its cut, the items it removes), the lease.
   */
  private async readCommit(
    tx: Tx,
    ids: Ids,
    request: CommitRequest,
    leaseReads: readonly Statement[],
  ): Promise<CommitRead> {
    const { t } = this.ctx;
    const values = request.values ?? [];
    const lists = request.lists ?? [];
    const truncates = lists.filter((l) => 'truncate' in l);
    const got = await tx.run([
      selectSession(t, ids),
      {
        sql: `SELECT digest, answer FROM ${t.commits} WHERE user_id = ? AND session_id = ? AND commit_id = ?`,
        params: [ids.user, ids.session, request.commitId],
      },
      ...(values.length
        ? [
            selectValues(
              t,
              ids,
              values.map((v) => utf8(v.key)),
            ),
          ]
        : []),
      ...lists.map((l) => selectList(t, ids, utf8(l.key))),
      ...truncates.flatMap((l) => {
        const keep = (l as { truncate: number }).truncate;
        return [selectHashAt(t, ids, utf8(l.key), keep - 1), this.selectItemsFrom(ids, utf8(l.key), keep)];
      }),
      ...leaseReads,
    ]);
    let at = 0;
    const session = sessionRow(rowsOf(got[at++]));
    const record = rowsOf(got[at++])[0];
    const live = isLive(session, this.ctx.now());
    const valueRowsByKey = values.length ? valueRows(rowsOf(got[at++])) : new Map<string, ValueRow>();
    const listRows = lists.map(() => {
      const row = listRow(rowsOf(got[at++]));
      return live ? row : undefined;
    });
    const truncated = new Map(
      truncates.map((l) => {
        const base = rowsOf(got[at++]);
        const removed = rowsOf(got[at++]);
        return [l.key, { base, removed }] as const;
      }),
    );
    return {
      session,
      live,
      record,
      value: (key) => (live ? valueRowsByKey.get(key) : undefined),
      lists: listRows,
      truncated,
      lease: leaseReads.length ? got[at] : undefined,
    };
  }

  /** The statements of a commit that passed its checks, and its answer. */
  private commitWrites(ids: Ids, request: CommitRequest, read: CommitRead) {
    const { commitId, token } = request;
    const writes: Statement[] = [];
    const answer: CommitResult = { commitId, values: [], lists: [] };
    let deletes = false;
    for (const v of request.values ?? []) {
      const k = utf8(v.key);
      if ('delete' in v) {
        if (read.value(v.key)) {
          writes.push(this.deleteValue(ids, k));
          deletes = true;
        }
        answer.values.push({ key: v.key });
        continue;
      }
      const version = newVersion();
      const current = read.value(v.key);
      writes.push(this.writeValue(ids, k, jsonBody(v.value), version, current, token, commitId));
      answer.values.push({ key: v.key, etag: version, revision: current ? current.revision + 1 : 1 });
    }
    (request.lists ?? []).forEach((l, i) => {
      const { statements, result } = this.listChange(ids, l, read.lists[i], read, request);
      writes.push(...statements);
      answer.lists.push({ key: l.key, ...result });
    });
    return { writes, answer, deletes };
  }

  /** One list change of a commit that passed its checks: its statements (none: unchanged) and result. */
  private listChange(
    ids: Ids,
    l: CommitList,
    row: ListRow | undefined,
    read: CommitRead,
    request: CommitRequest,
  ): { statements: Statement[]; result: ListWriteResult } {
    const { t } = this.ctx;
    const { token } = request;
    const k = utf8(l.key);
    const count = row?.count ?? 0;
    const hash = row?.hash ?? EMPTY_HASH;
    if ('replace' in l) {
      const replaced = this.replaceList(ids, k, row, l.replace, l.replace.map(jsonBody), token);
      // Replacing a list by what it holds changes nothing (nor does [] over an absent list).
      if (replaced.result.action === 'unchanged' || (!row && l.replace.length === 0))
        return { statements: [], result: { ...replaced.result, action: 'unchanged' } };
      return replaced;
    }
    const statements: Statement[] = [];
    let result: ListWriteResult;
    if ('append' in l) {
      const hashes = hashesAfter(hash, l.append);
      result = {
        action: row ? 'appended' : 'created',
        count: count + l.append.length,
        hash: hashes.at(-1) as string,
      };
      statements.push(...insertItems(t, ids, k, l.expectedCount, l.append.map(jsonBody), hashes));
    } else {
      if (l.truncate === count) return { statements: [], result: { action: 'unchanged', count, hash } };
      const { base, removed } = read.truncated.get(l.key) as {
        base: RowDataPacket[];
        removed: RowDataPacket[];
      };
      const cut = removed.map((r) => parseBody(r.body, l.key, this.ctx.metrics));
      result = { action: 'truncated', count: l.truncate, hash: hashAt(base, l.truncate - 1) as string };
      this.ctx.metrics.count('archivedLists');
      statements.push(
        ...archive(t, ids, k, {
          from: l.truncate,
          count: cut.length,
          hash: chainHash(EMPTY_HASH, cut),
          now: this.ctx.now(),
        }),
        deleteItems(t, ids, k, l.truncate),
      );
    }
    statements.push(
      upsertList(t, ids, k, {
        ...result,
        token: maxToken(row?.token ?? null, token),
        writeId: `c.${request.commitId}`.slice(0, 64),
        now: this.ctx.now(),
      }),
    );
    return { statements, result };
  }
}

/** What a commit's first round trip read. */
interface CommitRead {
  readonly session: SessionRow | undefined;
  /** The session holds state now (else every row read is a leftover: absent). */
  readonly live: boolean;
  /** The commit's record, when this commit id was applied. */
  readonly record: RowDataPacket | undefined;
  value(key: string): ValueRow | undefined;
  /** Each list change's row, in the request's order. */
  readonly lists: ReadonlyArray<ListRow | undefined>;
  /** Per truncate: the hash at its cut, and the items it removes. */
  readonly truncated: ReadonlyMap<string, { base: RowDataPacket[]; removed: RowDataPacket[] }>;
  readonly lease: Result | undefined;
}

/** Every failing precondition of a commit, on what was read (docs/DESIGN.md, "Snapshots and commits"). */
function commitFailures(request: CommitRequest, read: CommitRead): CommitFailure[] {
  const failures: CommitFailure[] = [];
  for (const v of request.values ?? []) {
    if ('delete' in v) continue;
    const row = read.value(v.key);
    if (
      (v.ifAbsent && row) ||
      (v.ifVersion !== undefined && row?.version !== v.ifVersion) ||
      (v.ifRevision !== undefined && row?.revision !== v.ifRevision)
    )
      failures.push({
        kind: 'value',
        key: v.key,
        reason: 'version',
        currentVersion: row?.version ?? null,
        currentRevision: row?.revision ?? null,
      });
  }
  (request.lists ?? []).forEach((l, i) => {
    const row = read.lists[i];
    const count = row?.count ?? 0;
    const hash = row?.hash ?? EMPTY_HASH;
    const fail = (reason: 'count' | 'hash') =>
      failures.push({ kind: 'list', key: l.key, reason, count, hash });
    if ('append' in l) {
      if (count !== l.expectedCount) fail('count');
      else if (hash !== l.expectedHash) fail('hash');
    } else if ('replace' in l) {
      // A replace whose list already holds exactly its items is a replay (unchanged), not a failure.
      if (
        l.expectedHash !== undefined &&
        l.expectedHash !== hash &&
        chainHash(EMPTY_HASH, l.replace) !== hash
      )
        fail('hash');
    } else if (hash !== l.expectedHash) fail('hash');
    else if (l.truncate > count) fail('count');
  });
  return failures;
}
