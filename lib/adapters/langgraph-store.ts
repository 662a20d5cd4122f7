/**
 * The LangGraph.js long-term memory store (a `BaseStore`: items by namespace, shared across
 * threads) over the typed HTTP client. Every item is one value of the user's memory session
 * (`MEMORY_SESSION`, `~memory`: the session that never expires, lib/contract/ids.ts), at the key
 *
 *   m␠<label>␠<label>␠…␠␠<key>        (␠: a space)
 *
 * with each label and the key escaped (`%`, space, `#`, control characters and lone surrogates
 * become `%xx` or `%uxxxx`). So distinct (namespace, key) pairs have distinct keys; the items under
 * a namespace prefix are exactly the keys that start with the prefix's encoding; and keys sort as
 * their namespaces do, label by label (by the bytes of the escaped labels), then by key. A label whose escaped form is over 48 bytes is
 * written `#` and 32 characters of its SHA-256 (base64url), a key that would not fit the store's
 * 128-byte keys likewise; a namespace whose encoding leaves no room for a hashed key (over 92 bytes)
 * is refused with LangGraph's `InvalidNamespaceError`. The value holds the namespace and the key as
 * given, the item's value and its times: an item reads whole from one value, and a read checks
 * that it names what was asked for.
 *
 * HTTP calls: a batch's gets, 1 snapshot per 100; `put` of a new item 1 (a create-only save), of one
 * this store read or wrote 1 (a save on its version), else 3 (a refused create, a read, the save);
 * `delete` 1; `search` 1 snapshot of a page of values (`offset + limit` of them without a filter,
 * up to 100 a page; with a filter, twice the items wanted, doubling up to 100);
 * `listNamespaces`, a page per 1,000 items under the prefix (and 1 snapshot for namespaces with a
 * hashed label). Semantic search (`query`) and indexing (`put`'s `index`) are refused with
 * `UnsupportedOperationError`: the store keeps no embeddings.
 */

import { createHash } from 'node:crypto';
import type * as Checkpointing from '@langchain/langgraph-checkpoint';
import type {
  BaseStore,
  GetOperation,
  Item,
  ListNamespacesOperation,
  MatchCondition,
  Operation,
  OperationResults,
  PutOperation,
  SearchItem,
  SearchOperation,
} from '@langchain/langgraph-checkpoint';
import type { HttpSessionStore } from '../client/index.js';
import {
  CorruptValueError,
  PreconditionFailedError,
  SessionNotFoundError,
  UnsupportedOperationError,
} from '../contract/errors.js';
import { MEMORY_SESSION } from '../contract/ids.js';
import { LIMITS, MAX_KEY_PAGE, MAX_TURN_KEYS } from '../contract/limits.js';
import type { KeyPage, Snapshot } from '../contract/types.js';
import { mapLimited } from '../util/map-limited.js';

/** What the store is named in its refusals. */
const NAME = 'AgentStateMemoryStore';
/** The start of every item's key (the kind of key: memory items). */
const ITEMS = 'm';
/** What ends each label, and the namespace before the key. */
const SEPARATOR = ' ';
/** The mark of a hashed label or key (escaped everywhere else). */
const HASHED = '#';
/** Labels whose escaped form is longer are hashed. */
export const LABEL_BYTES = 48;
/** Characters of a hash (base64url of SHA-256: 192 bits). */
const HASH_CHARS = 32;
/** The longest namespace encoding (`m␠` and its labels): room is left for a separator and a hashed key. */
export const NAMESPACE_BYTES = LIMITS.key - SEPARATOR.length - HASHED.length - HASH_CHARS;
/**
 * Values read in the first page when a filter decides what is answered (at least this, else
 * twice the items wanted), doubling each page up to 100: each value read costs a GET, each page
 * a LIST and one HTTP call.
 */
