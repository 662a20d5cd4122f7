/**
 * Snapshots and commits (docs/DESIGN.md, "Snapshots and commits"): a
 * whole agent turn's reads in one call and its writes in one call. The HTTP layer grants and
 * releases the lease around them; here a commit only carries the lease's fencing token.
 *
 * A snapshot reads the session marker ONCE, in parallel with every value and list it asks for.
 * A commit reads the marker, the values it must check and the lists it changes (one round trip),
 * checks every precondition before its first write, writes the values, then the lists. Each
 * key's write is atomic; the keys are not atomic with each other (S3 and OSS have no multi-object
 * transaction): a commit is per-key atomic and made safe to retry by its `commitId`.
 */

import {
  AppendConflictError,
  type CommitFailure,
  CommitMismatchError,
  CommitPartialError,
  CommitPreconditionError,
  CorruptValueError,
  FencedError,
  IdempotencyKeyReusedError,
  ListPreconditionFailedError,
  ListTooShortError,
  PreconditionUnsupportedError,
} from '../contract/errors.js';
import { chainHash, commitDigest, EMPTY_HASH } from '../contract/hash.js';
import { jsonBody } from '../contract/json.js';
import type { CommitIdentity, LockGrant } from '../contract/lock.js';
import { checkCommit, checkSnapshot } from '../contract/turns.js';
import type {
  CommitList,
  CommitRequest,
  CommitResult,
  CommitValue,
  ListPage,
  ListWriteResult,
  Snapshot,
  SnapshotList,
  SnapshotRequest,
  SnapshotValue,
} from '../contract/types.js';
import { ObjectConditionFailedError } from '../drivers/errors.js';
import type { ObjectInfo, StoredObject } from '../drivers/types.js';
import {
  getOrUndefined,
  headOrUndefined,
  parseJsonObject,
  type StoreContext,
  storedToken,
} from './context.js';
import type { Keys } from './keys.js';
import type { UserLayout } from './layout.js';
import type { ListFormat, ListPeek } from './lists/format.js';
import { incOf } from './reference.js';
import type { Marker, MarkerRead, Sessions } from './sessions.js';
import { committedWrite, type Fence, nextRevision, putValue, recordId, revisionOf } from './write-path.js';

/** A commit record's identity, when it is of incarnation `inc`. */
function recordOf(object: StoredObject | undefined, inc: string): CommitIdentity | undefined {
  const body = object ? parseJsonObject(object.body) : undefined;
  if (body?.inc !== inc || typeof body.commitId !== 'string' || typeof body.digest !== 'string')
    return undefined;
  return { commitId: body.commitId, digest: body.digest };
}

/** A value change applied: its etag and revision (neither for a delete). */
type ValueDone = { readonly etag?: string; readonly revision?: number };

type ValuePlan = {
  readonly change: CommitValue;
  readonly name: string;
  /** The HEAD before the commit (undefined: absent, or not read: the fast path). */
  readonly head?: ObjectInfo;
  /** Read (HEAD) before the commit. */
  readonly read: boolean;
  /** Already applied by this commit id (a retry): the etag and revision to answer, or the delete done. */
  done?: ValueDone;
};

type ListPlan = {
  readonly change: CommitList;
  readonly peek: ListPeek;
  readonly writeId: string;
  done?: ListWriteResult;
};

/** A commit after its one round trip of reads: the plan of each change, and what it found. */
interface PlannedCommit {
  readonly s: string;
  readonly commitId: string;
  readonly token: number | undefined;
  readonly identity: CommitIdentity;
  readonly fence: Fence;
  /** The one conditional value written first and alone (its If-Match is its own precheck). */
  readonly fast: CommitValue | undefined;
  /** The marker as read, and the live one it found. */
  readonly read: MarkerRead;
  readonly live: Marker | undefined;
  readonly values: readonly ValuePlan[];
  readonly lists: readonly ListPlan[];
  /** The commit's own record, being read (a commit without a lease). */
  readonly record: Promise<Settled<StoredObject | undefined>> | undefined;
  /** The lock's grant, being read. */
  readonly grant: Promise<Settled<LockGrant | undefined>>;
}

