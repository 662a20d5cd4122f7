/**
 * The OpenAI Agents SDK (JS) `Session` on the store: a conversation's items are
 * one list of a store session, written only by the list's conditional operations, so that nothing
 * a racing writer adds is lost and an item of any size is held.
 *
 * - `getItems(limit)` reads the list's `last: limit` items (the whole list without a limit).
 * - `addItems` appends at the end it last saw (`expectedCount` and `expectedHash`); when another
 *   writer moved the end, the conflict names the new end and the append is sent there.
 * - `popItem` reads the last item, then truncates to `count - 1` on the hash it read: an append
 *   landing in between makes the truncate fail, and the pop starts again on the new end, so the
 *   racing append is either kept or is the item the pop returns, never dropped.
 * - `clearSession` deletes the list and the values the session owns (under its `prefix`).
 * - `applyHistoryTransaction` (the SDK's atomic, idempotent history change) is ONE commit: the
 *   operation's record (a value, create-only) and the list's append, or its replacement on the hash
 *   read; a replay of the operation finds the record and changes nothing.
 *
 * An item whose JSON is over `inlineItemBytes` is saved as a value of its own (the client uploads
 * one too large for a request body straight to the object store) and the list holds a reference to
 * it; reads resolve references, so callers see the item as it was added.
 *
 * The SDK is an optional peer: this module imports only its types, and the entry
 * (`agent-state-store/openai-agents`) hands over the few runtime values it needs.
 */

import { createHash, randomUUID } from 'node:crypto';
import type {
  AgentInputItem,
  SessionHistoryTransaction,
  SessionHistoryTransactionArgs,
  SessionHistoryTransactionAwareSession,
} from '@openai/agents-core';
import type { HttpSessionStore } from '../client/index.js';
import {
  AppendConflictError,
  CommitPartialError,
  CommitPreconditionError,
  ListPreconditionFailedError,
  ListTooShortError,
} from '../contract/errors.js';
import { canonicalJson, EMPTY_HASH, leafHex } from '../contract/hash.js';
import { MAX_APPEND_ITEMS } from '../contract/limits.js';
import type { CommitList, ListPage } from '../contract/types.js';
import { BACKOFF, backoff } from '../util/backoff.js';
import { MIB } from '../util/units.js';
import { keyPages } from './pages.js';

/** What the adapter needs of `@openai/agents-core` at run time (the entry passes the package). */
export interface AgentsCoreRuntime {
  /** Raised for a transaction refused as the SDK's `MemorySession` refuses it. */
  readonly UserError: new (
    message: string,
  ) => Error;
  /** The SDK's item schema: transaction items must be model items. */
  readonly protocol: { readonly ModelItem: { safeParse(value: unknown): { success: boolean } } };
}

/** Options of a session. */
export interface OpenAIAgentsSessionOptions {
  /** The typed client (`createHttpClient`). */
  readonly store: HttpSessionStore;
  /** The store session holding the conversation, and the SDK's session id; default a new UUID. */
  readonly sessionId?: string;
  /** Prefix of every key the session owns in that store session; default `openai-agents/`. */
  readonly prefix?: string;
  /**
   * Items whose JSON is larger are saved as values of their own, the list holding a reference;
   * default 1 MiB (the size above which the store keeps a list item as an object of its own).
   */
  readonly inlineItemBytes?: number;
  /** Most bytes of items one append carries; a larger batch goes in several appends. Default 3 MiB. */
  readonly appendBytes?: number;
  /**
   * Attempts of an operation that meets racing writers (each lost attempt is another writer's
   * landed write); default 64, with a short jittered pause from the third.
   */
  readonly attempts?: number;
}

/** The member of a list entry that stands for an item saved as a value: the value's key. */
const REF = 'agentStateStoreValue';
type Ref = { readonly [REF]: string };
/** A list entry: an item, or a reference to one saved as a value. */
type Stored = AgentInputItem | Ref;

const isRef = (entry: unknown): entry is Ref =>
  typeof entry === 'object' &&
  entry !== null &&
  typeof (entry as Record<string, unknown>)[REF] === 'string' &&
  Object.keys(entry).length === 1;

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '');
const digestOf = (value: unknown) => leafHex(value);

/** An operation's record: which transaction it applied (its digest). */
interface OperationRecord {
  readonly operationId: string;
  readonly digest: string;
}

/** Refused while reading a transaction: the SDK's message (never the data). */
class Unsupported extends Error {}

/**
 * A copy of plain JSON data, refusing what a JSON store cannot hold exactly: anything but null,
 * booleans, finite numbers, strings, dense arrays and plain objects of enumerable data properties
 * (so no Date, BigInt, Symbol, typed array, accessor, cycle). Undefined properties are dropped.
 */
