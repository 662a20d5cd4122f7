/**
 * A turn of the typed client: what `beginTurn` answered (the lease and the
 * snapshot), the changes buffered since, and `commit`, which sends them all in one call. A read
 * after a buffered change sees the change.
 */

import { CorruptValueError, ValidationError } from '../contract/errors.js';
import { chainHash, EMPTY_HASH } from '../contract/hash.js';
import type { Lease } from '../contract/lock.js';
import type {
  CommitList,
  CommitResult,
  CommitValue,
  ListPage,
  Snapshot,
  SnapshotList,
  SnapshotValue,
} from '../contract/types.js';

/** Options of `commit`: release the lease after the writes (or renew it for `renewMs`). */
export interface TurnCommitOptions {
  readonly release?: boolean;
  readonly renewMs?: number;
}

/** What a turn's commit answers: the store's result, and the lease released or renewed. */
export interface TurnCommitResult extends CommitResult {
  readonly lease?: { readonly owner: string; readonly released: true } | Lease;
}

/** What the turn needs of the client. */
export interface TurnIo {
  /** Sends one commit body (retried with the same body on lost answers). */
  send(body: Record<string, unknown>): Promise<TurnCommitResult>;
  /** Reads a value the snapshot answered as a download. */
  read(key: string): Promise<unknown>;
  /** A new commit id. */
  commitId(): string;
}

type ListState = { items: unknown[]; count: number; hash: string; offset: number; baseHash: string };

/** A turn: the lease, the snapshot, buffered changes, one commit. */
export class Turn {
  /** The lease `beginTurn` took; renewed by `commit({ renewMs })`. */
  lease: Lease;
  /** Whether the session existed when the turn began. */
  readonly exists: boolean;
  private readonly values = new Map<string, SnapshotValue>();
  private readonly lists = new Map<string, SnapshotList>();
  private readonly valueChanges = new Map<string, CommitValue>();
  private readonly listChanges = new Map<string, CommitList>();
  /** Each changed list as the turn sees it now. */
  private readonly listViews = new Map<string, ListState>();
  private over = false;

  constructor(
    readonly sessionId: string,
    lease: Lease,
    snapshot: Snapshot,
    private readonly io: TurnIo,
  ) {
    this.lease = lease;
    this.exists = snapshot.exists;
    for (const v of snapshot.values) this.values.set(v.key, v);
    for (const l of snapshot.lists) this.lists.set(l.key, l);
  }

  /** The value as this turn sees it (a buffered save or delete, else the snapshot's); undefined when absent. */
  async get<T = unknown>(key: string): Promise<T | undefined> {
    const change = this.valueChanges.get(key);
    if (change) return 'delete' in change ? undefined : (change.value as T);
    const entry = this.values.get(key);
    if (!entry) throw new ValidationError('key', `${JSON.stringify(key)} was not read by this turn`);
    if ('corrupt' in entry) throw new CorruptValueError(key);
    if ('absent' in entry) return undefined;
    if ('value' in entry) return entry.value as T;
    return (await this.io.read(key)) as T;
  }

  /** The value's version in the snapshot (undefined when absent or changed in this turn). */
  version(key: string): string | undefined {
    if (this.valueChanges.has(key)) return undefined;
    const entry = this.values.get(key);
    return entry && 'etag' in entry ? entry.etag : undefined;
  }

  /**
   * The list as this turn sees it: the snapshot's page (its most recent items, from `offset`) with
   * the buffered change applied; `count` and `hash` are the whole list's.
   */
  list<T = unknown>(key: string): ListPage<T> {
    const view = this.view(key);
    return { ...view, items: [...view.items] as T[] };
  }

  /** Buffers a save (optionally on a condition, checked by the commit before any write). */
  save(
    key: string,
    value: unknown,
    options: { ifVersion?: string; ifAbsent?: boolean; ifRevision?: number } = {},
  ): this {
    this.open();
    const before = this.valueChanges.get(key);
    // The condition is on what is stored: a second save of a key in one turn keeps the first's.
    const condition =
      before && 'value' in before
        ? { ifVersion: before.ifVersion, ifAbsent: before.ifAbsent, ifRevision: before.ifRevision }
        : options;
    // An unconditional save sends the version the snapshot read as a hint: the server tries it as
    // If-Match instead of reading the value first (one GET less when nothing changed it). With the
    // revision read beside it, the server writes the next revision without reading either.
    const entry = this.values.get(key);
    const seen = entry && 'etag' in entry ? entry : undefined;
    const hint =
      condition.ifVersion === undefined &&
      !condition.ifAbsent &&
      condition.ifRevision === undefined &&
      seen !== undefined;
    const seenRevision =
      seen !== undefined && (hint || condition.ifVersion === seen.etag) ? seen.revision : undefined;
    this.valueChanges.set(key, {
      key,
      value,
      ...(condition.ifVersion !== undefined ? { ifVersion: condition.ifVersion } : {}),
      ...(condition.ifAbsent ? { ifAbsent: true } : {}),
      ...(condition.ifRevision !== undefined ? { ifRevision: condition.ifRevision } : {}),
      ...(hint ? { seenVersion: seen.etag } : {}),
      ...(seenRevision !== undefined ? { seenRevision } : {}),
    });
    return this;
  }

  /** Buffers a delete. */
  delete(key: string): this {
    this.open();
    this.valueChanges.set(key, { key, delete: true });
    return this;
  }

