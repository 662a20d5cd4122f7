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
 * - **A value's write** (`putValue`): the one conditional PUT of a value, for saves and commits.
 * - **A request's identity** (`recordId`): a write id bound to a digest of the request's canonical
 *   body, so that a reused Idempotency-Key or commitId with another body is told from a replay.
 * - **A create-once record** (`putRecordOnce`): a request's record written create-only, its replay
 *   told from another body by the identity in its metadata (workspace snapshot commits).
 */
import { createHash } from 'node:crypto';
import { CommitMismatchError, FencedError } from '../contract/errors.js';
import type { CommitIdentity, LockGrant } from '../contract/lock.js';
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
    if (token === undefined) return;
    const seen = Math.max(-1, ...recorded.map((t) => t ?? -1));
    if (seen > token) this.refuse(new FencedError(token, seen));
    if (!this.grant) return;
    const grant = await this.grant;
    if (grant && grant.token > token) this.refuse(new FencedError(token, grant.token));
    if (!grant || grant.token !== token || !grant.live) this.refuse(new FencedError(token, null));
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

/**
 * The etag of value `key`'s object when commit `identity` wrote it (what `putValue` recorded);
 * undefined when another commit or none did. The same commit id with another body is
 * `CommitMismatchError`.
 */
export function committedEtag(
  object: ObjectInfo | undefined,
  identity: CommitIdentity,
  key: string,
): string | undefined {
  if (object?.metadata[COMMIT_META] !== identity.commitId) return undefined;
  if (object.metadata[DIGEST_META] !== identity.digest)
    throw new CommitMismatchError(identity.commitId, 'value', key);
  return object.etag;
}

/** How a value's write is conditioned. */
export interface ValueWrite {
  /** The value's object in this incarnation as read before the write, or undefined when absent. */
  readonly head: ObjectInfo | undefined;
  /** Whether the head was read (false: nothing is known of the object; only `ifVersion` conditions it). */
  readonly read: boolean;
  readonly ifVersion?: string;
  readonly ifAbsent?: boolean;
  /** The commit writing it, recorded in its metadata. */
  readonly commit?: CommitIdentity;
}

/**
 * Writes a value: metadata `inc`, the fence's token and the commit's identity; conditional on
 * `ifVersion`, or, for a token write, a conditional write or `ifAbsent`, on the head it read (so the
 * checks made on that head hold atomically with the write where the backend has conditional
 * overwrite; on OSS an overwrite is unconditional, checked just before). Unconditional otherwise.
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
  const condition =
    write.ifVersion !== undefined
      ? { ifMatch: write.ifVersion }
      : write.ifAbsent || fence.token !== undefined
        ? onHead
        : {};
  const metadata: Record<string, string> = { inc };
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

const hex8 = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 8);

/**
 * The record a list write leaves among the list's last writes: 8 hex digits naming the request
 * (its Idempotency-Key, or a commit's id and the list key) and 8 of its body's digest. Both list
 * formats keep it as it is (16 hex digits: the append format's trailer field).
 */
export function recordId(name: string, digest: string): string {
  return `${hex8(name)}${hex8(digest)}`;
}

/** A write record id: 16 lowercase hex digits. */
export const RECORD_ID = /^[0-9a-f]{16}$/;

/** How a recorded write id compares with a write's: the same request, the same name with another body, or neither. */
export function compareRecord(recorded: string, mine: string): 'same' | 'reused' | 'other' {
  if (recorded === mine) return 'same';
  return RECORD_ID.test(mine) && recorded.slice(0, 8) === mine.slice(0, 8) ? 'reused' : 'other';
}

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
