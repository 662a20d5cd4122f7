/**
 * The write path (docs/DESIGN.md, "The write path"): what every mutation of a session passes
 * through, so that no route owns a guarantee of its own.
 *
 * - **Fencing** (`Fence`): where the store has a `TokenAuthority` (the lock; the HTTP server always
 *   gives it), a write carrying a token reads the session's lock item in parallel with the reads
 *   the write makes anyway, and is refused (`FencedError`, nothing written) when the token is not
 *   the one the lock granted to a live lease. The tokens the objects record are the second line:
 *   a token below one a target records is refused, with or without an authority.
 * - **The token a write records**: a value's `token` metadata, a list's head or trailer, the marker.
 * - **A value's write** (`putValue`): the one conditional PUT of a value, for saves and commits,
 *   recording the value's next revision (`revisionOf`, `nextRevision`).
 * - **A request's identity** (`recordId`): a write id bound to a digest of the request's canonical
 *   body, so that a reused Idempotency-Key or commitId with another body is told from a replay.
 * - **A create-once record** (`putRecordOnce`): a request's record written create-only, its replay
 *   told from another body by the identity in its metadata (workspace snapshot commits).
 */
import { CommitMismatchError, type FencedError } from '../contract/errors.js';
import { type CommitIdentity, fencingRefusal, type LockGrant } from '../contract/lock.js';
import type { MetricsSink } from '../contract/types.js';
import { ObjectConditionFailedError } from '../drivers/errors.js';
import type { ObjectInfo, ObjectStoreDriver } from '../drivers/types.js';

/**
 * The fencing check of one write: the lock read (started when the fence is made, so it runs in
 * parallel with the write's own reads) and the comparison with the tokens its targets record.
 */
export class Fence {
  private readonly grant: Promise<LockGrant | undefined> | undefined;

  constructor(
    /** The write's token; undefined: the write is not fenced. */
    readonly token: number | undefined,
    authority: (() => Promise<LockGrant | undefined>) | undefined,
    private readonly metrics: MetricsSink,
  ) {
    if (token !== undefined && authority) {
      this.grant = authority();
      // Awaited by `check`; a write refused before it asks must not leave a rejection unhandled.
      this.grant.catch(() => {});
    }
  }

  /** An authority checks this write's token (so the lock records a commit's identity, not an object). */
  get authorized(): boolean {
    return this.grant !== undefined;
  }

  /** The lock's grant (undefined: no authority, no token, or no lock item). */
  lockGrant(): Promise<LockGrant | undefined> {
    return this.grant ?? Promise.resolve(undefined);
  }

  /**
   * Refuses the write (`FencedError`) when the authority has not granted its token to a live lease,
   * or when a target records a higher token. A write without a token passes.
   */
  async check(...recorded: ReadonlyArray<number | null | undefined>): Promise<void> {
    const { token } = this;
    const early = fencingRefusal(token, recorded, false, undefined);
    if (early) this.refuse(early);
    if (token === undefined || !this.grant) return;
    const refusal = fencingRefusal(token, recorded, true, await this.grant);
    if (refusal) this.refuse(refusal);
  }

  private refuse(error: FencedError): never {
    this.metrics.count('fencedWrites');
    throw error;
  }
}

// ---- a value's write -----------------------------------------------------------------------------

/** Metadata a committed value records: the commit id and the digest of the commit's body. */
const COMMIT_META = 'commit';
const DIGEST_META = 'digest';
/** Metadata every value records: its revision (docs/DESIGN.md, "Revisions"). */
const REVISION_META = 'rev';

/**
 * The revision of a value's object: what it records, or 1 for an object written before revisions
 * (or by the AgentScope reference), which records none.
 */
export function revisionOf(object: ObjectInfo): number {
  const recorded = Number(object.metadata[REVISION_META]);
  return Number.isSafeInteger(recorded) && recorded >= 1 ? recorded : 1;
}

/** The revision a write over `current` (this incarnation's object, or undefined: absent) records. */
export const nextRevision = (current: ObjectInfo | undefined): number =>
  current === undefined ? 1 : revisionOf(current) + 1;

/**
 * The version and revision of value `key`'s object when commit `identity` wrote it (what
 * `putValue` recorded); undefined when another commit or none did. The same commit id with another
 * body is `CommitMismatchError`.
 */