const FILTER_PAGE_FIRST = 10;
/** Puts of one batch in flight at once. */
const PUT_CONCURRENCY = 8;
/** Attempts of a put that keeps finding the item changed. */
const PUT_ATTEMPTS = 5;
/** Versions remembered per store. */
const REMEMBERED = 1024;

/** An item as stored: the namespace and key as given, the value, and its times (ISO 8601). */
interface StoredItem {
  readonly namespace: string[];
  readonly key: string;
  readonly value: Record<string, unknown>;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** What the store knows of a stored item: its version and when it was created. */
interface Known {
  readonly version: string;
  readonly createdAt: string;
}

const ESCAPED =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: escaping control characters is the point
  /[%# \u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** A label or key with `%`, space, `#`, control characters and lone surrogates escaped. */
export function escapeLabel(text: string): string {
  return text.replace(ESCAPED, (c) => {
    const code = c.charCodeAt(0);
    return code > 0xff ? `%u${code.toString(16).padStart(4, '0')}` : `%${code.toString(16).padStart(2, '0')}`;
  });
}

/** The text of an escaped label. */
export function unescapeLabel(text: string): string {
  return text.replace(/%u([0-9a-f]{4})|%([0-9a-f]{2})/g, (_, wide: string | undefined, narrow: string) =>
    String.fromCharCode(Number.parseInt(wide ?? narrow, 16)),
  );
}

const bytes = (text: string) => Buffer.byteLength(text);
const hashed = (escaped: string) =>
  `${HASHED}${createHash('sha256').update(escaped).digest('base64url').slice(0, HASH_CHARS)}`;

/** A label as written in keys: escaped, or hashed when that is over `LABEL_BYTES`. */
function encodeLabel(label: string): string {
  const escaped = escapeLabel(label);
  return bytes(escaped) > LABEL_BYTES ? hashed(escaped) : escaped;
}

/** The start of the keys of every item under `prefix` (`m␠` and each label and a separator). */
export function prefixKey(prefix: readonly string[]): string {
  return `${ITEMS}${SEPARATOR}${prefix.map((l) => `${encodeLabel(l)}${SEPARATOR}`).join('')}`;
}

/** An item's key; undefined when its namespace is too long to store (`NAMESPACE_BYTES`). */
export function itemKey(namespace: readonly string[], key: string): string | undefined {
  const start = prefixKey(namespace);
  if (bytes(start) > NAMESPACE_BYTES) return undefined;
  const escaped = escapeLabel(key);
  const whole = `${start}${SEPARATOR}${escaped}`;
  return bytes(whole) <= LIMITS.key ? whole : `${start}${SEPARATOR}${hashed(escaped)}`;
}

/**
 * The namespace an item's key names: its encoding (`m␠…␠`) and its labels (undefined for a hashed
 * label, which only the item's value holds); undefined for a key that is no item's.
 */
export function namespaceOfKey(
  key: string,
): { readonly start: string; readonly labels: ReadonlyArray<string | undefined> } | undefined {
  const head = `${ITEMS}${SEPARATOR}`;
  if (!key.startsWith(head)) return undefined;
  const labels: Array<string | undefined> = [];
  let at = head.length;
  while (!key.startsWith(SEPARATOR, at)) {
    const end = key.indexOf(SEPARATOR, at);
    if (end < 0) return undefined;
    const label = key.slice(at, end);
    labels.push(label.startsWith(HASHED) ? undefined : unescapeLabel(label));
    at = end + 1;
  }
  return labels.length === 0 ? undefined : { start: key.slice(0, at), labels };
}

const FILTER_OPERATORS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin']);

/** Whether a filter's value is a set of operators (`{ $gt: 3 }`): an object of operator members only. */
function isOperators(wanted: unknown): wanted is Record<string, unknown> {
  return (
    typeof wanted === 'object' &&
    wanted !== null &&
    Object.keys(wanted).every((name) => FILTER_OPERATORS.has(name))
  );
}

/** One field's test, as LangGraph's `InMemoryStore` makes it: equality, or every operator given. */
function fieldMatches(actual: unknown, wanted: unknown): boolean {
  if (!isOperators(wanted)) return actual === wanted;
  return Object.entries(wanted).every(([operator, operand]) => {
    switch (operator) {
      case '$eq':
        return actual === operand;
      case '$ne':
        return actual !== operand;
      case '$gt':
        return Number(actual) > Number(operand);
      case '$gte':
        return Number(actual) >= Number(operand);
      case '$lt':
        return Number(actual) < Number(operand);
      case '$lte':
        return Number(actual) <= Number(operand);
      case '$in':
        return Array.isArray(operand) && operand.includes(actual);
      default: // $nin
        return !Array.isArray(operand) || !operand.includes(actual);
    }
  });
}

/** Whether an item's value passes a `search` filter (its top-level fields, as `InMemoryStore` reads them). */
export function matchesFilter(value: Record<string, unknown>, filter: Record<string, unknown>): boolean {
  return Object.entries(filter).every(([field, wanted]) =>
    fieldMatches(Object.hasOwn(value, field) ? value[field] : undefined, wanted),
  );
}

/** Whether `namespace` starts with `prefix`, label by label. */
const startsWith = (namespace: readonly string[], prefix: readonly string[]) =>
  prefix.length <= namespace.length && prefix.every((label, i) => namespace[i] === label);

/** Whether a namespace meets a `listNamespaces` condition (`*` matches any one label), as `InMemoryStore` decides. */
function meets(namespace: readonly string[], condition: MatchCondition): boolean {
  const { path } = condition;
  if (path.length > namespace.length) return false;
  const from = condition.matchType === 'prefix' ? 0 : namespace.length - path.length;
  return path.every((label, i) => label === '*' || namespace[from + i] === label);
}

/** Namespaces in the order of their labels, each by its UTF-8 bytes; a namespace before its extensions. */
function compareNamespaces(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const order = Buffer.compare(Buffer.from(a[i] as string), Buffer.from(b[i] as string));
    if (order !== 0) return order;
  }
  return a.length - b.length;
}

const isGet = (op: Operation): op is GetOperation => 'key' in op && 'namespace' in op && !('value' in op);
const isPut = (op: Operation): op is PutOperation => 'value' in op;
const isSearch = (op: Operation): op is SearchOperation => 'namespacePrefix' in op;
const isListNamespaces = (op: Operation): op is ListNamespacesOperation => 'matchConditions' in op;

/** The stored item of a key (`CorruptValueError` when the value is not one). */
function storedItem(key: string, value: unknown): StoredItem {
  const v = value as Partial<StoredItem> | null;
  const ok =
    typeof v === 'object' &&
    v !== null &&
    Array.isArray(v.namespace) &&
    v.namespace.every((l) => typeof l === 'string') &&
    typeof v.key === 'string' &&
    typeof v.createdAt === 'string' &&
    typeof v.updatedAt === 'string' &&
    'value' in v;
  if (!ok) throw new CorruptValueError(key);
  return v as StoredItem;
}

function toItem(stored: StoredItem): Item {
  return {
    value: stored.value,
    key: stored.key,
    namespace: stored.namespace,
    createdAt: new Date(stored.createdAt),
    updatedAt: new Date(stored.updatedAt),
  };
}

/** Options of the store. */
export interface AgentStateMemoryStoreOptions {
  /** The typed client; its token's user owns the memory (its memory session). */
  readonly client: HttpSessionStore;
}

/** The LangGraph long-term memory store on agent-state-store. */
export interface AgentStateMemoryStore extends BaseStore {
  readonly client: HttpSessionStore;
}

export type AgentStateMemoryStoreClass = new (options: AgentStateMemoryStoreOptions) => AgentStateMemoryStore;

/** What the store takes of LangGraph's checkpoint module besides the class it extends. */
type Framework = Pick<typeof Checkpointing, 'InvalidNamespaceError' | 'validateNamespace'>;

/** The store's workings over the client (the class, made where LangGraph is loaded, hands each batch here). */
class MemoryCore {
  readonly #lib: Framework;
  readonly #client: HttpSessionStore;
  /** Versions and creation times of items read or written, by key (the oldest forgotten first). */
  readonly #known = new Map<string, Known>();

