/**
 * Session markers (docs/DESIGN.md, "Sessions" and "The write path").
 *
 * A session exists iff its marker exists and is younger than the retention. The marker's body holds
 * the session's incarnation (every object the session writes carries it, so leftovers of a deleted
 * or expired incarnation are never read), the highest fencing token seen, and a nonce; every change
 * of the body is a conditional write where the backend has one.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { ContendedError, ReferenceIdUnsupportedError } from '../contract/errors.js';
import { decodeId, isMemorySession } from '../contract/ids.js';
import { ObjectConditionFailedError } from '../drivers/errors.js';
import type { ListedObject } from '../drivers/types.js';
import { mapLimited } from '../util/map-limited.js';
import { getOrUndefined, headOrUndefined, listAll, parseJsonObject, type StoreContext } from './context.js';
import { isValueName, NAME, type UserLayout } from './layout.js';
import { isReferenceListHash, REFERENCE_INC } from './reference.js';
import type { Fence } from './write-path.js';

/** A live session marker. */
export interface Marker {
  readonly inc: string;
  readonly token: number | null;
  readonly etag: string;
  readonly lastModified: Date;
  /** The session holds nothing (its last key was deleted): it does not exist for `exists` and listings. */
  readonly empty?: boolean;
}

/**
 * A live marker's body is padded to at least this many bytes, and an empty one (a session whose
 * last key was deleted) is always shorter: listings and HEADs tell them apart by size alone.
 */
export const LIVE_MARKER_BYTES = 128;

/** What a marker read found: a live marker, an over-age one (absent for reads), or nothing. */
export interface MarkerRead {
  readonly live?: Marker;
  /** The etag of an over-age or unreadable marker, which a new incarnation replaces conditionally. */
  readonly staleEtag?: string;
}

const MAX_ATTEMPTS = 5;

/**
 * A list format whose objects need a keep-alive of their own (the append format's logs: an
 * appendable object cannot be copied onto itself). Called with every object the session holds.
 */
export interface StateKeeper {
  /**
   * Keeps alive those of `objects` it owns that are older than `cutoff` (and may delete its own
   * garbage); returns the names it owns, which the generic keep-alive leaves alone.
   */
  keep(
    sessionId: string,
    inc: string,
    objects: readonly ListedObject[],
    cutoff: number,
  ): Promise<ReadonlySet<string>>;
}

/** A new incarnation id: sortable by time, unique by its random tail, only `[a-z0-9]`. */
function newIncarnation(now: number): string {
  return `${now.toString(36)}${randomBytes(4).toString('hex')}`;
}

