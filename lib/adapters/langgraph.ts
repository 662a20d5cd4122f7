/**
 * The LangGraph.js checkpoint saver over the typed HTTP client. A thread is a
 * session; in it, per checkpoint namespace:
 *
 *   i:["<ns>"]         the namespace's checkpoint index: a list, one entry per `put` (id, parent,
 *                      metadata, the original thread id and namespace): the authority
 *   c:["<ns>","<id>"]  the checkpoint (a value): its fields, its channel values, and the index
 *                      position its entry was appended at
 *   w:["<ns>","<id>"]  the checkpoint's pending writes: a list, one append per `putWrites`
 *
 * A `put` is one commit (the value, then the index append, preconditioned on the index's count and
 * hash); `getTuple` and `list` answer only checkpoints whose entry the index holds at the position
 * the value names, so a commit stopped between its two writes leaves a value nothing answers. A key
 * over the store's 128-byte limit keeps its kind and becomes `h.<sha256>` of the framework's key
 * (`i:h.<hex>`); a thread id that is not a valid session id (or is the memory session's,
 * `~memory`, which the memory store has to itself) becomes the session `h.<sha256>`; the
 * originals are kept in the index entries. Channel values are stored whole per checkpoint: a
 * channel absent from `newVersions` is carried from the parent checkpoint at the same version.
 *
 * The saver remembers, per thread and namespace, the index's count and hash and its latest
 * checkpoint, and the last checkpoints it wrote or read: in steady state `put` is 1 HTTP call,
 * `putWrites` 1, the latest `getTuple` 1 (one snapshot), `list` of 10 is 2 (the index's last 10
 * entries, then one snapshot of their values and writes). A first call on a thread may add a read.
 */