export function committedWrite(
  object: ObjectInfo | undefined,
  identity: CommitIdentity,
  key: string,
): { etag: string; revision: number } | undefined {
  if (object?.metadata[COMMIT_META] !== identity.commitId) return undefined;
  if (object.metadata[DIGEST_META] !== identity.digest)
    throw new CommitMismatchError(identity.commitId, 'value', key);
  return { etag: object.etag, revision: revisionOf(object) };
}

/** How a value's write is conditioned. */
export interface ValueWrite {
  /** The value's object in this incarnation as read before the write, or undefined when absent. */
  readonly head: ObjectInfo | undefined;
  /** Whether the head was read (false: nothing is known of the object; only `ifVersion` conditions it). */
  readonly read: boolean;
  readonly ifVersion?: string;
  /** The commit writing it, recorded in its metadata. */
  readonly commit?: CommitIdentity;
  /** The revision it records (`nextRevision` of what the write read, or of what its caller saw). */
  readonly revision: number;
}

/**
 * Writes a value: metadata `inc`, its revision, the fence's token and the commit's identity;
 * conditional on `ifVersion`, else on the head it read (so the revision and the checks made on
 * that head hold atomically with the write where the backend has conditional overwrite; on OSS an
 * overwrite is unconditional, checked just before), else (nothing read) unconditional.
 * A failed condition throws the driver's `ObjectConditionFailedError`: the caller decides what it means.
 */
export async function putValue(
  driver: ObjectStoreDriver,
  name: string,
  body: string,
  inc: string,
  fence: Fence,
  write: ValueWrite,
): Promise<{ etag: string }> {
  const { head } = write;
  const onHead =
    head === undefined
      ? write.read
        ? { ifNoneMatch: '*' as const }
        : {}
      : driver.capabilities.conditionalOverwrite
        ? { ifMatch: head.etag }
        : {};
  const condition = write.ifVersion !== undefined ? { ifMatch: write.ifVersion } : onHead;
  const metadata: Record<string, string> = { inc, [REVISION_META]: String(write.revision) };
  if (fence.token !== undefined) metadata.token = String(fence.token);
  if (write.commit) {
    metadata[COMMIT_META] = write.commit.commitId;
    metadata[DIGEST_META] = write.commit.digest;
  }
  return driver.put(name, body, {
    contentType: 'application/json',
    metadata,
    tags: { kind: 'state' },
    ...condition,
  });
}

// ---- a request's identity ------------------------------------------------------------------------

// A request's identity is the contract's (every engine records it so).
export { compareRecord, RECORD_ID, recordId } from '../contract/hash.js';

// ---- a create-once record ------------------------------------------------------------------------

/**
 * Writes the record of a request named by `identity` (a workspace snapshot's commit) create-only,
 * with the identity in its metadata, after the fence's check: `written`, or `replayed` when the
 * same request wrote it before. The same id with another body is `CommitMismatchError`, nothing
 * written. `existing` is the record as read before (undefined: absent).
 */
export async function putRecordOnce(
  driver: ObjectStoreDriver,
  name: string,
  body: string,
  identity: CommitIdentity,
  fence: Fence,
  existing: ObjectInfo | undefined,
  tags: Readonly<Record<string, string>>,
  metadata: Readonly<Record<string, string>> = {},
): Promise<'written' | 'replayed'> {
  const replay = (object: ObjectInfo) => {
    if (
      object.metadata[DIGEST_META] !== identity.digest ||
      object.metadata[COMMIT_META] !== identity.commitId
    )
      throw new CommitMismatchError(identity.commitId, 'commit', '');
    return 'replayed' as const;
  };
  if (existing) return replay(existing);
  await fence.check();
  const meta: Record<string, string> = {
    ...metadata,
    [COMMIT_META]: identity.commitId,
    [DIGEST_META]: identity.digest,
  };
  if (fence.token !== undefined) meta.token = String(fence.token);
  try {
    await driver.put(name, body, { contentType: 'application/json', metadata: meta, tags, ifNoneMatch: '*' });
    return 'written';
  } catch (error) {
    if (!(error instanceof ObjectConditionFailedError)) throw error;
    return replay(await driver.head(name));
  }
}
