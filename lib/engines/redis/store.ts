/**
 * The Redis engine (docs/backends.md, "Redis"): a `StateStore` whose every mutation is one
 * server-side script (lib/engines/redis/scripts.ts) on the session's keys, which share the hash tag
 * `{<user>/<session>}` with the session's lock key. An append, a conditional save and a whole
 * turn's commit are each one round trip and atomic; a commit is atomic across its keys.
 *
 * The checks of what callers pass are the contract's (lib/contract/), the same as the object
 * store's; the fencing and idempotency rules of the write path (docs/DESIGN.md, "The write path")
 * are evaluated inside the scripts.
 */
import { randomUUID } from 'node:crypto';
import { type BlobStore, EngineBlobs, type EngineUserStore } from '../../contract/blobs.js';
import { DEFAULTS } from '../../contract/defaults.js';
import {
  AppendConflictError,
  BackendError,
  type CommitFailure,
  CommitMismatchError,
  CommitPreconditionError,
  ContendedError,
  CorruptValueError,
  FencedError,
  IdempotencyKeyReusedError,
  ListPreconditionFailedError,
  ListTooShortError,
  LockConflictError,
  PreconditionFailedError,
  SessionNotFoundError,
  UnsupportedOperationError,
  ValidationError,
} from '../../contract/errors.js';
import { commitDigest, EMPTY_HASH, recordId, requestDigest } from '../../contract/hash.js';
import {
  checkId,
  checkPrefix,
  cursorOf,
  decodeId,
  encodeId,
  isMemorySession,
  keyPageOptions,
  namedUser,
  sessionCursorOf,
  sessionPageOptions,
  userSegment,
} from '../../contract/ids.js';
import { checkItems, jsonBody } from '../../contract/json.js';
import {
  ARCHIVE_ID_PATTERN,
  HASH_PREFIX,
  MAX_APPEND_ITEMS,
  MAX_SESSION_PAGE,
} from '../../contract/limits.js';
import {
  checkLeaseMs,
  checkOwner,
  checkToken,
  checkWaitMs,
  type Lease,
  type TokenAuthority,
  waitFor,
} from '../../contract/lock.js';
import { checkRevision } from '../../contract/revisions.js';
import {
  checkAppendOptions,
  checkCommit,
  checkListSaveOptions,
  checkPage,
  checkSnapshot,
  checkTruncateOptions,
} from '../../contract/turns.js';
import type {
  AppendOptions,
  ArchiveInfo,
  CommitRequest,
  CommitResult,
  KeyPage,
  ListAction,
  ListKeysOptions,
  ListPage,
  ListSaveOptions,
  ListWriteResult,
  MetricsSink,
  PageOptions,
  SaveOptions,
  SessionPage,
  Snapshot,
  SnapshotList,
  SnapshotRequest,
  SnapshotValue,
  StateStore,
  StoreCapabilities,
  TruncateOptions,
  TurnsOnOneEngine,
  WriteOptions,
} from '../../contract/types.js';
import { DAY_MS } from '../../util/units.js';
import { callScript, checkRedisServer, defineScripts, type RedisClient, redisError } from './client.js';
import { chainStates, hexOf, int, type Reply, resultOf, snapshotRequest, str } from './replies.js';
import { LIST_SESSIONS, SESSION_SCRIPTS, sessionScript, TOUCH_USER } from './scripts.js';

/** Marks a Redis lock made on a client: a store on the same client fences inside its scripts. */
export const REDIS_LOCK_CLIENT: unique symbol = Symbol('redis lock client');

/** Options of `createRedisStateStore`. */
export interface RedisStateStoreOptions {
  /** A connected ioredis client (Standalone or Cluster; `connectRedis`). */
  readonly client: RedisClient;
  /** Prefix of every key; default `agent-state/`. Without `{` or `}` (the hash tag is the store's). */
  readonly prefix?: string;
  /** Days a session lives after its last activity (the TTL of every key of a session); default 30. */
  readonly retentionDays?: number;
  /** The TTL (and the user's listing) is refreshed at most once per this many ms; default 1 hour. */
  readonly keepAliveMs?: number;
  /** Largest item of a list; default 64 MiB (the request body limit bounds it first). */
  readonly maxValueBytes?: number;
  readonly metrics?: MetricsSink;
  /** The lock as the authority over tokens (as `createStateStore`'s); a Redis lock on the same client is checked inside the scripts. */
  readonly authority?: TokenAuthority;
  /** Where workspaces and snapshots live (BLOB_BACKEND; lib/contract/blobs.ts); without it they are 501. */
  readonly blobs?: BlobStore;
}