import { createHash, randomUUID } from 'node:crypto';
import type { RunnableConfig } from '@langchain/core/runnables';
import type * as Checkpointing from '@langchain/langgraph-checkpoint';
import type {
  BaseCheckpointSaver,
  ChannelVersions,
  Checkpoint,
  CheckpointListOptions,
  CheckpointMetadata,
  CheckpointPendingWrite,
  CheckpointTuple,
  PendingWrite,
  SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import type { HttpSessionStore } from '../client/index.js';
import { DEFAULTS } from '../contract/defaults.js';
import {
  AppendConflictError,
  type CommitFailure,
  CommitPartialError,
  CommitPreconditionError,
  CorruptValueError,
  PayloadTooLargeError,
  ValidationError,
} from '../contract/errors.js';
import { EMPTY_HASH } from '../contract/hash.js';
import { checkId, isMemorySession } from '../contract/ids.js';
import { MAX_DEPTH, parseIJson } from '../contract/json.js';
import { MAX_TURN_KEYS } from '../contract/limits.js';
import type { Snapshot } from '../contract/types.js';
import { keyPages, sessionIds } from './pages.js';

/** The form a framework key takes when it does not fit the store: `h.` + SHA-256 (hex). */
export const HASHED_PREFIX = 'h.';

/** A value as the serializer made it: its JSON when it made JSON, else its bytes in base64. */
type Packed = { readonly t: string; readonly j: unknown } | { readonly t: string; readonly b: string };

/** An entry of a namespace's checkpoint index: what `list` filters on and answers from. */
export interface IndexEntry {
  readonly id: string;
  readonly parent?: string;
  /** The thread id and namespace as the framework named them (keys may be hashed). */
  readonly thread: string;
  readonly ns: string;
  readonly metadata: Packed;
}

/** A stored checkpoint (the value `c:[ns,id]`). */
interface StoredCheckpoint {
  /** The index position its entry was appended at: the entry there must name it. */
  readonly pos: number;
  /** The checkpoint without `channel_values`. */
  readonly checkpoint: Omit<Checkpoint, 'channel_values'>;
  /** Its channel values, one serialized value per channel. */
  readonly values: Record<string, Packed>;
}

/** A pending write (an item of `w:[ns,id]`). */
interface StoredWrite {
  readonly task: string;
  readonly idx: number;
  readonly channel: string;
  readonly value: Packed;
  readonly path: string;
}

/** What the saver knows of one namespace's index. */
interface Line {
  count: number;
  hash: string;
  latest?: string;
  /** Index positions of recent checkpoints. */
  readonly positions: Map<string, number>;
}

type Kind = 'i' | 'c' | 'w';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The store key of a framework key (`parts`) of one kind: as it is when it fits, else hashed. */
export function storeKey(kind: Kind, parts: readonly string[]): string {
  const framework = JSON.stringify(parts);
  const key = `${kind}:${framework}`;
  try {
    return checkId('key', key);
  } catch {
    return `${kind}:${HASHED_PREFIX}${sha256(framework)}`;
  }
}

/**
 * The session of a thread: the thread id when it is a valid session id (not `h.…`, not the memory
 * session, which the memory store has to itself), else hashed.
 */
export function threadSession(threadId: string): string {
  if (!threadId.startsWith(HASHED_PREFIX) && !isMemorySession(threadId)) {
    try {
      return checkId('sessionId', threadId);
    } catch {}
  }
  return `${HASHED_PREFIX}${sha256(threadId)}`;
}

/** Entries whose checkpoints one snapshot fetches (a value and a list each). */
const FETCH_BATCH = MAX_TURN_KEYS / 2;
/** Index entries read per page when `list` pages back (and the first read without a `limit`). */
const INDEX_PAGE = 100;
/** Bytes a put's commit adds around its checkpoint and index entry (keys, ids, hashes), at most. */
const COMMIT_OVERHEAD = 2048;
/** Checkpoints and lists remembered per saver. */
const REMEMBERED = 256;

/** Keeps a map at `REMEMBERED` entries, forgetting the oldest. */
function bounded<K, V>(map: Map<K, V>, key: K, value: V) {
  map.delete(key);
  map.set(key, value);
  if (map.size > REMEMBERED) map.delete(map.keys().next().value as K);
}

/** Nesting a packed JSON value may have: the store's MAX_DEPTH, less the levels around it. */
const MAX_PACKED_DEPTH = MAX_DEPTH - 8;

/** Whether JSON nests deeper than `limit` levels. */
function deeper(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [v, depth] = top;
    if (v === null || typeof v !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

async function pack(serde: SerializerProtocol, value: unknown): Promise<Packed> {
  const [t, bytes] = await serde.dumpsTyped(value);
  if (t === 'json') {
    // The store takes I-JSON: anything else (a lone surrogate, a deeper nesting) travels as bytes.
    try {
      const j = parseIJson(bytes);
      if (!deeper(j, MAX_PACKED_DEPTH)) return { t, j };
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
    }
  }
  return { t, b: Buffer.from(bytes).toString('base64') };
}

const unpack = (serde: SerializerProtocol, p: Packed): Promise<unknown> =>
  serde.loadsTyped(p.t, 'j' in p ? JSON.stringify(p.j) : new Uint8Array(Buffer.from(p.b, 'base64')));

/** Options of the saver. */
export interface AgentStateSaverOptions {
  /** The typed client; its token's user owns the threads (use a user the saver has to itself). */
  readonly client: HttpSessionStore;
  /** The serializer; default LangGraph's `JsonPlusSerializer`. */
  readonly serde?: SerializerProtocol;
  /**
   * The API's largest request body (`BODY_LIMIT_BYTES`, as given to the client); default 4 MiB.
   * A checkpoint larger than this is saved on its own first (a direct upload), then committed.
   */
  readonly bodyLimitBytes?: number;
}

/** The LangGraph checkpoint saver on agent-state-store. */
export interface AgentStateSaver extends BaseCheckpointSaver {
  readonly client: HttpSessionStore;
  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined>;
  list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple>;
  put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig>;
  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void>;
  deleteThread(threadId: string): Promise<void>;
}

export type AgentStateSaverClass = new (options: AgentStateSaverOptions) => AgentStateSaver;

function requireThread(config: RunnableConfig, what: string): string {
  const thread = config.configurable?.thread_id;
  if (thread === undefined || thread === null)
    throw new Error(`${what}: the config's "configurable" has no "thread_id"`);
  return String(thread);
}

/** The failure of a commit on `key`'s list (its current count and hash), if that is why it failed. */
function listFailure(error: unknown, key: string): Extract<CommitFailure, { kind: 'list' }> | undefined {
  const failures =
    error instanceof CommitPreconditionError
      ? error.failures
      : error instanceof CommitPartialError
        ? error.failed
        : [];
  for (const f of failures) if (f.kind === 'list' && f.key === key && f.reason !== 'fenced') return f;
  return undefined;
}

/** What the saver takes of LangGraph's checkpoint module besides the class it extends. */
type Framework = Pick<
  typeof Checkpointing,
  | 'compareWritesSortKeys'
  | 'getCheckpointId'
  | 'maxChannelVersion'
  | 'TASKS'
  | 'WRITES_IDX_MAP'
  | 'writesSortKey'
>;

/** What the saver's workings ask of the saver itself: its serializer and its channel versions. */
type SaverHost = Pick<BaseCheckpointSaver, 'serde' | 'getNextVersion'>;

/** The pending writes as LangGraph replays them: one per (task, idx), in `writesSortKey` order. */
function ordered(lib: Framework, writes: readonly StoredWrite[]): StoredWrite[] {
  const byKey = new Map<string, StoredWrite>();
  for (const w of writes) {
    const key = JSON.stringify([w.task, w.idx]);
    // A regular write is kept as first written; a special one (error, interrupt…) as last.
    if (w.idx >= 0 && byKey.has(key)) continue;
    byKey.set(key, w);
  }
  const sortKey = (w: StoredWrite) => lib.writesSortKey(w.path, w.task, w.idx);
  return [...byKey.values()].sort((a, b) => lib.compareWritesSortKeys(sortKey(a), sortKey(b)));
}

/**
 * The saver's workings over the client: what it remembers of each thread, its reads and its
 * writes. The saver class (which extends LangGraph's, so is made where the module is loaded) hands
 * each of its calls to one of these.
 */
class SaverCore {
  readonly #host: SaverHost;
  readonly #lib: Framework;
  readonly #client: HttpSessionStore;
  readonly #bodyLimit: number;
  /** Per `session \0 ns`. */
  readonly #lines = new Map<string, Line>();
  /** Recent checkpoints, per `session \0 key`: the parents of the next puts. */
  readonly #checkpoints = new Map<string, StoredCheckpoint>();
  /** Counts of pending-write lists, per `session \0 key`. */
  readonly #writeCounts = new Map<string, number>();
  /** Writes to one list, one after the other (parallel tasks write to one checkpoint). */
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(host: SaverHost, lib: Framework, options: AgentStateSaverOptions) {
    this.#host = host;
    this.#lib = lib;
    this.#client = options.client;
    this.#bodyLimit = options.bodyLimitBytes ?? DEFAULTS.bodyLimitBytes;
  }

  /** The saver's serializer (as the saver has it now). */
  get #serde(): SerializerProtocol {
    return this.#host.serde;
  }

  #line(session: string, ns: string): Line | undefined {
    return this.#lines.get(`${session}\u0000${ns}`);
  }

  /** Records what an index read or write said: count, hash, positions (and the latest entry). */
  #learn(
    session: string,
    ns: string,
    page: { count: number; hash: string; offset?: number; items?: unknown[] },
  ) {
    const name = `${session}\u0000${ns}`;
    const line: Line = this.#lines.get(name) ?? { count: 0, hash: EMPTY_HASH, positions: new Map() };
    line.count = page.count;
    line.hash = page.hash;
    const items = (page.items ?? []) as IndexEntry[];
    for (const [i, entry] of items.entries()) bounded(line.positions, entry.id, (page.offset ?? 0) + i);
    if (items.length > 0 && (page.offset ?? 0) + items.length === page.count) line.latest = items.at(-1)?.id;
    bounded(this.#lines, name, line);
    return line;
  }

  async #serial<T>(name: string, run: () => Promise<T>): Promise<T> {
    const before = this.#queues.get(name) ?? Promise.resolve();
    const next = before.catch(() => {}).then(run);
    this.#queues.set(name, next);
    try {
      return await next;
    } finally {
      if (this.#queues.get(name) === next) this.#queues.delete(name);
    }
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const thread = config.configurable?.thread_id;
    if (thread === undefined || thread === null) return undefined;
    const session = threadSession(String(thread));
    const ns: string = config.configurable?.checkpoint_ns ?? '';
    const id = this.#lib.getCheckpointId(config);
    const index = storeKey('i', [ns]);
    const line = this.#line(session, ns);
    // The latest: the index's last entry, with the checkpoint this saver last knew as latest.
    // A checkpoint by id: its value names its index position, read in the same snapshot.
    const guess = id || line?.latest;
    const at = id ? line?.positions.get(id) : undefined;
    const last = id ? (line && at !== undefined ? Math.max(1, line.count - at) : 1) : 1;
    const snap = await this.#client.snapshot(session, {
      values: guess ? [storeKey('c', [ns, guess])] : [],
      lists: [{ key: index, last }, ...(guess ? [{ key: storeKey('w', [ns, guess]) }] : [])],
    });
    if (!snap.exists) return undefined;
    const page = listOf(snap, index);
    this.#learn(session, ns, page);
    if (!id) {
      const entry = page.items.at(-1) as IndexEntry | undefined;
      if (entry === undefined) return undefined;
      if (entry.id !== guess) return (await this.#fetch(session, [entry]))[0];
      const stored = await this.#valueOf(session, snap, storeKey('c', [ns, guess]));
      const writes = await this.#writesOf(session, snap, storeKey('w', [ns, guess]));
      return stored && this.#tuple(session, entry, stored, writes);
    }
    const stored = await this.#valueOf(session, snap, storeKey('c', [ns, id]));
    if (stored === undefined) return undefined;
    const entry = (
      stored.pos >= page.offset && stored.pos < page.offset + page.items.length
        ? page.items[stored.pos - page.offset]
        : (await this.#client.getList(session, index, { offset: stored.pos, limit: 1 })).items[0]
    ) as IndexEntry | undefined;
    // Only what the index holds: a value whose entry is not there was never committed whole.
    if (entry?.id !== id || entry.ns !== ns) return undefined;
    return this.#tuple(session, entry, stored, await this.#writesOf(session, snap, storeKey('w', [ns, id])));
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}) {
    let left = options.limit ?? Number.POSITIVE_INFINITY;
    if (left <= 0) return;
    const thread = config.configurable?.thread_id;
    const ns: string | undefined = config.configurable?.checkpoint_ns;
    const only = {
      id: (config.configurable?.checkpoint_id as string | undefined) || undefined,
      before: (options.before?.configurable?.checkpoint_id as string | undefined) || undefined,
      filter: options.filter,
    };
    const sessions =
      thread === undefined || thread === null ? sessionIds(this.#client) : one(threadSession(String(thread)));
    for await (const session of sessions) {
      for await (const tuple of this.#listSession(session, ns, left, only)) {
        yield tuple;
        if (--left <= 0) return;
      }
    }
  }

  /** The index keys of a session (one per namespace). */
  async #indexes(session: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const page of keyPages(this.#client, session, 'i:'))
      keys.push(...page.lists.map((l) => l.key));
    return keys;
  }

  /**
   * A session's checkpoints, newest first (by id across namespaces): the last entries of each
   * index in one snapshot, earlier pages as needed, then one snapshot per batch of checkpoints.
   */
  async *#listSession(
    session: string,
    ns: string | undefined,
    limit: number,
    only: { id?: string; before?: string; filter?: Record<string, unknown> },
  ): AsyncGenerator<CheckpointTuple> {
    const keys = ns === undefined ? await this.#indexes(session) : [storeKey('i', [ns])];
    if (keys.length === 0) return;
    const line = ns === undefined ? undefined : this.#line(session, ns);
    const at = only.before === undefined ? undefined : line?.positions.get(only.before);
    const window =
      Number.isFinite(limit) && only.filter === undefined && only.id === undefined
        ? limit + (line && at !== undefined ? line.count - at : 0)
        : INDEX_PAGE;
    const cursors: Cursor[] = [];
    for (let i = 0; i < keys.length; i += MAX_TURN_KEYS) {
      const chunk = keys.slice(i, i + MAX_TURN_KEYS);
      const snap = await this.#client.snapshot(session, {
        lists: chunk.map((key) => ({ key, last: window })),
      });
      if (!snap.exists) return;
      for (const key of chunk) {
        const page = listOf(snap, key);
        if (ns !== undefined) this.#learn(session, ns, page);
        cursors.push({ key, items: page.items as IndexEntry[], start: page.offset });
      }
    }
    const seen = new Set<string>();
    const batch: IndexEntry[] = [];
    let wanted = limit;
    for (;;) {
      const entry = await this.#next(session, cursors);
      if (entry !== undefined) {
        const name = JSON.stringify([entry.ns, entry.id]);
        if (seen.has(name) || !(await this.#matches(entry, only))) continue;
        seen.add(name);
        batch.push(entry);
        if (batch.length < Math.min(wanted, FETCH_BATCH)) continue;
      }
      if (batch.length > 0) {
        for (const tuple of await this.#fetch(session, batch.splice(0))) {
          yield tuple;
          wanted--;
        }
      }
      if (entry === undefined || wanted <= 0) return;
    }
  }

  /** The newest unread entry of the cursors (reading an earlier page where one ran out). */
  async #next(session: string, cursors: Cursor[]): Promise<IndexEntry | undefined> {
    for (const c of cursors) {
      while (c.items.length === 0 && c.start > 0) {
        const from = Math.max(0, c.start - INDEX_PAGE);
        const items: IndexEntry[] = [];
        while (from + items.length < c.start) {
          const page = await this.#client.getList<IndexEntry>(session, c.key, {
            offset: from + items.length,
            limit: c.start - from - items.length,
          });
          if (page.items.length === 0) break;
          items.push(...page.items);
        }
        c.items = items;
        c.start = from;
      }
    }
    let best: Cursor | undefined;
    for (const c of cursors) {
      const last = c.items.at(-1);
      const top = best?.items.at(-1);
      if (last !== undefined && (top === undefined || last.id > top.id)) best = c;
    }
    return best?.items.pop();
  }

  async #matches(
    entry: IndexEntry,
    only: { id?: string; before?: string; filter?: Record<string, unknown> },
  ) {
    if (only.id !== undefined && entry.id !== only.id) return false;
    if (only.before !== undefined && !(entry.id < only.before)) return false;
    if (only.filter === undefined || Object.keys(only.filter).length === 0) return true;
    const metadata = (await unpack(this.#serde, entry.metadata)) as Record<string, unknown>;
    return Object.entries(only.filter).every(([k, v]) => metadata?.[k] === v);
  }

  /** The tuples of index entries, in their order: one snapshot of their values and writes. */
  async #fetch(session: string, entries: readonly IndexEntry[]): Promise<CheckpointTuple[]> {
    const tuples: CheckpointTuple[] = [];
    for (let i = 0; i < entries.length; i += FETCH_BATCH) {
      const chunk = entries.slice(i, i + FETCH_BATCH);
      const snap = await this.#client.snapshot(session, {
        values: chunk.map((e) => storeKey('c', [e.ns, e.id])),
        lists: chunk.map((e) => ({ key: storeKey('w', [e.ns, e.id]) })),
      });
      for (const entry of chunk) {
        const stored = await this.#valueOf(session, snap, storeKey('c', [entry.ns, entry.id]));
        if (stored === undefined) continue;
        const writes = await this.#writesOf(session, snap, storeKey('w', [entry.ns, entry.id]));
        tuples.push(await this.#tuple(session, entry, stored, writes));
      }
    }
    return tuples;
  }

  /** A stored checkpoint of a snapshot (fetched when it came as a download); remembered. */
  async #valueOf(session: string, snap: Snapshot, key: string): Promise<StoredCheckpoint | undefined> {
    const v = snap.values.find((x) => x.key === key);
    if (v === undefined || 'absent' in v) return undefined;
    if ('corrupt' in v) throw new CorruptValueError(key);
    const stored = ('value' in v ? v.value : await this.#client.get(session, key)) as
      | StoredCheckpoint
      | undefined;
    if (stored !== undefined) bounded(this.#checkpoints, `${session}\u0000${key}`, stored);
    return stored;
  }

  /** A pending-write list of a snapshot (read whole when the snapshot had only its end). */
  async #writesOf(session: string, snap: Snapshot, key: string): Promise<StoredWrite[]> {
    const page = listOf(snap, key);
    bounded(this.#writeCounts, `${session}\u0000${key}`, page.count);
    if (page.offset === 0) return page.items as StoredWrite[];
    return (await this.#client.getList<StoredWrite>(session, key)).items;
  }

  async #tuple(
    session: string,
    entry: IndexEntry,
    stored: StoredCheckpoint,
    writes: readonly StoredWrite[],
  ): Promise<CheckpointTuple> {
    const channel_values: Record<string, unknown> = {};
    for (const [channel, p] of Object.entries(stored.values))
      channel_values[channel] = await unpack(this.#serde, p);
    const pendingWrites = await Promise.all(
      ordered(this.#lib, writes).map(
        async (w): Promise<CheckpointPendingWrite> => [w.task, w.channel, await unpack(this.#serde, w.value)],
      ),
    );
    const configurable = { thread_id: entry.thread, checkpoint_ns: entry.ns };
    const line = this.#line(session, entry.ns);
    if (line) bounded(line.positions, entry.id, stored.pos);
    return {
      config: { configurable: { ...configurable, checkpoint_id: entry.id } },
      checkpoint: { ...stored.checkpoint, channel_values } as Checkpoint,
      metadata: (await unpack(this.#serde, entry.metadata)) as CheckpointMetadata,
      pendingWrites,
      ...(entry.parent === undefined
        ? {}
        : { parentConfig: { configurable: { ...configurable, checkpoint_id: entry.parent } } }),
    };
  }

  /**
   * The parent checkpoint as stored: remembered, else read (a first put after another saver's),
   * with the index's end when this saver does not know it, so that the commit is not refused.
   */
  async #parent(session: string, ns: string, id: string): Promise<StoredCheckpoint | undefined> {
    const key = storeKey('c', [ns, id]);
    const remembered = this.#checkpoints.get(`${session}\u0000${key}`);
    if (remembered !== undefined) return remembered;
    const index = storeKey('i', [ns]);
    const known = this.#line(session, ns) !== undefined;
    const snap = await this.#client.snapshot(session, {
      values: [key],
      lists: known ? [] : [{ key: index, last: 1 }],
    });
    if (!known && snap.exists) this.#learn(session, ns, listOf(snap, index));
    return this.#valueOf(session, snap, key);
  }

  /** What a put stores: the checkpoint, its changed channels, the others carried from the parent. */
  async #stored(
    session: string,
    ns: string,
    parent: string | undefined,
    checkpoint: Checkpoint,
    newVersions: ChannelVersions,
  ): Promise<Omit<StoredCheckpoint, 'pos'>> {
    const { channel_values: channelValues, ...fields } = checkpoint;
    const versions = { ...fields.channel_versions };
    const values: Record<string, Packed> = {};
    const carried = Object.keys(versions).filter((c) => !Object.hasOwn(newVersions, c));
    const from =
      carried.length > 0 && parent !== undefined ? await this.#parent(session, ns, parent) : undefined;
    for (const [channel, version] of Object.entries(versions)) {
      if (Object.hasOwn(newVersions, channel)) {
        if (Object.hasOwn(channelValues ?? {}, channel))
          values[channel] = await pack(this.#serde, (channelValues as Record<string, unknown>)[channel]);
      } else {
        const kept = from?.values[channel];
        if (kept !== undefined && from?.checkpoint.channel_versions[channel] === version)
          values[channel] = kept;
      }
    }
    // A checkpoint of format < 4 takes its parent's pending sends as its TASKS channel.
    if (checkpoint.v < 4 && parent !== undefined) {
      const writes = await this.#client.getList<StoredWrite>(session, storeKey('w', [ns, parent]));
      const sends = ordered(this.#lib, writes.items).filter((w) => w.channel === this.#lib.TASKS);
      values[this.#lib.TASKS] = await pack(
        this.#serde,
        await Promise.all(sends.map((w) => unpack(this.#serde, w.value))),
      );
      const known = Object.values(versions);
      versions[this.#lib.TASKS] =
        known.length > 0 ? this.#lib.maxChannelVersion(...known) : this.#host.getNextVersion(undefined);
    }
    return { checkpoint: { ...fields, channel_versions: versions }, values };
  }

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const thread = requireThread(config, 'put');
    const ns: string = config.configurable?.checkpoint_ns ?? '';
    const parent = (config.configurable?.checkpoint_id as string | undefined) || undefined;
    const session = threadSession(thread);
    const index = storeKey('i', [ns]);
    const key = storeKey('c', [ns, checkpoint.id]);
    await this.#serial(`${session}\u0000${index}`, async () => {
      const stored = await this.#stored(session, ns, parent, checkpoint, newVersions);
      const entry: IndexEntry = {
        id: checkpoint.id,
        ...(parent === undefined ? {} : { parent }),
        thread,
        ns,
        metadata: await pack(this.#serde, metadata),
      };
      // A thread this saver has not seen is taken as new; a refusal names the index's state.
      const line = this.#line(session, ns);
      let base = { count: line?.count ?? 0, hash: line?.hash ?? EMPTY_HASH };
      // A checkpoint too large for a request body is saved first (the client uploads it
      // directly), then the commit appends its entry: the index still decides what is answered.
      // (A server with a lower limit refuses the commit with 413: then too.)
      const bytes = Buffer.byteLength(JSON.stringify(stored)) + Buffer.byteLength(JSON.stringify(entry));
      let alone = bytes > this.#bodyLimit - COMMIT_OVERHEAD;
      for (let attempt = 1; ; attempt++) {
        const value: StoredCheckpoint = { ...stored, pos: base.count };
        try {
          if (alone) await this.#client.save(session, key, value);
          const result = await this.#client.commit(session, {
            commitId: randomUUID(),
            values: alone ? [] : [{ key, value }],
            lists: [{ key: index, append: [entry], expectedCount: base.count, expectedHash: base.hash }],
          });
          // The answer names the index's new end (without it, the next put learns it from a refusal).
          const written = result.lists[0];
          if (written)
            this.#learn(session, ns, {
              count: written.count,
              hash: written.hash,
              offset: base.count,
              items: [entry],
            });
          bounded(this.#checkpoints, `${session}\u0000${key}`, value);
          return;
        } catch (error) {
          if (error instanceof PayloadTooLargeError && !alone) {
            alone = true;
            continue;
          }
          const now = listFailure(error, index);
          if (now === undefined || attempt >= 5) throw error;
          base = { count: now.count, hash: now.hash };
        }
      }
    });
    return { configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath?: string,
  ): Promise<void> {
    const thread = requireThread(config, 'putWrites');
    const id = config.configurable?.checkpoint_id as string | undefined;
    if (!id) throw new Error('putWrites: the config\'s "configurable" has no "checkpoint_id"');
    const ns: string = config.configurable?.checkpoint_ns ?? '';
    const session = threadSession(thread);
    const key = storeKey('w', [ns, id]);
    const items = await Promise.all(
      writes.map(
        async ([channel, value], idx): Promise<StoredWrite> => ({
          task: taskId,
          idx: Object.hasOwn(this.#lib.WRITES_IDX_MAP, channel)
            ? (this.#lib.WRITES_IDX_MAP[channel] as number)
            : idx,
          channel,
          value: await pack(this.#serde, value),
          path: taskPath ?? '',
        }),
      ),
    );
    if (items.length === 0) return;
    const name = `${session}\u0000${key}`;
    await this.#serial(name, async () => {
      let count = this.#writeCounts.get(name) ?? 0;
      for (let attempt = 1; ; attempt++) {
        try {
          const result = await this.#client.appendList(session, key, items, { expectedCount: count });
          bounded(this.#writeCounts, name, result.count);
          return;
        } catch (error) {
          if (!(error instanceof AppendConflictError) || attempt >= 5) throw error;
          count = error.count;
        }
      }
    });
  }

  async deleteThread(threadId: string): Promise<void> {
    const session = threadSession(String(threadId));
    await this.#client.delete(session);
    for (const map of [this.#lines, this.#checkpoints, this.#writeCounts])
      for (const name of map.keys()) if (name.startsWith(`${session}\u0000`)) map.delete(name);
  }
}

/** The saver class over LangGraph's checkpoint module (loaded by the entry as an optional peer). */
export function agentStateSaverClass(lib: typeof Checkpointing): AgentStateSaverClass {
  return class Saver extends lib.BaseCheckpointSaver implements AgentStateSaver {
    readonly client: HttpSessionStore;
    readonly #core: SaverCore;

    constructor(options: AgentStateSaverOptions) {
      super(options.serde);
      this.client = options.client;
      this.#core = new SaverCore(this, lib, options);
    }

    override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
      return this.#core.getTuple(config);
    }

    override async *list(config: RunnableConfig, options: CheckpointListOptions = {}) {
      yield* this.#core.list(config, options);
    }

    override async put(
      config: RunnableConfig,
      checkpoint: Checkpoint,
      metadata: CheckpointMetadata,
      newVersions: ChannelVersions,
    ): Promise<RunnableConfig> {
      return this.#core.put(config, checkpoint, metadata, newVersions);
    }

    override async putWrites(
      config: RunnableConfig,
      writes: PendingWrite[],
      taskId: string,
      taskPath?: string,
    ): Promise<void> {
      return this.#core.putWrites(config, writes, taskId, taskPath);
    }

    override async deleteThread(threadId: string): Promise<void> {
      return this.#core.deleteThread(threadId);
    }
  };
}

/** An index being read backwards: its entries read and not yet taken, from position `start`. */
interface Cursor {
  readonly key: string;
  items: IndexEntry[];
  start: number;
}

async function* one<T>(value: T): AsyncGenerator<T> {
  yield value;
}

/** A list of a snapshot (an absent list is the empty page). */
function listOf(snap: Snapshot, key: string) {
  const l = snap.lists.find((x) => x.key === key);
  if (l === undefined) return { items: [] as unknown[], count: 0, hash: EMPTY_HASH, offset: 0 };
  if ('corrupt' in l) throw new CorruptValueError(key);
  return l;
}