/** A key a commit wrote. */
type Applied = { kind: 'value' | 'list'; key: string };

/** Snapshots and commits of one user's sessions. */
export class Commits {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    private readonly sessions: Sessions,
    private readonly lists: ListFormat,
    private readonly keys: Keys,
    private readonly fenceOf: (sessionId: string, token: number | undefined) => Fence,
  ) {}

  async snapshot(s: string, request: SnapshotRequest): Promise<Snapshot> {
    const { values, lists, page } = checkSnapshot(request);
    const marker = this.sessions.read(s);
    // Every read starts now; a failing one is answered after all have settled.
    const readValue = (key: string) => settle(getOrUndefined(this.ctx.driver, this.layout.value(s, key)));
    const valueReads = values.map(readValue);
    const listReads = lists.map((l) =>
      settle(this.lists.read(s, l.key, l.last === undefined ? {} : { last: l.last }, marker)),
    );
    // A value page: its LISTs beside the marker, then a GET per value it names (the GET carries
    // the incarnation: no HEAD).
    const paged = page
      ? settle(
          this.keys.listed(s, page).then(async (listed) => {
            const keys = listed.keys.filter((k) => listed.found.get(k)?.value && !values.includes(k));
            return { keys, reads: await Promise.all(keys.map(readValue)), nextCursor: listed.nextCursor };
          }),
        )
      : undefined;
    const [read, gotValues, gotLists, gotPage] = await Promise.all([
      settle(marker),
      Promise.all(valueReads),
      Promise.all(listReads),
      paged,
    ]);
    const live = unwrap(read).live;
    // An emptied session (its last key deleted) holds nothing: it does not exist.
    if (!live || live.empty) return { exists: false, values: [], lists: [] };
    const answered = (key: string, got: Settled<StoredObject | undefined>): SnapshotValue => {
      const object = unwrap(got);
      if (!object || incOf(object) !== live.inc) return { key, absent: true };
      const value = this.parse(object);
      if (value === CORRUPT) return { key, corrupt: true };
      return { key, value: value.value, etag: object.etag, revision: revisionOf(object) };
    };
    const pageOf = gotPage && unwrap(gotPage);
    return {
      exists: true,
      values: [
        ...values.map((key, i) => answered(key, gotValues[i] as Settled<StoredObject | undefined>)),
        // A listed value that vanished, or is another incarnation's, is no key of the page.
        ...(pageOf?.keys ?? [])
          .map((key, i) => answered(key, pageOf?.reads[i] as Settled<StoredObject | undefined>))
          .filter((v) => !('absent' in v)),
      ],
      lists: lists.map(({ key }, i): SnapshotList => {
        const got = gotLists[i] as Settled<ListPage>;
        // A damaged list fails only its own key.
        if ('error' in got && got.error instanceof CorruptValueError) return { key, corrupt: true };
        return { key, ...unwrap(got) };
      }),
      ...(pageOf?.nextCursor !== undefined ? { nextCursor: pageOf.nextCursor } : {}),
    };
  }

  private parse(object: StoredObject): { value: unknown } | typeof CORRUPT {
    try {
      return { value: JSON.parse(Buffer.from(object.body).toString('utf8')) };
    } catch {
      this.ctx.metrics.count('corruptObjects');
      return CORRUPT;
    }
  }

  async commit(s: string, request: CommitRequest): Promise<CommitResult> {
    const planned = await this.plan(s, request);
    // ---- 1. what this commit id already did (a replay), and a changed body -----------------------
    const { failures, recorded } = await this.replayed(planned);
    // A replay of a commit that landed whole answers it again, whoever holds the lease now.
    if (landed(planned) && (planned.values.length > 0 || planned.lists.length > 0)) return resultOf(planned);
    // ---- 2. fencing: a stale token writes nothing at all ----------------------------------------
    if (await this.fencedReplay(planned)) return resultOf(planned);
    // ---- 3. every other precondition, on what was read -----------------------------------------
    await this.checkValues(planned, failures);
    if (landed(planned)) return resultOf(planned);
    // ---- 4. the writes: the marker (only when it must change), the record, the values, the lists --
    const creates =
      planned.values.some(
        (p) => !p.done && 'value' in p.change && p.read && !inIncarnation(p.head, planned.live),
      ) || planned.lists.some((p) => !p.done && p.peek.creates && !('truncate' in p.change));
    const written = await this.sessions.forWrite(s, planned.read, planned.fence, creates);
    if (planned.record && !recorded) await this.writeRecord(s, written.inc, planned.identity);
    const applied = await this.writeValues(planned, written);
    await this.writeLists(planned, written, applied);
    return resultOf(planned);
  }

  /**
   * Checks a commit and reads, in one round trip, the marker, the values to check, the lists to
   * change and the lock: the plan of each change.
   */
  private async plan(s: string, request: CommitRequest): Promise<PlannedCommit> {
    checkCommit(request);
    const { driver } = this.ctx;
    const cas = driver.capabilities.conditionalOverwrite;
    const { commitId, token } = request;
    const values = request.values ?? [];
    const lists = request.lists ?? [];
    if (!cas && values.some((v) => 'value' in v && (v.ifVersion !== undefined || v.ifRevision !== undefined)))
      throw new PreconditionUnsupportedError(driver.name);
    const identity: CommitIdentity = { commitId, digest: commitDigest(request) };
    const fence = this.fenceOf(s, token);
    // The one conditional value whose If-Match is its own precheck: it is written first and alone,
    // so when its condition fails nothing has been written (no HEAD for it). A token write needs
    // the value's recorded token unless the lock checks the token (docs/DESIGN.md, "The write path").
    // Its revision is the next of the one the caller saw with that version (`seenRevision`: else it is read).
    const versioned = values.filter((v) => 'value' in v && v.ifVersion !== undefined);
    const unread = token === undefined || fence.authorized;
    const fast =
      versioned.length === 1 &&
      !values.some((v) => 'value' in v && v.ifAbsent) &&
      unread &&
      versioned.every((v) => 'value' in v && v.seenRevision !== undefined && v.ifRevision === undefined)
        ? versioned[0]
        : undefined;
    // A save with the version (and revision) the caller read tries it as If-Match instead of a HEAD (same rule).
    // A precondition on the revision is checked on what is read, never on what the caller says it saw.
    const hinted = (v: CommitValue) =>
      cas &&
      unread &&
      'value' in v &&
      v.seenVersion !== undefined &&
      v.seenRevision !== undefined &&
      v.ifRevision === undefined;

    const marker = this.sessions.read(s);
    const heads = values.map((v) =>
      v === fast || hinted(v) ? undefined : settle(headOrUndefined(driver, this.layout.value(s, v.key))),
    );
    const peeks = lists.map((l) => settle(this.lists.peek(s, l.key, marker)));
    // A lease records the commit's identity in the lock; a commit without one, in a record of its own.
    const record = fence.authorized ? undefined : settle(this.readRecord(s, commitId));
    const grant = settle(fence.lockGrant());
    const read = unwrap(await settle(marker));
    const gotHeads = await Promise.all(heads);
    const gotPeeks = await Promise.all(peeks);
    return {
      s,
      commitId,
      token,
      identity,
      fence,
      fast,
      read,
      live: read.live,
      values: values.map((change, i) => {
        const got = gotHeads[i];
        const head = got === undefined ? undefined : unwrap(got);
        return { change, name: this.layout.value(s, change.key), head, read: got !== undefined };
      }),
      lists: lists.map((change, i) => ({
        change,
        peek: unwrap(gotPeeks[i] as Settled<ListPeek>),
        writeId: recordId(`${commitId}\n${change.key}`, identity.digest),
      })),
      record,
      grant,
    };
  }

  /**
   * Marks what this commit id already did (`done`: a replay), and answers the lists' failing
   * preconditions and the commit's own record; the same id with another body is `CommitMismatchError`.
   */
  private async replayed(
    planned: PlannedCommit,
  ): Promise<{ failures: CommitFailure[]; recorded: CommitIdentity | undefined }> {
    const { commitId, identity, live } = planned;
    for (const plan of planned.values) {
      const object = inIncarnation(plan.head, live);
      // A delete whose value is gone has nothing to do (deletes record nothing: a retry finds it so).
      if ('delete' in plan.change && !object) plan.done = {};
      const written = committedWrite(object, identity, plan.change.key);
      if (written !== undefined) plan.done = written;
    }
    const failures: CommitFailure[] = [];
    const verdicts = await Promise.all(
      planned.lists.map((plan) => settle(this.checkList(plan.change, plan.peek, plan.writeId, commitId))),
    );
    for (const [i, plan] of planned.lists.entries()) {
      const verdict = unwrap(verdicts[i] as Settled<Awaited<ReturnType<Commits['checkList']>>>);
      if (verdict === 'apply') continue;
      if ('failure' in verdict) failures.push(verdict.failure);
      else plan.done = verdict.done;
    }
    // A body that shares no key with the first: the commit's own record (in the lease, or an object).
    const recorded = planned.record && live ? recordOf(unwrap(await planned.record), live.inc) : undefined;
    const leased = unwrap(await planned.grant)?.commit;
    for (const seen of [recorded, leased])
      if (seen?.commitId === commitId && seen.digest !== identity.digest)
        throw new CommitMismatchError(commitId, 'commit', '');
    return { failures, recorded };
  }

  /**
   * The fencing check: passes (false), or refuses a stale token, unless the commit is a replay that
   * landed whole (true): its values not read (the fast path, a seenVersion) are read on this
   * refusal's path, and it is answered if every key records this commit.
   */
  private async fencedReplay(planned: PlannedCommit): Promise<boolean> {
    const { identity, live } = planned;
    try {
      await planned.fence.check(
        live?.token,
        ...planned.values.map((p) => storedToken(inIncarnation(p.head, live))),
        ...planned.lists.map((p) => p.peek.token),
      );
      return false;
    } catch (error) {
      const notRead = planned.values.filter((p) => !p.read && !p.done);
      if (!(error instanceof FencedError) || notRead.length === 0 || !live) throw error;
      const seen = await Promise.all(notRead.map((p) => headOrUndefined(this.ctx.driver, p.name)));
      notRead.forEach((plan, i) => {
        const written = committedWrite(inIncarnation(seen[i], live), identity, plan.change.key);
        if (written !== undefined) plan.done = written;
      });
      if (landed(planned)) return true;
      throw error;
    }
  }

  /** The values' preconditions, on what was read: `CommitPreconditionError` names every failing key. */
  private async checkValues(planned: PlannedCommit, failures: CommitFailure[]): Promise<void> {
    const { fast, live, identity } = planned;
    for (const plan of planned.values) {
      if (plan.done) continue;
      const { change } = plan;
      const object = inIncarnation(plan.head, live);
      if ('delete' in change) continue;
      if (change === fast && !live) {
        // No session: no value has that version (and nothing is created for a failing commit).
        failures.push({ kind: 'value', key: change.key, reason: 'version', currentVersion: null });
        continue;
      }
      if (!plan.read) continue;
      if (
        (change.ifAbsent && object) ||
        (change.ifVersion !== undefined && object?.etag !== change.ifVersion) ||
        (change.ifRevision !== undefined && (!object || revisionOf(object) !== change.ifRevision))
      )
        failures.push({
          kind: 'value',
          key: change.key,
          reason: 'version',
          currentVersion: object?.etag ?? null,
          currentRevision: object ? revisionOf(object) : null,
        });
    }
    if (failures.length === 0) return;
    // The fast path's value was not read: on this failure path it is (one HEAD), so that every
    // failing key is named.
    const unread = planned.values.find((p) => !p.read && !p.done && live && p.change === fast);
    if (unread && 'value' in unread.change) {
      const object = inIncarnation(await headOrUndefined(this.ctx.driver, unread.name), live);
      const done = committedWrite(object, identity, unread.change.key) !== undefined;
      if (!done && object?.etag !== unread.change.ifVersion)
        failures.push({
          kind: 'value',
          key: unread.change.key,
          reason: 'version',
          currentVersion: object?.etag ?? null,
        });
    }
    throw new CommitPreconditionError(planned.commitId, failures);
  }

  /**
   * Writes the values not done: the fast path's first and alone, then the others together. Answers
   * what was applied; a failure throws (a refusal when nothing was written, else `CommitPartialError`).
   */
  private async writeValues(planned: PlannedCommit, written: Marker): Promise<Applied[]> {
    const { s, identity, fence } = planned;
    const applied: Applied[] = [];
    const failed: CommitFailure[] = [];
    const pending = planned.values.filter((p) => !p.done);
    const first = pending.find((p) => p.change === planned.fast);
    // A hinted value whose hint failed was not there as seen: it may create it (the marker then).
    const creating = () => this.sessions.forWrite(s, planned.read, fence, true);
    if (first) {
      const outcome = await this.writeValue(first, written, identity, fence, creating);
      // The first write of the commit: nothing is written yet.
      if ('failure' in outcome) throw this.refusal(planned, [{ ...outcome.failure, seen: outcome.seen }]);
      first.done = outcome.done;
      applied.push({ kind: 'value', key: first.change.key });
    }
    const others = await Promise.all(
      pending
        .filter((p) => p !== first)
        .map((p) => settle(this.writeValue(p, written, identity, fence, creating))),
    );
    let error: unknown;
    pending
      .filter((p) => p !== first)
      .forEach((plan, i) => {
        const got = others[i] as Settled<Awaited<ReturnType<Commits['writeValue']>>>;
        if ('error' in got) {
          error ??= got.error;
          return;
        }
        if ('failure' in got.value) failed.push(got.value.failure);
        else {
          plan.done = got.value.done;
          applied.push({ kind: 'value', key: plan.change.key });
        }
      });
    // A list that indexes values never points at one not written: no list change after a failure.
    if (error !== undefined) throw error;
    if (failed.length > 0)
      throw applied.length === 0
        ? this.refusal(planned, failed)
        : new CommitPartialError(planned.commitId, applied, failed);
    return applied;
  }

  /** The refusal of a commit whose value writes all failed: nothing of it is written. */
  private refusal(planned: PlannedCommit, failures: readonly (CommitFailure & { seen?: number })[]) {
    const { token } = planned;
    const fencedBy = failures.find((f) => f.reason === 'fenced');
    if (fencedBy && token !== undefined) {
      this.ctx.metrics.count('fencedWrites');
      return new FencedError(token, fencedBy.seen ?? token + 1);
    }
    return new CommitPreconditionError(
      planned.commitId,
      failures.map(({ seen: _, ...f }) => f),
    );
  }

  /** Writes the lists not done, after the values (`applied`, added to); a failure is `CommitPartialError`. */
  private async writeLists(planned: PlannedCommit, written: Marker, applied: Applied[]): Promise<void> {
    const { s } = planned;
    const failed: CommitFailure[] = [];
    let error: unknown;
    const listWrites = await Promise.all(
      planned.lists.map((plan) =>
        plan.done ? undefined : settle(this.writeList(s, plan, written, planned.fence)),
      ),
    );
    for (const [i, plan] of planned.lists.entries()) {
      const got = listWrites[i];
      if (!got) continue;
      if ('value' in got) {
        plan.done = got.value;
        applied.push({ kind: 'list', key: plan.change.key });
        continue;
      }
      const failure = await this.listFailure(s, plan, written.inc, got.error);
      if (failure) failed.push(failure);
      else error ??= got.error;
    }
    if (error !== undefined) throw error;
    if (failed.length > 0) throw new CommitPartialError(planned.commitId, applied, failed);
  }

  /** The commit record of a commit without a lease (+1 GET in the commit's first round trip). */
  private async readRecord(s: string, commitId: string): Promise<StoredObject | undefined> {
    return getOrUndefined(this.ctx.driver, this.layout.commitRecord(s, commitId));
  }

  /**
   * Writes the commit record (create-only) before the commit's first value or list write: a
   * concurrent commit under the same id with another body then finds it and writes nothing.
   */
  private async writeRecord(s: string, inc: string, identity: CommitIdentity): Promise<void> {
    const name = this.layout.commitRecord(s, identity.commitId);
    try {
      await this.ctx.driver.put(name, JSON.stringify({ v: 1, inc, ...identity }), {
        contentType: 'application/json',
        tags: { kind: 'state' },
        ifNoneMatch: '*',
      });
    } catch (error) {
      if (!(error instanceof ObjectConditionFailedError)) throw error;
      const seen = recordOf(await this.readRecord(s, identity.commitId), inc);
      if (seen && seen.digest !== identity.digest)
        throw new CommitMismatchError(identity.commitId, 'commit', '');
    }
  }

  /**
   * Decides a list change on its pre-read: apply it, skip it (this commit's write is recorded), or
   * a failing precondition. The same commit id recorded with another body is `CommitMismatchError`.
   */
  private async checkList(
    change: CommitList,
    peek: ListPeek,
    writeId: string,
    commitId: string,
  ): Promise<'apply' | { done: ListWriteResult } | { failure: CommitFailure }> {
    const { key } = change;
    const failure = (reason: 'count' | 'hash') => ({
      failure: { kind: 'list' as const, key, reason, count: peek.count, hash: peek.hash },
    });
    // Looked for in what was read; on a list that no longer meets the change, in its history too.
    const replayed = async (deep: boolean) => {
      try {
        const record = await peek.recorded(writeId, deep);
        return record ? { done: record } : undefined;
      } catch (error) {
        if (error instanceof IdempotencyKeyReusedError) throw new CommitMismatchError(commitId, 'list', key);
        throw error;
      }
    };
    if ('append' in change) {
      if (peek.count === change.expectedCount && peek.hash === change.expectedHash)
        return (await replayed(false)) ?? 'apply';
      return (await replayed(true)) ?? failure(peek.count !== change.expectedCount ? 'count' : 'hash');
    }
    if ('replace' in change) {
      const shallow = await replayed(false);
      if (shallow) return shallow;
      // Replacing a list by what it holds changes nothing (a retry of a replace that landed).
      const hash = chainHash(EMPTY_HASH, change.replace);
      if (peek.count === change.replace.length && peek.hash === hash)
        return { done: { action: 'unchanged', count: peek.count, hash } };
      if (change.expectedHash === undefined || change.expectedHash === peek.hash) return 'apply';
      return failure('hash');
    }
    if (peek.hash === change.expectedHash) {
      const shallow = await replayed(false);
      if (shallow) return shallow;
      if (change.truncate > peek.count) return failure('count');
      return 'apply';
    }
    return (await replayed(true)) ?? failure('hash');
  }

  /**
   * Writes (or deletes) one value through the write path's `putValue`. A value saved with the
   * version the caller saw (`seenVersion`, not read first) is written with that `If-Match`; when
   * it fails, the value is read and written as a save without it (`again`: the marker for a
   * create, as the value may be gone).
   */
  private async writeValue(
    plan: ValuePlan,
    marker: Marker,
    identity: CommitIdentity,
    fence: Fence,
    again: () => Promise<Marker>,
  ): Promise<{ done: ValueDone } | { failure: CommitFailure; seen?: number }> {
    const { driver } = this.ctx;
    const { change, name } = plan;
    if ('delete' in change) {
      await driver.delete(name);
      return { done: {} };
    }
    // Not read: the fast path and a hint carry the revision of the version they name (`plan`).
    const revision = plan.read
      ? nextRevision(inIncarnation(plan.head, marker))
      : (change.seenRevision as number) + 1;
    try {
      const { etag } = await putValue(driver, name, jsonBody(change.value), marker.inc, fence, {
        head: plan.head,
        read: plan.read,
        revision,
        ...(change.ifVersion !== undefined ? { ifVersion: change.ifVersion } : {}),
        ...(!plan.read && change.seenVersion !== undefined ? { ifVersion: change.seenVersion } : {}),
        commit: identity,
      });
      return { done: { etag, revision } };
    } catch (error) {
      if (!(error instanceof ObjectConditionFailedError)) throw error;
      const now = await headOrUndefined(driver, name);
      const mine = inIncarnation(now, marker);
      // This commit id wrote it meanwhile (a concurrent retry of the same commit).
      const written = committedWrite(mine, identity, change.key);
      if (written !== undefined) return { done: written };
      if (!plan.read && change.ifVersion === undefined) {
        // The hint failed: as a save read first (its own checks; a recorded token still fences).
        const current = mine ? marker : await again();
        await fence.check(storedToken(mine));
        return this.writeValue({ ...plan, head: now, read: true }, current, identity, fence, again);
      }
      const seen = tokenOf(mine);
      const fenced = fence.token !== undefined && seen > fence.token;
      return {
        failure: {
          kind: 'value',
          key: change.key,
          reason: fenced ? 'fenced' : 'version',
          currentVersion: mine?.etag ?? null,
          currentRevision: mine ? revisionOf(mine) : null,
        },
        ...(fenced ? { seen } : {}),
      };
    }
  }

  private async writeList(s: string, plan: ListPlan, marker: Marker, fence: Fence): Promise<ListWriteResult> {
    const { change, writeId } = plan;
    if ('append' in change)
      return this.lists.appendPeeked(
        s,
        change.key,
        change.append,
        { expectedCount: change.expectedCount, expectedHash: change.expectedHash, writeId, fence },
        marker,
        plan.peek,
      );
    if ('replace' in change)
      return this.lists.save(s, change.key, change.replace, {
        ...(change.expectedHash === undefined ? {} : { ifHash: change.expectedHash }),
        fence,
      });
    return this.lists.truncate(s, change.key, {
      count: change.truncate,
      expectedHash: change.expectedHash,
      writeId,
      fence,
    });
  }

  /** The failure a list write's error is (with the list's count and hash now), or undefined for any other error. */
  private async listFailure(
    s: string,
    plan: ListPlan,
    inc: string,
    error: unknown,
  ): Promise<CommitFailure | undefined> {
    const { key } = plan.change;
    let reason: 'count' | 'hash' | 'fenced';
    if (error instanceof AppendConflictError) {
      const expected = 'append' in plan.change ? plan.change.expectedCount : error.count;
      reason = error.count !== expected ? 'count' : 'hash';
      return { kind: 'list', key, reason, count: error.count, hash: error.hash };
    }
    if (error instanceof ListTooShortError) reason = 'count';
    else if (error instanceof ListPreconditionFailedError) reason = 'hash';
    else if (error instanceof FencedError) reason = 'fenced';
    else return undefined;
    const stat = await this.lists.stat(s, key, inc).catch(() => undefined);
    return { kind: 'list', key, reason, count: stat?.count ?? 0, hash: stat?.hash ?? EMPTY_HASH };
  }
}