/** The capabilities of the Redis engine. */
export const REDIS_CAPABILITIES: StoreCapabilities = {
  versioning: true,
  revisions: true,
  conditionalOverwrite: true,
  ranges: false,
  presignedTransfer: false,
  atomicCommits: true,
};

/** Creates the Redis engine over a client. */
export function createRedisStateStore(options: RedisStateStoreOptions): StateStore {
  const prefix = checkPrefix(options.prefix ?? DEFAULTS.prefix);
  if (/[{}]/.test(prefix)) throw new ValidationError('prefix', 'must not contain { or } on Redis');
  const retentionDays = options.retentionDays ?? DEFAULTS.retentionDays;
  if (!(retentionDays > 0)) throw new ValidationError('retentionDays', 'must be positive');
  const { client } = options;
  defineScripts(client, {
    ...Object.fromEntries(
      Object.entries(SESSION_SCRIPTS).map(([name, body]) => [
        name,
        { lua: sessionScript(body), keys: 1, ...(READ_SCRIPTS.has(name) ? { reads: true } : {}) },
      ]),
    ),
    // Its only writes drop expired entries of the listing: no WAIT after it.
    assListSessions: { lua: LIST_SESSIONS, keys: 2, reads: true },
    assTouchUser: { lua: TOUCH_USER, keys: 2 },
  });
  const ctx: Ctx = {
    client,
    prefix,
    ttlMs: Math.round(retentionDays * DAY_MS),
    keepAliveMs: options.keepAliveMs ?? DEFAULTS.keepAliveMs,
    maxValueBytes: options.maxValueBytes ?? DEFAULTS.maxValueBytes,
    metrics: options.metrics ?? { count: () => {} },
    blobs: new EngineBlobs(options.blobs, 'redis'),
  };
  return {
    capabilities: REDIS_CAPABILITIES,
    forUser: (userId, o = {}) => {
      const user = namedUser(userId);
      const authority = o.authority ?? options.authority;
      return ctx.blobs.wrap(new RedisUserStore(ctx, user, authority), user, authority);
    },
    checkReady: async () => {
      await checkRedisServer(client);
    },
  };
}

/** The session scripts that only read (never followed by WAIT). */
const READ_SCRIPTS = new Set<string>([
  'assGetList',
  'assPeekList',
  'assSnapshot',
  'assListKeys',
  'assGetArchive',
] satisfies Array<keyof typeof SESSION_SCRIPTS>);

interface Ctx {
  readonly client: RedisClient;
  readonly prefix: string;
  readonly ttlMs: number;
  readonly keepAliveMs: number;
  readonly maxValueBytes: number;
  readonly metrics: MetricsSink;
  readonly blobs: EngineBlobs;
}

class RedisUserStore implements EngineUserStore, TurnsOnOneEngine {
  private readonly user: string;

  constructor(
    private readonly ctx: Ctx,
    private readonly userId: string | null,
    private readonly authority: TokenAuthority | undefined,
  ) {
    this.user = userSegment(userId);
  }

  // ---- names -----------------------------------------------------------------------------------

  /** The key base of a session: every key of it starts so (one hash tag: one slot). */
  private base(sessionId: string): string {
    return `${this.ctx.prefix}{${this.user}/${encodeId('sessionId', sessionId)}}:`;
  }

  private userKeys(): [string, string] {
    const tag = `${this.ctx.prefix}{${this.user}}:`;
    return [`${tag}s`, `${tag}a`];
  }

  private ids(sessionId: string, key?: string): void {
    checkId('sessionId', sessionId);
    if (key !== undefined) checkId('key', key);
  }

  // ---- calls -----------------------------------------------------------------------------------

  /** The TTL of a session's keys: 0 (none) for the memory session, which never expires. */
  private ttlOf(sessionId: string): number {
    return isMemorySession(sessionId) ? 0 : this.ctx.ttlMs;
  }