/** Marker operations of one user. */
export class Sessions {
  /** Set by a list format that keeps its objects alive itself (the append format); none otherwise. */
  keeper?: StateKeeper;

  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
  ) {}

  /**
   * Reads the marker (one GET). With `adoptReference`, a session without one that holds objects
   * of the AgentScope reference is adopted (`adopt`: one LIST, and one more request when it finds
   * something).
   */
  async read(sessionId: string): Promise<MarkerRead> {
    const object = await getOrUndefined(this.ctx.driver, this.layout.marker(sessionId));
    if (!object) {
      if (!this.ctx.adoptReference || isMemorySession(sessionId)) return {};
      return (await this.adopt(sessionId)) ?? {};
    }
    const body = parseJsonObject(object.body);
    const inc = body?.inc;
    const token = body?.token;
    if (
      typeof inc !== 'string' ||
      !/^[a-z0-9]+$/.test(inc) ||
      (token !== null && !Number.isSafeInteger(token))
    ) {
      this.ctx.metrics.count('corruptObjects');
      return { staleEtag: object.etag };
    }
    if (this.isOverAge(sessionId, object.lastModified)) return { staleEtag: object.etag };
    return {
      live: {
        inc,
        token: token as number | null,
        etag: object.etag,
        lastModified: object.lastModified,
        ...(body?.empty === true ? { empty: true } : {}),
      },
    };
  }

  /**
   * Adopts a session the reference wrote (lib/store/reference.ts): one LIST of its folder finds
   * its first name of the reference's shapes (`<key>.json`, `<key>.list.hash`), whose object is
   * read (a HEAD: no `inc`; a GET: a reference hash) so that leftovers of this store's own deleted
   * or expired sessions are not taken for it; then the marker of incarnation `ref` is created
   * (create-only: a racing adopter's marker, or a writer's, is read instead).
   */
  private async adopt(sessionId: string): Promise<MarkerRead | undefined> {
    const { driver } = this.ctx;
    const folder = this.layout.session(sessionId);
    const page = await driver.list({ prefix: folder, delimiter: NAME.delimiter });
    const name = page.objects
      .map((o) => o.key)
      .find((key) => {
        const rest = key.slice(folder.length);
        return !rest.includes('/') && (isValueName(rest) || rest.endsWith(NAME.listHead));
      });
    if (name === undefined) return undefined;
    const theirs = name.endsWith(NAME.listHead)
      ? await getOrUndefined(driver, name).then((o) => o !== undefined && isReferenceListHash(o.body))
      : await headOrUndefined(driver, name).then((o) => o !== undefined && o.metadata.inc === undefined);
    if (!theirs) return undefined;
    try {
      const { etag } = await driver.put(this.layout.marker(sessionId), this.body(REFERENCE_INC, null), {
        contentType: 'application/json',
        tags: { kind: 'marker' },
        ifNoneMatch: '*',
      });
      return { live: { inc: REFERENCE_INC, token: null, etag, lastModified: new Date(this.ctx.now()) } };
    } catch (error) {
      if (!(error instanceof ObjectConditionFailedError)) throw error;
      const object = await getOrUndefined(driver, this.layout.marker(sessionId));
      return object ? this.read(sessionId) : undefined;
    }
  }

  /** True when a marker this old counts as absent (never for the memory session, which never expires). */
  isOverAge(sessionId: string, lastModified: Date): boolean {
    return !isMemorySession(sessionId) && this.ctx.now() - lastModified.getTime() > this.ctx.retentionMs;
  }

  /**
   * The live marker a write needs: creates the session when absent (purging what an earlier
   * incarnation left), passes the write's fence (docs/DESIGN.md, "The write path": the lock's grant
   * and the marker's token), and keeps the marker fresh. The marker records a higher token for a
   * write that `creates` an object; without an authority (a library store given no lock), for every
   * write that carries one (+1 PUT per grant), so that a session delete by a stale holder is fenced.
   */
  async forWrite(sessionId: string, read: MarkerRead, fence: Fence, creates: boolean): Promise<Marker> {
    const { token } = fence;
    let current = read;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const marker = current.live ?? (await this.create(sessionId, current.staleEtag, fence));
      if (!marker) {
        current = await this.read(sessionId);
        continue;
      }
      await fence.check(marker.token);
      const raise =
        token !== undefined &&
        (creates || !fence.authorized) &&
        (marker.token === null || token > marker.token);
      // The memory session never expires: nothing of it is kept alive.
      const stale =
        !isMemorySession(sessionId) && this.ctx.now() - marker.lastModified.getTime() > this.ctx.keepAliveMs;
      // A write that creates a key in an emptied session makes it exist again.
      const revive = creates && marker.empty === true;
      if (!raise && !stale && !revive) return marker;
      if (!raise && !revive) {
        // Only the keep-alive is due: it changes nothing the write needs, so it runs beside the
        // write, never before it; the store's call answers once it has settled (`settle`).
        this.track(this.keepAlive(sessionId, marker));
        return marker;
      }
      const written = await this.rewrite(
        sessionId,
        marker,
        raise ? (token as number) : marker.token,
        marker.empty === true && !revive,
      );
      if (written && stale) await this.refreshState(sessionId, written.inc);
      if (written) return written;
      current = await this.read(sessionId);
    }
    throw new ContendedError('the session marker is too contended; nothing was written; retry');
  }

  /** Keep-alives running beside the writes that found them due (`settle` waits for them). */
  private readonly pending = new Set<Promise<void>>();

  private track(job: Promise<void>): void {
    this.pending.add(job);
    void job.finally(() => this.pending.delete(job));
  }

  /** Waits for the keep-alives started by this store's writes (called before a store call answers). */
  async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /**
   * The marker written again (a lost race: someone else refreshed it), then the state's refresh.
   * Best effort: a failure is counted and left to the next write's keep-alive (the lifecycle grace
   * is days, the interval an hour).
   */
  private async keepAlive(sessionId: string, marker: Marker): Promise<void> {
    try {
      const written = await this.rewrite(sessionId, marker, marker.token, marker.empty === true);
      if (written) await this.refreshState(sessionId, written.inc);
    } catch {
      this.ctx.metrics.count('persistenceFailures');
    }
  }

  /**
   * Keep-alive of the state (at most once per R, with the marker): copies onto themselves the
   * `kind=state` objects older than the state grace minus R, so no state object is ever more than
   * the grace older than its marker. Lifecycle deletes state only after retention + grace, when the
   * marker (retention) is already past: a session is never seen half expired. Archives, workspaces
   * and uploads are never refreshed; they follow their own rules. State objects are the session's
   * direct children (encoded keys hold no `/`; workspaces and uploads live in `~` folders) other
   * than archives. Cost: each state object is copied at most once per (grace − R) of activity.
   * An object that changes in place (a list head, a value) is refreshed by a GET and a PUT of the
   * same body conditional on its etag where the backend can (a copy racing a write could undo it);
   * immutable ones (segments, items of their own) are copied onto themselves.
   */
  private async refreshState(sessionId: string, inc: string): Promise<void> {
    const cutoff = this.ctx.now() - (this.ctx.stateGraceMs - this.ctx.keepAliveMs);
    const prefix = this.layout.session(sessionId);
    const all = await listAll(this.ctx.driver, prefix);
    // Objects a list format keeps alive itself (the append format's logs) are left to it.
    const kept = this.keeper
      ? await this.keeper.keep(sessionId, inc, all, cutoff).catch(() => {
          this.ctx.metrics.count('persistenceFailures');
          return new Set<string>();
        })
      : new Set<string>();
    const old = all.filter(
      (o) =>
        !kept.has(o.key) &&
        !o.key.slice(prefix.length).includes('/') &&
        !o.key.includes(NAME.archive) &&
        o.lastModified.getTime() < cutoff,
    );
    const { driver } = this.ctx;
    for (const object of old) {
      const mutable = object.key.endsWith(NAME.listHead) || object.key.endsWith(NAME.value);
      const refresh =
        mutable && driver.capabilities.conditionalOverwrite
          ? this.rewriteInPlace(object.key)
          : driver.copy(object.key, object.key, { tags: { kind: 'state' } });
      await refresh.catch(() => {
        // Deleted or changed meanwhile (then it is fresh), or a transient failure: the next keep-alive tries again.
        this.ctx.metrics.count('persistenceFailures');
      });
    }
  }

  /** Writes an object again as it is, if it has not changed since read (its last-modified time moves). */
  private async rewriteInPlace(name: string): Promise<void> {
    const object = await this.ctx.driver.get(name);
    await this.ctx.driver.put(name, object.body, {
      ...(object.contentType ? { contentType: object.contentType } : {}),
      ...(object.contentEncoding ? { contentEncoding: object.contentEncoding } : {}),
      metadata: object.metadata,
      tags: { kind: 'state' },
      ifMatch: object.etag,
    });
  }

  /**
   * Marks a session empty when nothing of it is left after a delete (one LIST of its folder, and a
   * read of each list head it holds, until one is live): the marker is written again as an empty
   * one, conditional on the etag read where the backend can. A key created meanwhile by a writer
   * that found the marker live is not seen: the session then reads as not existing until its next
   * create (its keys still read back); on OSS the empty marker is also written unconditionally.
   */
  async markIfEmpty(sessionId: string, marker: Marker, listLive: (key: string) => Promise<boolean>) {
    if (marker.empty) return;
    const folder = this.layout.session(sessionId);
    const page = await this.ctx.driver.list({ prefix: folder, delimiter: NAME.delimiter });
    if (page.nextCursor || page.prefixes.some((p) => p.slice(folder.length).startsWith(NAME.workspaces)))
      return;
    const names = page.objects.map((o) => o.key.slice(folder.length));
    if (names.some(isValueName)) return;
    for (const name of names.filter((n) => n.endsWith(NAME.listHead))) {
      let key: string;
      try {
        key = decodeId('key', name.slice(0, -NAME.listHead.length));
      } catch {
        return; // not a name this store wrote: something is there
      }
      if (await listLive(key)) return;
    }
    // A workspace or a workspace snapshot of this incarnation keeps the session: one LIST each
    // (limit 1), since a listing with delimiter `~` shows them only as `<session>/~` where it
    // shows them at all (s3rver does not).
    const held = await Promise.all(
      [this.layout.workspaces(sessionId, marker.inc), this.layout.snapshots(sessionId, marker.inc)].map(
        async (prefix) => (await this.ctx.driver.list({ prefix, limit: 1 })).objects.length > 0,
      ),
    );
    if (held.includes(true)) return;
    await this.rewrite(sessionId, marker, marker.token, true);
  }

  /** Writes the marker body again (new nonce), conditional on its etag where the backend can. */
  private async rewrite(
    sessionId: string,
    marker: Marker,
    token: number | null,
    empty = false,
  ): Promise<Marker | undefined> {
    const { driver } = this.ctx;
    try {
      const { etag } = await driver.put(this.layout.marker(sessionId), this.body(marker.inc, token, empty), {
        contentType: 'application/json',
        tags: { kind: 'marker' },
        ...(driver.capabilities.conditionalOverwrite ? { ifMatch: marker.etag } : {}),
      });
      return {
        inc: marker.inc,
        token,
        etag,
        lastModified: new Date(this.ctx.now()),
        ...(empty ? { empty: true } : {}),
      };
    } catch (error) {
      if (error instanceof ObjectConditionFailedError) return undefined;
      throw error;
    }
  }

  /**
   * Starts a new incarnation. The leftovers are listed BEFORE the marker is written, so the list
   * cannot hold anything of the new incarnation; only the writer whose conditional marker write
   * wins deletes them (archives stay, for audit, on their own schedule). Returns undefined when
   * another writer created the marker first.
   */
  private async create(sessionId: string, staleEtag: string | undefined, fence: Fence) {
    const { driver } = this.ctx;
    const { token } = fence;
    const [tombstone, leftovers] = await Promise.all([
      getOrUndefined(driver, this.layout.tombstone(sessionId)),
      this.listOwned(sessionId),
    ]);
    const deletedWith = tombstone ? parseJsonObject(tombstone.body)?.token : undefined;
    await fence.check(typeof deletedWith === 'number' ? deletedWith : undefined);
    await this.refuseReferenceIds(sessionId);
    const inc = newIncarnation(this.ctx.now());
    const recorded = token ?? (typeof deletedWith === 'number' ? deletedWith : null);
    let etag: string;
    try {
      const condition =
        staleEtag === undefined
          ? { ifNoneMatch: '*' as const }
          : driver.capabilities.conditionalOverwrite
            ? { ifMatch: staleEtag }
            : {};
      ({ etag } = await driver.put(this.layout.marker(sessionId), this.body(inc, recorded), {
        contentType: 'application/json',
        tags: { kind: 'marker' },
        ...condition,
      }));
    } catch (error) {
      if (error instanceof ObjectConditionFailedError) return undefined;
      throw error;
    }
    const stale = await this.purgeable(leftovers.filter((name) => !name.includes(NAME.archive)));
    if (stale.length > 0) {
      const { failed } = await driver.deleteMany(stale);
      // Leftovers are invisible (other incarnation); one that could not be deleted is only garbage.
      if (failed.length > 0) this.ctx.metrics.count('persistenceFailures', failed.length);
    }
    const created: Marker = { inc, token: recorded, etag, lastModified: new Date(this.ctx.now()) };
    return created;
  }

  /**
   * The leftovers a new incarnation deletes: never an object without an incarnation (the
   * reference's, lib/store/reference.ts). The names the reference writes are read first (a HEAD
   * per value, a GET per list head); everything else is this store's own.
   */
  private async purgeable(names: readonly string[]): Promise<string[]> {
    const { driver } = this.ctx;
    const keep = await mapLimited(names, 16, async (name) => {
      const rest = name.slice(name.lastIndexOf('/') + 1);
      if (name.endsWith(NAME.listHead) || rest.endsWith(NAME.listJson))
        return getOrUndefined(driver, name).then(
          (o) =>
            o !== undefined &&
            (isReferenceListHash(o.body) || (rest.endsWith(NAME.listJson) && o.metadata.inc === undefined)),
        );
      if (isValueName(rest))
        return headOrUndefined(driver, name).then((o) => o !== undefined && o.metadata.inc === undefined);
      return false;
    });
    return names.filter((_, i) => !keep[i]);
  }

  /**
   * With `adoptReference`, refuses to start a session the reference wrote under names this store
   * does not write (a user `a@b.example`, a session `a b`, the anonymous `__anon__`): one LIST of
   * that folder, only for such ids, only when a session starts.
   */
  private async refuseReferenceIds(sessionId: string): Promise<void> {
    const folder = this.ctx.adoptReference ? this.layout.referenceSession(sessionId) : undefined;
    if (folder === undefined) return;
    const page = await this.ctx.driver.list({ prefix: folder, limit: 1 });
    if (page.objects.length > 0) throw new ReferenceIdUnsupportedError(sessionId);
  }

  /** A marker's body: a live one padded to `LIVE_MARKER_BYTES`, an empty one always shorter. */
  private body(inc: string, token: number | null, empty = false): string {
    if (empty) return JSON.stringify({ v: 1, inc, token, empty: true });
    const text = JSON.stringify({ v: 1, inc, token, nonce: randomUUID() });
    const short = LIVE_MARKER_BYTES - Buffer.byteLength(text) - ',"pad":""'.length;
    return short > 0 ? `${text.slice(0, -1)},"pad":"${'.'.repeat(short)}"}` : text;
  }

  /** Every object the session owns (all pages). */
  async listOwned(sessionId: string): Promise<string[]> {
    return (await listAll(this.ctx.driver, this.layout.session(sessionId))).map((o) => o.key);
  }
}