function plain(value: unknown, ancestors = new WeakSet<object>()): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Unsupported();
    return value;
  }
  if (typeof value !== 'object') throw new Unsupported();
  if (ancestors.has(value)) throw new Unsupported();
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const length = value.length;
      if (Reflect.ownKeys(value).length !== length + 1) throw new Unsupported();
      const copy: unknown[] = [];
      for (let i = 0; i < length; i++) {
        const d = Object.getOwnPropertyDescriptor(value, String(i));
        if (!d?.enumerable || !('value' in d) || d.value === undefined) throw new Unsupported();
        copy.push(plain(d.value, ancestors));
      }
      return copy;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw new Unsupported();
    const copy: Record<string, unknown> = {};
    for (const key of Reflect.ownKeys(value)) {
      const d = Object.getOwnPropertyDescriptor(value, key);
      if (typeof key !== 'string' || !d?.enumerable || !('value' in d)) throw new Unsupported();
      if (d.value !== undefined) copy[key] = plain(d.value, ancestors);
    }
    return copy;
  } finally {
    ancestors.delete(value);
  }
}

/** The SDK's Session on the store (see the module's comment). */
export class OpenAIAgentsSession implements SessionHistoryTransactionAwareSession {
  private readonly store: HttpSessionStore;
  private readonly sessionId: string;
  private readonly prefix: string;
  private readonly listKey: string;
  private readonly inlineItemBytes: number;
  private readonly appendBytes: number;
  private readonly attempts: number;
  /** The list's end as this session last saw it (undefined before the first read or write). */
  private end: { count: number; hash: string } | undefined;

  constructor(
    options: OpenAIAgentsSessionOptions,
    private readonly core: AgentsCoreRuntime,
  ) {
    this.store = options.store;
    this.sessionId = options.sessionId ?? randomUUID();
    this.prefix = options.prefix ?? 'openai-agents/';
    this.listKey = `${this.prefix}items`;
    this.inlineItemBytes = options.inlineItemBytes ?? MIB;
    this.appendBytes = options.appendBytes ?? 3 * MIB;
    this.attempts = options.attempts ?? 64;
  }

  async getSessionId(): Promise<string> {
    return this.sessionId;
  }