// ---- helpers -----------------------------------------------------------------------------------

const CORRUPT = Symbol('corrupt');

type Settled<T> = { readonly value: T } | { readonly error: unknown };

/** A promise that never rejects (so reads started together can all be awaited, then judged). */
function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

function unwrap<T>(settled: Settled<T>): T {
  if ('error' in settled) throw settled.error;
  return settled.value;
}

const tokenOf = (object: ObjectInfo | undefined): number => storedToken(object) ?? -1;

/** A value's object in the incarnation of `marker` (another's is a leftover: absent). */
function inIncarnation(head: ObjectInfo | undefined, marker: Marker | undefined): ObjectInfo | undefined {
  return head && incOf(head) === marker?.inc ? head : undefined;
}

/** Whether every change of a commit is done (a replay of a commit that landed). */
const landed = (planned: PlannedCommit) =>
  planned.values.every((p) => p.done) && planned.lists.every((p) => p.done);

/** A commit's answer, from its plans once all are done. */
function resultOf(planned: PlannedCommit): CommitResult {
  return {
    commitId: planned.commitId,
    values: planned.values.map((p) => ({
      key: p.change.key,
      ...(p.done?.etag ? { etag: p.done.etag } : {}),
      ...(p.done?.revision ? { revision: p.done.revision } : {}),
    })),
    lists: planned.lists.map((p) => {
      const { action, count, hash } = p.done as ListWriteResult;
      return { key: p.change.key, action, count, hash };
    }),
  };
}