  /** Buffers an append at the end the turn sees (the snapshot's, or after the buffered change). */
  append(key: string, items: readonly unknown[]): this {
    this.open();
    if (items.length === 0) return this;
    const view = this.view(key);
    const change = this.listChanges.get(key);
    let next: CommitList;
    if (!change) next = { key, append: [...items], expectedCount: view.count, expectedHash: view.hash };
    else if ('append' in change) next = { ...change, append: [...change.append, ...items] };
    else if ('replace' in change) next = { ...change, replace: [...change.replace, ...items] };
    else throw new ValidationError('append', `list ${JSON.stringify(key)} is truncated in this turn`);
    this.listChanges.set(key, next);
    this.listViews.set(key, {
      ...view,
      items: [...view.items, ...items],
      count: view.count + items.length,
      hash: chainHash(view.hash, items),
    });
    return this;
  }

  /** Buffers a whole replacement (on the hash the snapshot read, when it read the list). */
  replace(key: string, items: readonly unknown[]): this {
    this.open();
    const base = this.base(key);
    this.listChanges.set(key, {
      key,
      replace: [...items],
      ...(base ? { expectedHash: base.hash } : {}),
    });
    this.listViews.set(key, {
      items: [...items],
      count: items.length,
      hash: chainHash(EMPTY_HASH, items),
      offset: 0,
      baseHash: EMPTY_HASH,
    });
    return this;
  }

  /** Buffers a truncate to the first `count` items (on the hash the snapshot read). */
  truncate(key: string, count: number): this {
    this.open();
    const view = this.view(key);
    if (!Number.isSafeInteger(count) || count < 0 || count > view.count)
      throw new ValidationError('count', `must be an integer from 0 to ${view.count}`);
    const change = this.listChanges.get(key);
    const base = this.base(key);
    if (change && 'replace' in change) {
      this.replace(key, change.replace.slice(0, count));
      return this;
    }
    if (change && 'append' in change) {
      if (count < change.expectedCount)
        throw new ValidationError('count', `list ${JSON.stringify(key)} is appended to in this turn`);
      const kept = change.append.slice(0, count - change.expectedCount);
      this.listChanges.delete(key);
      this.listViews.delete(key);
      return this.append(key, kept);
    }
    if (!base) throw new ValidationError('key', `list ${JSON.stringify(key)} was not read by this turn`);
    this.listChanges.set(key, { key, truncate: count, expectedHash: base.hash });
    const keep = Math.max(0, count - view.offset);
    const items = view.items.slice(0, keep);
    this.listViews.set(key, {
      items,
      count,
      // Known when the kept end is within the page the snapshot answered.
      hash: count >= view.offset ? chainHash(view.baseHash, items) : '',
      offset: Math.min(view.offset, count),
      baseHash: count >= view.offset ? view.baseHash : '',
    });
    return this;
  }

  /** Whether anything is buffered. */
  get pending(): boolean {
    return this.valueChanges.size + this.listChanges.size > 0;
  }

  /**
   * Sends every buffered change in one commit with a new `commitId` and the lease's token, retried
   * with the same body on lost answers, 429 and 5xx; with `release`, the lease is released after
   * the writes (the turn is then over), with `renewMs` renewed. The buffer is cleared, and the
   * turn then sees what it committed.
   */
  async commit(options: TurnCommitOptions = {}): Promise<TurnCommitResult> {
    this.open();
    const { release, renewMs } = options;
    const body: Record<string, unknown> = {
      commitId: this.io.commitId(),
      token: this.lease.token,
      values: [...this.valueChanges.values()],
      lists: [...this.listChanges.values()],
      ...(release
        ? { lease: { owner: this.lease.owner, release: true } }
        : renewMs !== undefined
          ? { lease: { owner: this.lease.owner, renewMs } }
          : {}),
    };
    const result = await this.io.send(body);
    for (const v of result.values) {
      const change = this.valueChanges.get(v.key);
      if (!change) continue;
      this.values.set(
        v.key,
        'delete' in change
          ? { key: v.key, absent: true }
          : { key: v.key, value: change.value, etag: v.etag ?? '', revision: v.revision ?? 1 },
      );
    }
    for (const l of result.lists) {
      const view = this.listViews.get(l.key);
      if (view) this.lists.set(l.key, { key: l.key, ...view, count: l.count, hash: l.hash });
    }
    this.valueChanges.clear();
    this.listChanges.clear();
    this.listViews.clear();
    if (result.lease && 'released' in result.lease) this.over = true;
    else if (result.lease) this.lease = result.lease;
    return result;
  }

  private open(): void {
    if (this.over) throw new ValidationError('turn', 'the turn is over: its lease was released');
  }

  /** The snapshot's count and hash of a list (undefined when the turn did not read it). */
  private base(key: string): { count: number; hash: string } | undefined {
    const entry = this.lists.get(key);
    if (!entry) return undefined;
    if ('corrupt' in entry) throw new CorruptValueError(key);
    return entry;
  }

  private view(key: string): ListState {
    const changed = this.listViews.get(key);
    if (changed) return changed;
    const entry = this.lists.get(key);
    if (!entry) throw new ValidationError('key', `list ${JSON.stringify(key)} was not read by this turn`);
    if ('corrupt' in entry) throw new CorruptValueError(key);
    const { key: _, ...page } = entry;
    return { ...page, items: [...page.items] };
  }
}