  /** The last `limit` items (all without it), oldest first. */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && limit <= 0) return [];
    for (let attempt = 1; ; attempt++) {
      const page = await this.store.getList<Stored>(
        this.sessionId,
        this.listKey,
        limit === undefined ? {} : { last: limit },
      );
      this.end = { count: page.count, hash: page.hash };
      const items = await this.resolve(page.items);
      // A referenced value is gone only when its item was removed after the list was read.
      if (items) return items;
      if (attempt >= this.attempts) throw new Error('the session changed during each read of its items');
    }
  }

  /** Appends the items at the list's end, wherever racing writers moved it. */
  async addItems(items: AgentInputItem[]): Promise<void> {
    if (items.length === 0) return;
    const stored = await this.toStored(items);
    for (const batch of this.batches(stored)) {
      for (let attempt = 1; ; attempt++) {
        await backoff(BACKOFF.contended, attempt);
        const at = this.end ?? { count: 0, hash: EMPTY_HASH };
        try {
          const result = await this.store.appendList(this.sessionId, this.listKey, batch, {
            expectedCount: at.count,
            expectedHash: at.hash,
          });
          this.end = { count: result.count, hash: result.hash };
          break;
        } catch (error) {
          if (!(error instanceof AppendConflictError) || attempt >= this.attempts) throw error;
          this.end = { count: error.count, hash: error.hash };
        }
      }
    }
  }

  /** Removes and answers the last item (undefined when there is none), on the hash it read. */
  async popItem(): Promise<AgentInputItem | undefined> {
    for (let attempt = 1; ; attempt++) {
      await backoff(BACKOFF.contended, attempt);
      const page = await this.store.getList<Stored>(this.sessionId, this.listKey, { last: 1 });
      const last = page.items.at(-1);
      if (page.count === 0 || last === undefined) {
        this.end = { count: page.count, hash: page.hash };
        return undefined;
      }
      // A referenced value is gone only when another writer popped the item meanwhile.
      const item = isRef(last) ? await this.store.get<AgentInputItem>(this.sessionId, last[REF]) : last;
      if (item !== undefined) {
        try {
          const result = await this.store.truncateList(this.sessionId, this.listKey, {
            count: page.count - 1,
            expectedHash: page.hash,
          });
          this.end = { count: result.count, hash: result.hash };
          if (isRef(last)) await this.forget([last]);
          return item;
        } catch (error) {
          // The list moved on since it was read: the racing write is kept, the pop starts again.
          if (!(error instanceof ListPreconditionFailedError || error instanceof ListTooShortError))
            throw error;
        }
      }
      if (attempt >= this.attempts) throw new Error(`popItem lost to racing writers ${attempt} times`);
    }
  }

  /** Deletes the list and every value the session owns (references and operation records). */
  async clearSession(): Promise<void> {
    await this.store.deleteList(this.sessionId, this.listKey);
    this.end = { count: 0, hash: EMPTY_HASH };
    for await (const page of keyPages(this.store, this.sessionId, this.prefix))
      await Promise.all(page.values.map((v) => this.store.deleteKey(this.sessionId, v.key)));
  }

  /**
   * Applies one history transaction atomically and once: a replay of `operationId` with the same
   * transaction changes nothing, with another one is refused; an append goes at the list's end; a
   * suffix is replaced only while the list ends with `expectedSuffix`. One snapshot (the record and
   * the list), then one commit (the record, create-only, and the list change on what was read).
   */
  async applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void> {
    const { operationId, transaction } = this.parse(args);
    const digest = digestOf(transaction);
    const opKey = `${this.prefix}op/${createHash('sha256').update(operationId).digest('base64url')}`;
    const record: OperationRecord = { operationId, digest };
    /** The transaction's new items as list entries (big ones saved once, when first needed). */
    let added: Stored[] | undefined;
    try {
      for (let attempt = 1; ; attempt++) {
        await backoff(BACKOFF.contended, attempt);
        const snapshot = await this.store.snapshot(this.sessionId, {
          values: [opKey],
          // An append needs only the list's end; a replacement, the list whole.
          lists: [
            transaction.type === 'append_items' ? { key: this.listKey, last: 0 } : { key: this.listKey },
          ],
        });
        const found = snapshot.values.find((v) => v.key === opKey);
        if (found && 'corrupt' in found) throw new Error(`the record of operation ${opKey} is damaged`);
        if (found && 'value' in found) {
          if ((found.value as OperationRecord).digest === digest) return;
          throw new this.core.UserError(
            'Session history operation was already applied with a different transaction.',
          );
        }
        const seen = snapshot.lists.find((l) => l.key === this.listKey);
        if (seen && 'corrupt' in seen) throw new Error(`list ${this.listKey} is damaged`);
        // An absent session answers no list: it is empty.
        let page = (seen as ListPage<Stored> | undefined) ?? {
          items: [],
          count: 0,
          hash: EMPTY_HASH,
          offset: 0,
          baseHash: EMPTY_HASH,
        };
        if (transaction.type === 'replace_suffix' && page.offset > 0)
          page = await this.store.getList<Stored>(this.sessionId, this.listKey); // cut to fit: read whole
        let change: CommitList | undefined;
        let removed: Stored[] = [];
        if (transaction.type === 'append_items') {
          added ??= await this.toStored(transaction.items);
          if (added.length > 0)
            change = { key: this.listKey, append: added, expectedCount: page.count, expectedHash: page.hash };
        } else {
          const start = page.items.length - transaction.expectedSuffix.length;
          removed = start < 0 ? [] : page.items.slice(start);
          const actual = start < 0 ? undefined : await this.resolve(removed);
          if (!actual || canonicalJson(actual) !== canonicalJson(transaction.expectedSuffix))
            throw new this.core.UserError(
              'Session history suffix no longer matches the transaction precondition.',
            );
          added ??= await this.toStored(transaction.replacement);
          const items = [...page.items.slice(0, start), ...added];
          // A commit carries at most as many list items as one append.
          if (items.length > MAX_APPEND_ITEMS)
            throw new Error(
              `a suffix replacement rewrites the whole list in one commit: at most ${MAX_APPEND_ITEMS} items, not ${items.length}`,
            );
          change = { key: this.listKey, replace: items, expectedHash: page.hash };
        }
        try {
          const result = await this.store.commit(this.sessionId, {
            commitId: randomUUID(),
            values: [{ key: opKey, value: record, ifAbsent: true }],
            lists: change ? [change] : [],
          });
          const list = result.lists.find((l) => l.key === this.listKey);
          if (list) this.end = { count: list.count, hash: list.hash };
          added = undefined; // in the list now
          await this.forget(removed.filter(isRef));
          return;
        } catch (error) {
          if (error instanceof CommitPartialError) {
            // The record landed, the list change did not (a write raced it at write time): the
            // record is taken back first, whatever follows, so that the operation is never taken
            // for applied; then it starts again.
            if (error.applied.some((a) => a.key === opKey)) await this.store.deleteKey(this.sessionId, opKey);
            if (attempt >= this.attempts) throw error;
            continue;
          }
          if (attempt >= this.attempts) throw error;
          // Nothing written: the record appeared (a concurrent replay) or the list moved on.
          if (!(error instanceof CommitPreconditionError)) throw error;
        }
      }
    } finally {
      // Values saved for items that never reached the list.
      if (added) await this.forget(added.filter(isRef));
    }
  }

  /**
   * The transaction's envelope, read once, and a copy of its items as plain JSON model items;
   * refused before anything is written, with the SDK's messages (which never quote the data).
   */
  private parse(args: SessionHistoryTransactionArgs): {
    operationId: string;
    transaction: SessionHistoryTransaction;
  } {
    const refuse = (message: string): never => {
      throw new this.core.UserError(message);
    };
    let operationId: unknown;
    let transaction: unknown;
    try {
      if (!args || typeof args !== 'object') throw new Unsupported();
      operationId = Reflect.get(args, 'operationId');
      transaction = Reflect.get(args, 'transaction');
    } catch {
      refuse('Session history transaction arguments are invalid.');
    }
    if (typeof operationId !== 'string' || !operationId.trim())
      refuse('Session history transaction operationId must be a non-empty string.');
    if (!transaction || typeof transaction !== 'object')
      refuse('Session history transaction must be an object.');
    const invalidItems = 'Session history transaction items contain invalid or unsupported data.';
    let copy: Record<string, unknown> = {};
    try {
      structuredClone(transaction); // refuses proxies, functions, symbols
      copy = plain(transaction) as Record<string, unknown>;
    } catch {
      refuse(invalidItems);
    }
    const items = (value: unknown): AgentInputItem[] => {
      if (!(value as unknown[]).every((item) => this.core.protocol.ModelItem.safeParse(item).success))
        refuse(invalidItems);
      return value as AgentInputItem[];
    };
    const has = (...keys: string[]) =>
      Object.keys(copy).length === keys.length && keys.every((k) => Object.hasOwn(copy, k));
    if (copy.type === 'append_items') {
      if (!has('type', 'items') || !Array.isArray(copy.items))
        refuse('Session history append transaction fields are invalid.');
      return {
        operationId: operationId as string,
        transaction: { type: 'append_items', items: items(copy.items) },
      };
    }
    if (copy.type !== 'replace_suffix') refuse('Unsupported session history transaction type.');
    if (
      !has('type', 'expectedSuffix', 'replacement') ||
      !Array.isArray(copy.expectedSuffix) ||
      !Array.isArray(copy.replacement)
    )
      refuse('Session history suffix transaction fields are invalid.');
    return {
      operationId: operationId as string,
      transaction: {
        type: 'replace_suffix',
        expectedSuffix: items(copy.expectedSuffix),
        replacement: items(copy.replacement),
      },
    };
  }

  /** The list entries of `items`: each over `inlineItemBytes` saved as a value first. */
  private async toStored(items: readonly AgentInputItem[]): Promise<Stored[]> {
    return Promise.all(
      items.map(async (item): Promise<Stored> => {
        if (jsonBytes(item) <= this.inlineItemBytes) return item;
        const key = `${this.prefix}item/${randomUUID()}`;
        await this.store.save(this.sessionId, key, item);
        return { [REF]: key };
      }),
    );
  }

  /** The items of list entries (references read, in parallel); undefined if one is gone. */
  private async resolve(entries: readonly Stored[]): Promise<AgentInputItem[] | undefined> {
    const items = await Promise.all(
      entries.map((entry) =>
        isRef(entry) ? this.store.get<AgentInputItem>(this.sessionId, entry[REF]) : entry,
      ),
    );
    return items.every((item) => item !== undefined) ? items : undefined;
  }

  /** Deletes the values of references no longer in the list (best effort: clearSession sweeps). */
  private async forget(refs: readonly Ref[]): Promise<void> {
    await Promise.all(refs.map((r) => this.store.deleteKey(this.sessionId, r[REF]).catch(() => {})));
  }

  /** Entries split into appends of at most `appendBytes` and `MAX_APPEND_ITEMS` items. */
  private batches(entries: readonly Stored[]): Stored[][] {
    const batches: Stored[][] = [];
    let batch: Stored[] = [];
    let bytes = 0;
    for (const entry of entries) {
      const n = jsonBytes(entry) + 1;
      if (batch.length > 0 && (bytes + n > this.appendBytes || batch.length >= MAX_APPEND_ITEMS)) {
        batches.push(batch);
        batch = [];
        bytes = 0;
      }
      batch.push(entry);
      bytes += n;
    }
    if (batch.length > 0) batches.push(batch);
    return batches;
  }
}