  constructor(lib: Framework, options: AgentStateMemoryStoreOptions) {
    this.#lib = lib;
    this.#client = options.client;
  }

  #remember(key: string, known: Known | undefined) {
    this.#known.delete(key);
    if (known === undefined) return;
    this.#known.set(key, known);
    if (this.#known.size > REMEMBERED) this.#known.delete(this.#known.keys().next().value as string);
  }

  /** Refuses, before anything is read or written, what the batch asks that the store cannot do. */
  #check(operations: readonly Operation[]) {
    for (const op of operations) {
      if ('namespace' in op) this.#lib.validateNamespace(op.namespace, { allowReservedRoot: true });
      if (isSearch(op)) {
        if (op.namespacePrefix.length > 0)
          this.#lib.validateNamespace(op.namespacePrefix, { allowReservedRoot: true });
        // A query is what makes LangGraph's stores rank by embeddings (an empty one does not).
        if (op.query)
          throw new UnsupportedOperationError(
            'semantic search (`search` with a `query`): it keeps no embeddings; search by namespace prefix and `filter`',
            NAME,
          );
      }
      if (isPut(op) && op.value !== null && op.index !== undefined && op.index !== false)
        throw new UnsupportedOperationError(
          'indexing for semantic search (`put` with an `index`): pass no index, or false',
          NAME,
        );
      if (isPut(op) && op.value !== null && itemKey(op.namespace, op.key) === undefined) {
        const taken = bytes(prefixKey(op.namespace)) - ITEMS.length - SEPARATOR.length;
        throw new this.#lib.InvalidNamespaceError(
          `Namespace ${JSON.stringify(op.namespace)} is too long for ${NAME}: its labels take ${taken} bytes ` +
            `escaped, one more each, of at most ${NAMESPACE_BYTES - ITEMS.length - SEPARATOR.length} ` +
            `(a label over ${LABEL_BYTES} bytes takes ${HASHED.length + HASH_CHARS + 1})`,
        );
      }
    }
  }

  /**
   * The operations as LangGraph's `InMemoryStore` runs them: every read sees the store as it was
   * before the batch; then the writes, the last of each item winning.
   */
  async batch(operations: readonly Operation[]): Promise<unknown[]> {
    this.#check(operations);
    const results = new Array<unknown>(operations.length).fill(null);
    const gets = operations.flatMap((op, i) => (isGet(op) ? [i] : []));
    await Promise.all([
      this.#gets(gets.map((i) => operations[i] as GetOperation)).then((items) => {
        for (const [n, i] of gets.entries()) results[i] = items[n];
      }),
      ...operations.map(async (op, i) => {
        if (isSearch(op)) results[i] = await this.#search(op);
        else if (isListNamespaces(op)) results[i] = await this.#listNamespaces(op);
      }),
    ]);
    const puts = new Map<string, PutOperation>();
    for (const op of operations) {
      if (!isPut(op)) continue;
      const key = itemKey(op.namespace, op.key);
      if (key !== undefined) {
        puts.delete(key);
        puts.set(key, op);
      }
    }
    const now = new Date().toISOString();
    await mapLimited([...puts], PUT_CONCURRENCY, ([key, op]) => this.#put(key, op, now));
    // A put answers null, as in LangGraph's `InMemoryStore`.
    return results;
  }

  /** The items of `keys` that are there (one snapshot per 100), in the order of `keys`. */
  async #items(keys: readonly string[]): Promise<StoredItem[]> {
    const found = new Map<string, StoredItem>();
    for (let i = 0; i < keys.length; i += MAX_TURN_KEYS) {
      const chunk = [...new Set(keys.slice(i, i + MAX_TURN_KEYS))];
      const snap: Snapshot = await this.#client.snapshot(MEMORY_SESSION, { values: chunk });
      for (const [key, item] of await this.#itemsOf(snap)) found.set(key, item);
    }
    return keys.flatMap((key) => {
      const item = found.get(key);
      return item ? [item] : [];
    });
  }

  /** The items a snapshot answered, in its order, by their keys in the memory session. */
  async #itemsOf(snap: Snapshot): Promise<Array<[string, StoredItem]>> {
    if (!snap.exists) return [];
    const items: Array<[string, StoredItem]> = [];
    for (const v of snap.values) {
      if ('absent' in v) continue;
      if ('corrupt' in v) throw new CorruptValueError(v.key);
      // Too large for the snapshot's answer: read on its own.
      const read =
        'value' in v
          ? { value: v.value, version: v.etag }
          : await this.#client.getVersioned<unknown>(MEMORY_SESSION, v.key);
      if (read === undefined) continue;
      const item = storedItem(v.key, read.value);
      this.#remember(v.key, { version: read.version, createdAt: item.createdAt });
      items.push([v.key, item]);
    }
    return items;
  }

  async #gets(ops: readonly GetOperation[]): Promise<Array<Item | null>> {
    if (ops.length === 0) return [];
    const keys = ops.map((op) => itemKey(op.namespace, op.key));
    const items = await this.#items(keys.filter((k): k is string => k !== undefined));
    return ops.map((op) => {
      // The item must name what was asked for (a hashed label or key could, in theory, collide).
      const item = items.find(
        (it) =>
          it.key === op.key &&
          it.namespace.length === op.namespace.length &&
          startsWith(it.namespace, op.namespace),
      );
      return item ? toItem(item) : null;
    });
  }

  /** A page of the memory session's keys from `cursor` (undefined when the session does not exist). */
  async #keyPage(prefix: string, limit: number, cursor: string | undefined): Promise<KeyPage | undefined> {
    if (bytes(prefix) > LIMITS.key) return undefined;
    try {
      return await this.#client.listKeys(MEMORY_SESSION, { prefix, limit, ...(cursor ? { cursor } : {}) });
    } catch (error) {
      if (error instanceof SessionNotFoundError) return undefined;
      throw error;
    }
  }

  /**
   * The items under a prefix, in key order, from `offset`: a snapshot of a page of the values
   * under the prefix's key, each page `offset + limit` values without a filter (up to 100), and
   * with one twice the items wanted, doubling up to 100, until `limit` have passed it.
   */
  async #search(op: SearchOperation): Promise<SearchItem[]> {
    const limit = op.limit ?? 10;
    const out: SearchItem[] = [];
    if (limit <= 0) return out;
    const filter = op.filter && Object.keys(op.filter).length > 0 ? op.filter : undefined;
    const prefix = prefixKey(op.namespacePrefix);
    // No key is that long: nothing is under it.
    if (bytes(prefix) > LIMITS.key) return out;
    let skip = op.offset ?? 0;
    let cursor: string | undefined;
    let filterPage = Math.min(MAX_TURN_KEYS, Math.max(FILTER_PAGE_FIRST, 2 * (skip + limit)));
    do {
      const wanted = filter ? filterPage : Math.min(MAX_TURN_KEYS, skip + limit - out.length);
      filterPage = Math.min(MAX_TURN_KEYS, 2 * filterPage);
      const snap = await this.#client.snapshot(MEMORY_SESSION, {
        valuePage: { prefix, limit: wanted, ...(cursor ? { cursor } : {}) },
      });
      for (const [, item] of await this.#itemsOf(snap)) {
        if (!startsWith(item.namespace, op.namespacePrefix)) continue;
        if (filter && !matchesFilter(item.value, filter)) continue;
        if (skip > 0) {
          skip--;
          continue;
        }
        out.push({ ...toItem(item), score: undefined });
        if (out.length >= limit) return out;
      }
      cursor = snap.nextCursor;
    } while (cursor !== undefined);
    return out;
  }

  /**
   * The namespaces holding items (under the conditions' fixed prefix: the labels of the first
   * prefix condition before its first `*`), met by every condition, cut to `maxDepth`, in order.
   */
  async #listNamespaces(op: ListNamespacesOperation): Promise<string[][]> {
    const conditions = op.matchConditions ?? [];
    const path = conditions.find((c) => c.matchType === 'prefix')?.path ?? [];
    const wild = path.indexOf('*');
    const prefix = prefixKey(wild < 0 ? path : path.slice(0, wild));
    const found = new Map<string, { first: string; labels: ReadonlyArray<string | undefined> }>();
    let cursor: string | undefined;
    do {
      const page = await this.#keyPage(prefix, MAX_KEY_PAGE, cursor);
      if (page === undefined) break;
      for (const { key } of page.values) {
        const ns = namespaceOfKey(key);
        if (ns !== undefined && !found.has(ns.start)) found.set(ns.start, { first: key, labels: ns.labels });
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    // A hashed label is known from an item of its namespace only.
    const hidden = [...found.values()].filter((ns) => ns.labels.includes(undefined));
    const read = new Map(
      (await this.#items(hidden.map((ns) => ns.first))).map((it) => [prefixKey(it.namespace), it]),
    );
    const namespaces: string[][] = [];
    for (const [start, ns] of found) {
      const labels = ns.labels.includes(undefined) ? read.get(start)?.namespace : (ns.labels as string[]);
      if (labels !== undefined && conditions.every((c) => meets(labels, c))) namespaces.push(labels);
    }
    const cut = new Map<string, string[]>();
    for (const ns of namespaces) {
      const kept = op.maxDepth === undefined ? ns : ns.slice(0, op.maxDepth);
      cut.set(JSON.stringify(kept), kept);
    }
    const offset = op.offset ?? 0;
    const sorted = [...cut.values()].sort(compareNamespaces);
    return sorted.slice(offset, op.limit === undefined ? undefined : offset + op.limit);
  }

  /**
   * Writes an item (a delete for a null value), keeping its creation time: a create-only save
   * for an item the store does not know, a save on the known version for one it does; when the
   * item was there (or changed), it is read and the save tried again on what was read.
   */
  async #put(key: string, op: PutOperation, now: string): Promise<void> {
    if (op.value === null) {
      await this.#client.deleteKey(MEMORY_SESSION, key);
      this.#remember(key, undefined);
      return;
    }
    let known = this.#known.get(key);
    for (let attempt = 1; ; attempt++) {
      const stored: StoredItem = {
        namespace: op.namespace,
        key: op.key,
        value: op.value,
        createdAt: known?.createdAt ?? now,
        updatedAt: now,
      };
      try {
        const { version } = await this.#client.save(
          MEMORY_SESSION,
          key,
          stored,
          known ? { ifVersion: known.version } : { ifAbsent: true },
        );
        this.#remember(key, { version, createdAt: stored.createdAt });
        return;
      } catch (error) {
        if (!(error instanceof PreconditionFailedError) || attempt >= PUT_ATTEMPTS) throw error;
        const current = await this.#client.getVersioned<unknown>(MEMORY_SESSION, key);
        known = current && { version: current.version, createdAt: storedItem(key, current.value).createdAt };
      }
    }
  }
}

/** The store class over LangGraph's checkpoint module (loaded by the entry as an optional peer). */
export function agentStateMemoryStoreClass(lib: typeof Checkpointing): AgentStateMemoryStoreClass {
  return class MemoryStore extends lib.BaseStore implements AgentStateMemoryStore {
    readonly client: HttpSessionStore;
    readonly #core: MemoryCore;

    constructor(options: AgentStateMemoryStoreOptions) {
      super();
      this.client = options.client;
      this.#core = new MemoryCore(lib, options);
    }

    override async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
      return (await this.#core.batch(operations)) as OperationResults<Op>;
    }
  };
}