  /** What every write's request carries: the token and how it is fenced, the expiry, the incarnation. */
  private async common(sessionId: string, token: number | undefined): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {
      ttl: this.ttlOf(sessionId),
      keep: this.ctx.keepAliveMs,
      inc: randomUUID().slice(0, 8),
    };
    if (token === undefined) return out;
    out.tok = token;
    const { authority } = this;
    if (!authority) return out;
    if ((authority as { [REDIS_LOCK_CLIENT]?: unknown })[REDIS_LOCK_CLIENT] === this.ctx.client) {
      out.auth = 'lock';
      return out;
    }
    // Another lock: read first (one round trip more), the script compares.
    const grant = await authority.grantOf({ userId: this.userId, sessionId });
    out.auth = 'given';
    if (grant) {
      out.gt = grant.token;
      out.gl = grant.live;
    }
    return out;
  }

  /**
   * Runs a session script. A write that created the session or moved its expiry (the script says
   * so at `flagAt` of its answer: at most once per keep-alive interval) then records the session's
   * activity in its user's listing (another slot: one more round trip, that rarely).
   */
  private async run(
    name: keyof typeof SESSION_SCRIPTS,
    sessionId: string,
    request: Record<string, unknown>,
    rest: readonly string[] = [],
    flagAt?: number,
  ): Promise<Reply> {
    const base = this.base(sessionId);
    const reply = (await callScript(this.ctx.client, name, [
      `${base}m`,
      base,
      JSON.stringify(request),
      ...rest,
    ])) as Reply;
    if (flagAt !== undefined && reply[0] === 'ok' && int(reply[flagAt]) > 0) await this.touchUser(sessionId);
    return reply;
  }

  private touchUser(sessionId: string): Promise<unknown> {
    return callScript(this.ctx.client, 'assTouchUser', [
      ...this.userKeys(),
      encodeId('sessionId', sessionId),
      String(Date.now()),
    ]);
  }

  /** After a write that emptied or deleted the session: out of the user's listing. */
  private async unlist(sessionId: string): Promise<void> {
    const [s, a] = this.userKeys();
    const segment = encodeId('sessionId', sessionId);
    await Promise.all([this.ctx.client.zrem(s, segment), this.ctx.client.zrem(a, segment)]).catch((error) => {
      throw redisError(error);
    });
  }

  /** The typed error of a refusal a script answered. */
  private refusal(reply: Reply, token: number | undefined): Error {
    const [code] = reply;
    if (code === 'fenced') {
      this.ctx.metrics.count('fencedWrites');
      const seen = int(reply[1]);
      return new FencedError(token ?? -1, seen < 0 ? null : seen);
    }
    if (code === 'pre')
      return new PreconditionFailedError(
        reply[1] === null ? null : str(reply[1]),
        reply[1] === null ? null : reply[2] == null ? 1 : int(reply[2]),
      );
    if (code === 'conflict') {
      this.ctx.metrics.count('appendConflicts');
      return new AppendConflictError(int(reply[1]), str(reply[2]));
    }
    if (code === 'reused') return new IdempotencyKeyReusedError();
    if (code === 'lpre') return new ListPreconditionFailedError(str(reply[1]));
    return new BackendError(`redis: unexpected answer ${String(code)}`, false);
  }

  // ---- single values ---------------------------------------------------------------------------

  async get<T>(sessionId: string, key: string): Promise<T | undefined> {
    return (await this.getVersioned<T>(sessionId, key))?.value;
  }

  async getVersioned<T>(sessionId: string, key: string) {
    this.ids(sessionId, key);
    const [body, version, revision] = await this.ctx.client
      .hmget(`${this.base(sessionId)}v:${key}`, 'b', 'ver', 'rev')
      .catch((e) => {
        throw redisError(e);
      });
    if (body == null || version == null) return undefined;
    return { value: this.parse<T>(body, key), version, revision: Number(revision ?? 1) };
  }

  private parse<T>(body: string, key: string): T {
    try {
      return JSON.parse(body) as T;
    } catch (error) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(key, { cause: error });
    }
  }

  async save(sessionId: string, key: string, value: unknown, options: SaveOptions = {}) {
    this.ids(sessionId, key);
    checkToken(options.token, 'optional');
    const body = jsonBody(value);
    checkRevision('ifRevision', options.ifRevision);
    if ((options.ifVersion !== undefined || options.ifRevision !== undefined) && options.ifAbsent)
      throw new ValidationError(
        options.ifVersion !== undefined ? 'ifVersion' : 'ifRevision',
        'cannot be combined with ifAbsent',
      );
    if (
      options.ifVersion !== undefined &&
      (typeof options.ifVersion !== 'string' || options.ifVersion === '')
    )
      throw new ValidationError('ifVersion', 'must be a version (an etag)');
    const request = {
      ...(await this.common(sessionId, options.token)),
      key,
      ...(options.ifVersion !== undefined ? { ifv: options.ifVersion } : {}),
      ...(options.ifAbsent ? { ifa: true } : {}),
      ...(options.ifRevision !== undefined ? { ifr: options.ifRevision } : {}),
    };
    const reply = await this.run('assSave', sessionId, request, [body], 3);
    if (reply[0] !== 'ok') throw this.refusal(reply, options.token);
    return { version: str(reply[1]), revision: int(reply[2]) };
  }

  async deleteKey(sessionId: string, key: string, options: WriteOptions = {}) {
    this.ids(sessionId, key);
    checkToken(options.token, 'optional');
    const reply = await this.run('assDeleteKey', sessionId, {
      ...(await this.common(sessionId, options.token)),
      key,
    });
    if (reply[0] !== 'ok') throw this.refusal(reply, options.token);
    if (int(reply[1]) === 1) await this.unlist(sessionId);
  }

  // ---- lists -----------------------------------------------------------------------------------

  async appendList(sessionId: string, key: string, items: readonly unknown[], options: AppendOptions) {
    this.ids(sessionId, key);
    checkItems(items, 1, MAX_APPEND_ITEMS, this.ctx.maxValueBytes);
    const { expectedCount, expectedHash, writeId } = checkAppendOptions(options);
    const bodies = items.map((item) => jsonBody(item));
    const common = await this.common(sessionId, options.token);
    const wid =
      writeId === undefined
        ? undefined
        : recordId(writeId, requestDigest({ append: items, expectedCount, expectedHash }));
    for (let attempt = 0; ; attempt++) {
      // Without an expected hash, the hash the items follow is read first (one round trip more).
      // (its hash at the expected count, so that a replay of these items is recognised too).
      let base = expectedHash;
      if (base === undefined) {
        const st = await this.stat(sessionId, key, Number.MAX_SAFE_INTEGER, expectedCount);
        base = st.hashAt ?? st.hash;
      }
      const request = {
        ...common,
        key,
        ec: expectedCount,
        bh: base,
        hs: chainStates(base, items).join(''),
        ...(expectedHash !== undefined ? { eh: expectedHash } : {}),
        ...(wid !== undefined ? { wid } : {}),
      };
      const reply = await this.run('assAppend', sessionId, request, bodies, 4);
      if (reply[0] === 'ok') return this.listResult(reply);
      if (reply[0] !== 'stale') throw this.refusal(reply, options.token);
      if (attempt >= 3) throw new ContendedError('the list is too contended; nothing was written; retry');
    }
  }

  private listResult(reply: Reply): ListWriteResult {
    return { action: str(reply[1]) as ListAction, count: int(reply[2]), hash: str(reply[3]) };
  }

  /** A list's count and hash, and its items from `from` on. */
  /** A list's count and hash, its hash at item `at` (null past its end), and its items from `from` on. */
  private async stat(sessionId: string, key: string, from = Number.MAX_SAFE_INTEGER, at?: number) {
    const reply = await this.run('assPeekList', sessionId, {
      key,
      from,
      ...(at !== undefined ? { at } : {}),
    });
    return {
      count: int(reply[0]),
      hash: str(reply[1]),
      hashAt: reply[2] == null ? undefined : str(reply[2]),
      items: reply.slice(3).map(str),
    };
  }

  async saveList(sessionId: string, key: string, items: readonly unknown[], options: ListSaveOptions = {}) {
    this.ids(sessionId, key);
    checkItems(items, 0, Number.MAX_SAFE_INTEGER, this.ctx.maxValueBytes);
    checkListSaveOptions(options);
    const request = {
      ...(await this.common(sessionId, options.token)),
      key,
      ph: hexOf(EMPTY_HASH) + chainStates(EMPTY_HASH, items).join(''),
      ...(options.ifHash !== undefined ? { ifh: options.ifHash } : {}),
    };
    const reply = await this.run(
      'assSaveList',
      sessionId,
      request,
      items.map((i) => jsonBody(i)),
      4,
    );
    if (reply[0] !== 'ok') throw this.refusal(reply, options.token);
    if (reply[1] === 'rewritten') {
      this.ctx.metrics.count('listRewrites');
      await this.offload(sessionId, [key]);
    }
    return this.listResult(reply);
  }

  async truncateList(sessionId: string, key: string, options: TruncateOptions) {
    this.ids(sessionId, key);
    const { count, expectedHash, writeId } = checkTruncateOptions(options);
    const wid =
      writeId === undefined ? undefined : recordId(writeId, requestDigest({ truncate: count, expectedHash }));
    const common = await this.common(sessionId, options.token);
    for (let attempt = 0; ; attempt++) {
      // The archive's chain hashes are Node's: the items it removes are read first.
      const peek = await this.stat(sessionId, key, count);
      const request = {
        ...common,
        key,
        count,
        eh: expectedHash,
        pre: peek.hash,
        ah: chainStates(
          EMPTY_HASH,
          peek.items.map((i) => JSON.parse(i) as unknown),
        ).join(''),
        ...(wid !== undefined ? { wid } : {}),
      };
      const reply = await this.run('assTruncate', sessionId, request, [], 4);
      if (reply[0] === 'ok') {
        if (reply[1] === 'truncated') {
          this.ctx.metrics.count('archivedLists');
          await this.offload(sessionId, [key]);
        }
        return this.listResult(reply);
      }
      if (reply[0] === 'short') throw new ListTooShortError(count, int(reply[1]));
      if (reply[0] !== 'stale') throw this.refusal(reply, options.token);
      if (attempt >= 3) throw new ContendedError('the list is too contended; nothing was written; retry');
    }
  }

  async getList<T>(sessionId: string, key: string, page: PageOptions = {}): Promise<ListPage<T>> {
    this.ids(sessionId, key);
    checkPage(page);
    const reply = await this.run('assGetList', sessionId, { key, ...page });
    return {
      count: int(reply[0]),
      hash: str(reply[1]),
      offset: int(reply[2]),
      baseHash: str(reply[3]),
      items: reply.slice(4).map((item) => this.parse<T>(str(item), key)),
    };
  }

  async deleteList(sessionId: string, key: string, options: WriteOptions = {}) {
    this.ids(sessionId, key);
    checkToken(options.token, 'optional');
    const reply = await this.run('assDeleteList', sessionId, {
      ...(await this.common(sessionId, options.token)),
      key,
    });
    if (reply[0] !== 'ok') throw this.refusal(reply, options.token);
    await this.offload(sessionId, [key]);
    if (int(reply[1]) === 1) await this.unlist(sessionId);
  }

  async listArchives(sessionId: string, key: string): Promise<ArchiveInfo[]> {
    this.ids(sessionId, key);
    const raw = await this.ctx.client.lrange(`${this.base(sessionId)}ar:${key}`, 0, -1).catch((e) => {
      throw redisError(e);
    });
    return raw.map((text) => {
      const a = JSON.parse(text) as {
        archiveId: string;
        count: number;
        hash: string;
        archivedAt: number;
        offset: number;
      };
      return {
        archiveId: String(a.archiveId),
        count: a.count,
        hash: a.hash,
        archivedAt: new Date(a.archivedAt),
        offset: a.offset,
      };
    });
  }

  async getArchive<T>(sessionId: string, key: string, archiveId: string, page: PageOptions = {}) {
    this.ids(sessionId, key);
    checkPage(page);
    if (typeof archiveId !== 'string' || !ARCHIVE_ID_PATTERN.test(archiveId)) return undefined;
    const reply = await this.run('assGetArchive', sessionId, { key, id: archiveId, ...page });
    if (int(reply[0]) === 0) return undefined;
    if (int(reply[0]) === 2) return this.offloadedPage<T>(sessionId, key, str(reply[3]), page);
    return {
      count: int(reply[1]),
      hash: str(reply[2]),
      offset: int(reply[3]),
      baseHash: str(reply[4]),
      items: reply.slice(5).map((item) => this.parse<T>(str(item), key)),
    } satisfies ListPage<T>;
  }

  // ---- archives in the blob store (docs/DESIGN.md, "What lives where") -------------------------

  /**
   * Moves the archives of `keys` still in RAM to the blob store (after a write that archived): each
   * is written there first (create-only, named by its content's SHA-256), then referred to by its
   * record and its items dropped (OFFLOAD_ARCHIVE). Best effort: an archive not moved stays
   * readable in Redis, and the next archiving write of its key moves it.
   */
  private async offload(sessionId: string, keys: readonly string[]): Promise<void> {
    const blobs = this.ctx.blobs.archives;
    if (!blobs || keys.length === 0) return;
    const base = this.base(sessionId);
    try {
      for (const key of new Set(keys)) {
        const records = await this.ctx.client.lrange(`${base}ar:${key}`, 0, -1);
        for (const text of records) {
          const meta = JSON.parse(text) as { archiveId: number | string; blob?: string };
          if (meta.blob) continue;
          const id = String(meta.archiveId);
          const [reply, hashes] = await Promise.all([
            this.run('assGetArchive', sessionId, { key, id }),
            this.ctx.client.lrange(`${base}ah:${id}:${key}`, 0, -1),
          ]);
          if (int(reply[0]) !== 1) continue;
          const body = `{"v":1,"count":${int(reply[1])},"hash":${JSON.stringify(str(reply[2]))},"hashes":${JSON.stringify(hashes)},"items":[${reply.slice(5).map(str).join(',')}]}`;
          const blob = await blobs.putArchive(this.userId, sessionId, key, body);
          await this.run('assOffloadArchive', sessionId, { key, id, blob });
        }
      }
    } catch {
      this.ctx.metrics.count('persistenceFailures');
    }
  }

  /** A page of an archive in the blob store, as GET_ARCHIVE pages one in RAM. */
  private async offloadedPage<T>(
    sessionId: string,
    key: string,
    blob: string,
    page: PageOptions,
  ): Promise<ListPage<T>> {
    const body = await this.ctx.blobs.archives?.getArchive(this.userId, sessionId, key, blob);
    if (body === undefined) throw new CorruptValueError(key);
    const stored = this.parse<{ count: number; hash: string; hashes: string[]; items: T[] }>(body, key);
    const n = stored.count;
    const from = page.last !== undefined ? Math.max(0, n - page.last) : Math.min(page.offset ?? 0, n);
    const to =
      page.last !== undefined || page.limit === undefined ? n - 1 : Math.min(n - 1, from + page.limit - 1);
    return {
      count: n,
      hash: stored.hash,
      offset: from,
      baseHash: from > 0 ? `${HASH_PREFIX}${stored.hashes[from - 1]}` : EMPTY_HASH,
      items: to >= from ? stored.items.slice(from, to + 1) : [],
    };
  }

  // ---- keys, snapshots, commits ------------------------------------------------------------

  async listKeys(sessionId: string, options: ListKeysOptions = {}): Promise<KeyPage> {
    this.ids(sessionId);
    const { prefix, after, limit } = keyPageOptions(options);
    const reply = await this.run('assListKeys', sessionId, {
      prefix,
      limit,
      ...(after !== undefined ? { after } : {}),
    });
    if (int(reply[0]) === 0) throw new SessionNotFoundError(sessionId);
    const rows: Reply[] = [];
    for (let i = 1; i < reply.length; i += 8) rows.push(reply.slice(i, i + 8));
    const more = rows.length > limit;
    const page = rows.slice(0, limit);
    const values: KeyPage['values'] = [];
    const lists: KeyPage['lists'] = [];
    for (const [key, ver, size, vmt, rev, n, hash, lmt] of page) {
      if (ver !== null)
        values.push({
          key: str(key),
          etag: str(ver),
          revision: rev == null ? 1 : int(rev),
          size: int(size),
          lastModified: new Date(int(vmt)),
        });
      if (n !== null)
        lists.push({ key: str(key), count: int(n), hash: str(hash), lastModified: new Date(int(lmt)) });
    }
    const last = page.at(-1)?.[0];
    return { values, lists, ...(more && last != null ? { nextCursor: cursorOf(str(last)) } : {}) };
  }

  async snapshot(sessionId: string, request: SnapshotRequest): Promise<Snapshot> {
    this.ids(sessionId);
    const checked = checkSnapshot(request);
    return this.snapshotOf(await this.run('assSnapshot', sessionId, snapshotRequest(checked)), 0, checked);
  }

  /** A snapshot from a script's answer, from `from` on. */
  private snapshotOf(reply: Reply, from: number, checked: ReturnType<typeof checkSnapshot>): Snapshot {
    const { values, lists, page } = checked;
    if (int(reply[from]) === 0) return { exists: false, values: [], lists: [] };
    let at = from + 1;
    const next = () => reply[at++] ?? null;
    const answered = (
      key: string,
      ver: string | number | null,
      body: string | number | null,
      rev: string | number | null,
    ): SnapshotValue => {
      if (ver === null || body === null) return { key, absent: true };
      try {
        return {
          key,
          value: JSON.parse(str(body)) as unknown,
          etag: str(ver),
          revision: rev == null ? 1 : int(rev),
        };
      } catch {
        this.ctx.metrics.count('corruptObjects');
        return { key, corrupt: true };
      }
    };
    const gotValues: SnapshotValue[] = values.map((key) => answered(key, next(), next(), next()));
    const gotLists: SnapshotList[] = lists.map(({ key }) => {
      const count = int(next());
      const hash = str(next());
      const offset = int(next());
      const baseHash = str(next());
      const n = int(next());
      const raw = reply.slice(at, at + n);
      at += n;
      try {
        return { key, count, hash, offset, baseHash, items: raw.map((i) => JSON.parse(str(i)) as unknown) };
      } catch {
        this.ctx.metrics.count('corruptObjects');
        return { key, corrupt: true };
      }
    });
    let nextCursor: string | undefined;
    if (page) {
      const n = int(next());
      type Row = [string, string | number | null, string | number | null, string | number | null];
      const rows: Row[] = [];
      for (let i = 0; i < n; i++) rows.push([str(next()), next(), next(), next()]);
      if (rows.length > page.limit) nextCursor = cursorOf(rows[page.limit - 1]?.[0] as string);
      for (const [key, ver, body, rev] of rows.slice(0, page.limit)) {
        if (values.includes(key) || ver === null) continue;
        gotValues.push(answered(key, ver, body, rev));
      }
    }
    return {
      exists: true,
      values: gotValues,
      lists: gotLists,
      ...(nextCursor !== undefined ? { nextCursor } : {}),
    };
  }

  async commit(sessionId: string, request: CommitRequest): Promise<CommitResult> {
    return this.commitWith(sessionId, request);
  }

  /** A commit, and with `release` (an owner) the release of its lease in the same script. */
  private async commitWith(
    sessionId: string,
    request: CommitRequest,
    release?: string,
  ): Promise<CommitResult> {
    this.ids(sessionId);
    checkCommit(request);
    const { commitId, token } = request;
    const changes = { values: request.values ?? [], lists: request.lists ?? [] };
    const digest = commitDigest(request);
    const common = await this.common(sessionId, token);
    const bodies: string[] = [];
    const values = changes.values.map((v) => {
      if ('delete' in v) return { k: v.key, op: 'd' };
      bodies.push(jsonBody(v.value));
      return {
        k: v.key,
        op: 's',
        ...(v.ifVersion !== undefined ? { ifv: v.ifVersion } : {}),
        ...(v.ifAbsent ? { ifa: true } : {}),
        ...(v.ifRevision !== undefined ? { ifr: v.ifRevision } : {}),
      };
    });
    const truncates = changes.lists.filter((l) => 'truncate' in l);
    for (let attempt = 0; ; attempt++) {
      // A truncate's archive hashes are Node's: the items it removes are read first (one round trip).
      const peeks = new Map(
        await Promise.all(
          truncates.map(
            async (l) =>
              [l.key, await this.stat(sessionId, l.key, (l as { truncate: number }).truncate)] as const,
          ),
        ),
      );
      const items: string[] = [];
      const lists = changes.lists.map((l) => {
        if ('append' in l) {
          items.push(...l.append.map((i) => jsonBody(i)));
          return {
            k: l.key,
            op: 'a',
            ec: l.expectedCount,
            eh: l.expectedHash,
            n: l.append.length,
            hs: chainStates(l.expectedHash, l.append).join(''),
          };
        }
        if ('replace' in l) {
          items.push(...l.replace.map((i) => jsonBody(i)));
          return {
            k: l.key,
            op: 'r',
            n: l.replace.length,
            ph: hexOf(EMPTY_HASH) + chainStates(EMPTY_HASH, l.replace).join(''),
            ...(l.expectedHash !== undefined ? { eh: l.expectedHash } : {}),
          };
        }
        const peek = peeks.get(l.key) as { hash: string; items: string[] };
        return {
          k: l.key,
          op: 't',
          n: 0,
          tc: l.truncate,
          eh: l.expectedHash,
          pre: peek.hash,
          ah: chainStates(
            EMPTY_HASH,
            peek.items.map((i) => JSON.parse(i) as unknown),
          ).join(''),
        };
      });
      const reply = await this.run(
        'assCommit',
        sessionId,
        {
          ...common,
          cid: commitId,
          dig: digest,
          values,
          lists,
          ...(release !== undefined ? { release } : {}),
        },
        [...bodies, ...items],
        2,
      );
      const [code] = reply;
      if (code === 'ok' || code === 'replay') {
        // A replace or a truncate may have archived.
        if (code === 'ok')
          await this.offload(
            sessionId,
            changes.lists.filter((l) => !('append' in l)).map((l) => l.key),
          );
        if (code === 'ok' && int(reply[3]) === 1) await this.unlist(sessionId);
        return resultOf(commitId, changes, str(reply[1]));
      }
      if (code === 'mismatch') throw new CommitMismatchError(commitId, 'commit', '');
      if (code === 'pre')
        throw new CommitPreconditionError(commitId, JSON.parse(str(reply[1])) as CommitFailure[]);
      if (code !== 'stale') throw this.refusal(reply, token);
      if (attempt >= 3) throw new ContendedError('the lists are too contended; nothing was written; retry');
    }
  }

  // ---- a turn in two round trips, with the Redis lock of this client ---------------------------

  /** Whether the authority is the Redis lock on this client (its key read inside the scripts). */
  private get ownLock(): boolean {
    return (
      (this.authority as { [REDIS_LOCK_CLIENT]?: unknown } | undefined)?.[REDIS_LOCK_CLIENT] ===
      this.ctx.client
    );
  }

  beginTurn(
    sessionId: string,
    lease: { readonly leaseMs?: number; readonly waitMs?: number; readonly owner?: string },
    request: SnapshotRequest,
  ): Promise<{ lease: Lease; snapshot: Snapshot }> | undefined {
    if (!this.ownLock) return undefined;
    this.ids(sessionId);
    const checked = checkSnapshot(request);
    const leaseMs = checkLeaseMs(lease.leaseMs);
    const waitMs = checkWaitMs(lease.waitMs);
    const owner = lease.owner === undefined ? randomUUID() : checkOwner(lease.owner);
    const body = {
      ttl: this.ttlOf(sessionId),
      lease: { owner, explicit: lease.owner !== undefined, ms: leaseMs },
      ...snapshotRequest(checked),
    };
    return waitFor(
      async () => {
        const reply = await this.run('assBeginTurn', sessionId, body);
        if (reply[0] === 'held') throw new LockConflictError(str(reply[1]), new Date(int(reply[2])));
        const granted: Lease = { owner, token: int(reply[1]), expiresAt: new Date(int(reply[2])), leaseMs };
        return { lease: granted, snapshot: this.snapshotOf(reply, 3, checked) };
      },
      waitMs,
      Date.now,
    );
  }

  commitAndRelease(
    sessionId: string,
    request: CommitRequest,
    owner: string,
  ): Promise<CommitResult> | undefined {
    if (!this.ownLock || request?.token === undefined) return undefined;
    checkOwner(owner);
    return this.commitWith(sessionId, request, owner);
  }

  // ---- sessions ------------------------------------------------------------------------------

  async exists(sessionId: string): Promise<boolean> {
    this.ids(sessionId);
    return (
      (await this.ctx.client.exists(`${this.base(sessionId)}k`).catch((e) => {
        throw redisError(e);
      })) === 1
    );
  }

  async delete(sessionId: string, options: WriteOptions = {}) {
    this.ids(sessionId);
    checkToken(options.token, 'optional');
    const request = await this.common(sessionId, options.token);
    const [reply] = await Promise.all([
      this.run('assDeleteSession', sessionId, request),
      this.unlist(sessionId),
    ]);
    if (reply[0] !== 'ok') throw this.refusal(reply, options.token);
  }

  async deleteAllSessions() {
    let cursor: string | null = null;
    do {
      const page: SessionPage = await this.listSessionIds({
        limit: MAX_SESSION_PAGE,
        ...(cursor ? { cursor } : {}),
      });
      for (const { sessionId } of page.sessions) await this.delete(sessionId);
      cursor = page.nextCursor;
    } while (cursor);
  }

  async listSessionIds(options: { limit?: number; cursor?: string } = {}): Promise<SessionPage> {
    const { limit, after } = sessionPageOptions(options);
    const reply = (await callScript(this.ctx.client, 'assListSessions', [
      ...this.userKeys(),
      JSON.stringify({ limit, ttl: this.ctx.ttlMs, ...(after !== undefined ? { after } : {}) }),
    ])) as Reply;
    const listed = int(reply[0]);
    const sessions = [];
    let last: string | undefined;
    for (let i = 1; i < reply.length; i += 2) {
      last = str(reply[i]);
      sessions.push({ sessionId: decodeId('sessionId', last), lastActivity: new Date(int(reply[i + 1])) });
    }
    // The last id listed, even if dropped as expired: the next page starts after it.
    return {
      sessions,
      nextCursor: listed === limit && last !== undefined ? sessionCursorOf(last) : null,
    };
  }

  // ---- direct transfers (workspaces are the blob store's: lib/contract/blobs.ts) ----------------

  /** Values live in Redis, up to the request body limit: no direct transfer of them. */
  private unsupported(operation: string): never {
    throw new UnsupportedOperationError(
      operation,
      this.ctx.blobs.configured ? 'redis (values live in Redis)' : this.ctx.blobs.backend,
    );
  }

  async createValueUpload(sessionId: string, key: string): Promise<never> {
    this.ids(sessionId, key);
    return this.unsupported('direct transfer');
  }
  async commitValueUpload(sessionId: string, key: string): Promise<never> {
    this.ids(sessionId, key);
    return this.unsupported('direct transfer');
  }
  /** Items and values are read with the list or the value: nothing to locate. */
  async locateListItem(sessionId: string, key: string) {
    this.ids(sessionId, key);
    return undefined;
  }
  /**
   * A value is read inline: one too large for an answer has no URL to be read from, so it is
   * `unsupported` (501, as on object storage that cannot presign), never answered as absent.
   */
  async locateValue(sessionId: string, key: string) {
    this.ids(sessionId, key);
    if ((await this.getVersioned(sessionId, key)) === undefined) return undefined;
    return this.unsupported('direct transfer');
  }
}
