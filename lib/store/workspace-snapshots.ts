/**
 * Workspace snapshots on the object-storage engine (docs/DESIGN.md, "Workspace snapshots"): the
 * store only signs and checks. A push declares its new chunks (answered with those the parent
 * snapshot lacks), its packs and its compressed manifest (answered with presigned PUTs, each
 * signing its `Content-MD5`); the client uploads them straight to the object store, then commits:
 * the new packs are checked by listing (one LIST per 1,000 packs), the manifest is read and
 * validated against the stored packs' sizes, and the snapshot's record is written create-only —
 * the one write that makes a snapshot exist, so nothing is ever half committed. Fencing and the
 * commit's identity go through the write path (write-path.ts). Packs, manifests and records carry
 * `kind=pack`: no lifecycle rule moves them to an archive class or expires them (docs/DESIGN.md,
 * "Workspace snapshots"), so a live snapshot is always readable at once.
 */
import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { UnsupportedOperationError, UploadMismatchError, ValidationError } from '../contract/errors.js';
import { requestDigest } from '../contract/hash.js';
import { parseIJson } from '../contract/json.js';
import { MD5_PATTERN } from '../contract/limits.js';
import {
  LATEST_SNAPSHOT,
  MAX_MANIFEST_BYTES,
  MAX_MANIFEST_PLAIN_BYTES,
  MAX_PACK_BYTES,
  MAX_SNAPSHOT_CHUNKS,
  MAX_SNAPSHOT_PACKS,
  SNAPSHOT_ID,
  type SnapshotDirectRequest,
  type WorkspaceManifestDeclaration,
  type WorkspacePackDeclaration,
  type WorkspaceSnapshotCommitRequest,
  type WorkspaceSnapshotDownload,
  type WorkspaceSnapshotInfo,
  type WorkspaceSnapshotStart,
  type WorkspaceSnapshotStartRequest,
  type WorkspaceSnapshotSummary,
} from '../contract/workspace-snapshots.js';
import type { ListedObject, PresignedRequest } from '../drivers/types.js';
import { validateWorkspaceManifest, type WorkspaceManifest } from '../workspace-snapshots/manifest.js';
import { getOrUndefined, headOrUndefined, listAll, parseJsonObject, type StoreContext } from './context.js';
import type { UserLayout } from './layout.js';
import type { Sessions } from './sessions.js';
import { type Fence, putRecordOnce } from './write-path.js';

const CHUNK_HASH = /^sha256:[0-9a-f]{64}$/;
const PACK_ID = /^[0-9a-f]{64}$/;
const hexOf = (base64: string) => Buffer.from(base64, 'base64').toString('hex');
const direct = (r: PresignedRequest): SnapshotDirectRequest => ({
  method: r.method,
  url: r.url,
  headers: r.headers,
});

/** A new snapshot id: its creation time (10 base-36 digits of ms) and 16 random hex digits. */
function newSnapshotId(now: number): string {
  return `${now.toString(36).padStart(10, '0')}-${randomBytes(8).toString('hex')}`;
}

function checkSnapshotId(id: unknown, field: string): string {
  if (typeof id !== 'string' || !SNAPSHOT_ID.test(id))
    throw new ValidationError(field, 'must be a snapshot id (10 base-36 digits, "-", 16 hex digits)');
  return id;
}

function checkPacks(packs: unknown): WorkspacePackDeclaration[] {
  if (!Array.isArray(packs)) throw new ValidationError('packs', 'must be an array');
  if (packs.length > MAX_SNAPSHOT_PACKS)
    throw new ValidationError('packs', `must hold at most ${MAX_SNAPSHOT_PACKS} packs`);
  const seen = new Set<string>();
  return packs.map((p: Record<string, unknown>, i) => {
    if (typeof p?.id !== 'string' || !PACK_ID.test(p.id))
      throw new ValidationError(`packs[${i}].id`, 'must be 64 hex digits');
    if (seen.has(p.id)) throw new ValidationError(`packs[${i}].id`, 'is a duplicate');
    seen.add(p.id);
    if (!Number.isSafeInteger(p.size) || (p.size as number) < 1 || (p.size as number) > MAX_PACK_BYTES)
      throw new ValidationError(`packs[${i}].size`, `must be 1 to ${MAX_PACK_BYTES} bytes`);
    if (typeof p.md5 !== 'string' || !MD5_PATTERN.test(p.md5))
      throw new ValidationError(`packs[${i}].md5`, 'must be a base64 MD5');
    return { id: p.id, size: p.size as number, md5: p.md5 };
  });
}

function checkManifestDeclaration(m: unknown): WorkspaceManifestDeclaration {
  const d = m as Record<string, unknown> | undefined;
  if (typeof d !== 'object' || d === null) throw new ValidationError('manifest', 'must be an object');
  if (!Number.isSafeInteger(d.size) || (d.size as number) < 1 || (d.size as number) > MAX_MANIFEST_BYTES)
    throw new ValidationError('manifest.size', `must be 1 to ${MAX_MANIFEST_BYTES} bytes`);
  if (typeof d.md5 !== 'string' || !MD5_PATTERN.test(d.md5))
    throw new ValidationError('manifest.md5', 'must be a base64 MD5');
  return { size: d.size as number, md5: d.md5 };
}

/** What a snapshot's record holds (its body). */
interface SnapshotRecord {
  readonly v: 1;
  readonly snapshotId: string;
  readonly createdAt: string;
  readonly parent?: string;
  readonly manifest: { readonly size: number; readonly md5: string };
  readonly entries: number;
  readonly bytes: number;
  readonly packs: readonly string[];
}

export class WorkspaceSnapshots {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    private readonly sessions: Sessions,
  ) {}

  private requireTransfer(): void {
    const { driver } = this.ctx;
    if (!driver.capabilities.presign)
      throw new UnsupportedOperationError('workspace snapshots (presigned URLs)', driver.name);
  }

  private info(record: SnapshotRecord): WorkspaceSnapshotInfo {
    return {
      snapshotId: record.snapshotId,
      createdAt: new Date(record.createdAt),
      ...(record.parent ? { parent: record.parent } : {}),
      entries: record.entries,
      bytes: record.bytes,
      manifestSize: record.manifest.size,
      packs: record.packs,
    };
  }

  private async readRecord(s: string, inc: string, name: string, id: string) {
    const object = await getOrUndefined(this.ctx.driver, this.layout.snapshotRecord(s, inc, name, id));
    const body = object ? parseJsonObject(object.body) : undefined;
    return object && body?.v === 1 ? { object, record: body as unknown as SnapshotRecord } : undefined;
  }

  /** A stored manifest, decompressed, parsed and validated (`packSizes`: against the packs). */
  private async readManifest(
    s: string,
    inc: string,
    name: string,
    id: string,
    md5: string,
    packSizes?: ReadonlyMap<string, number>,
  ): Promise<{ manifest: WorkspaceManifest; size: number } | undefined> {
    const key = this.layout.snapshotManifest(s, inc, name, id, hexOf(md5));
    const object = await getOrUndefined(this.ctx.driver, key);
    if (!object) return undefined;
    let plain: Uint8Array;
    try {
      plain = gunzipSync(object.body, { maxOutputLength: MAX_MANIFEST_PLAIN_BYTES });
    } catch {
      throw new ValidationError('manifest', 'must be gzip of at most 512 MiB of JSON');
    }
    let value: unknown;
    try {
      value = parseIJson(plain);
    } catch {
      throw new ValidationError('manifest', 'must be I-JSON');
    }
    return { manifest: validateWorkspaceManifest(value, packSizes), size: object.size };
  }

  /** The stored packs of a workspace (one LIST per 1,000), by id. */
  private async storedPacks(s: string, inc: string, name: string): Promise<Map<string, ListedObject>> {
    const prefix = this.layout.snapshotPacks(s, inc, name);
    const listed = await listAll(this.ctx.driver, prefix);
    return new Map(listed.map((o) => [o.key.slice(prefix.length), o]));
  }

  async start(
    s: string,
    name: string,
    request: WorkspaceSnapshotStartRequest,
    fence: Fence,
  ): Promise<WorkspaceSnapshotStart> {
    this.requireTransfer();
    const snapshotId =
      request.snapshotId === undefined
        ? newSnapshotId(this.ctx.now())
        : checkSnapshotId(request.snapshotId, 'snapshotId');
    const parent = request.parent === undefined ? undefined : checkSnapshotId(request.parent, 'parent');
    const chunks = request.chunks ?? [];
    if (!Array.isArray(chunks) || chunks.length > MAX_SNAPSHOT_CHUNKS)
      throw new ValidationError('chunks', `must be an array of at most ${MAX_SNAPSHOT_CHUNKS} hashes`);
    chunks.forEach((h, i) => {
      if (typeof h !== 'string' || !CHUNK_HASH.test(h))
        throw new ValidationError(`chunks[${i}]`, 'must be sha256:<64 hex>');
    });
    const packs = request.packs === undefined ? [] : checkPacks(request.packs);
    const manifest = request.manifest === undefined ? undefined : checkManifestDeclaration(request.manifest);
    const { driver, presignExpiresIn: expiresIn } = this.ctx;
    const marker = await this.sessions.forWrite(s, await this.sessions.read(s), fence, true);
    const { inc } = marker;
    await fence.check();

    const [known, stored, committed] = await Promise.all([
      this.parentChunks(s, inc, name, parent, chunks.length > 0),
      packs.length > 0 ? this.storedPacks(s, inc, name) : new Map<string, ListedObject>(),
      request.snapshotId === undefined
        ? undefined
        : headOrUndefined(driver, this.layout.snapshotRecord(s, inc, name, snapshotId)),
    ]);
    // A committed snapshot's manifest and record are immutable: nothing more to upload for it.
    const done = committed !== undefined;
    const missing = chunks.filter((h) => !known.has(h));
    const pending = done
      ? []
      : packs.filter((p) => {
          const o = stored.get(p.id);
          return !o || o.size !== p.size;
        });
    const uploads = await Promise.all(
      pending.map(async (p) => ({
        pack: p.id,
        ...direct(
          await driver.presignUpload(this.layout.snapshotPack(s, inc, name, p.id), {
            contentLength: p.size,
            contentMd5: p.md5,
            contentType: 'application/octet-stream',
            tags: { kind: 'pack' },
            metadata: { inc },
            expiresIn,
          }),
        ),
      })),
    );
    const manifestUpload =
      manifest && !done
        ? direct(
            await driver.presignUpload(
              this.layout.snapshotManifest(s, inc, name, snapshotId, hexOf(manifest.md5)),
              {
                contentLength: manifest.size,
                contentMd5: manifest.md5,
                contentType: 'application/gzip',
                tags: { kind: 'pack' },
                metadata: { inc },
                expiresIn,
              },
            ),
          )
        : undefined;
    return {
      snapshotId,
      missing,
      uploads,
      ...(manifestUpload ? { manifestUpload } : {}),
      expiresAt: new Date(this.ctx.now() + expiresIn * 1000),
    };
  }

  /** The chunk hashes of the parent snapshot's manifest (empty without a parent or chunks to check). */
  private async parentChunks(
    s: string,
    inc: string,
    name: string,
    parent: string | undefined,
    needed: boolean,
  ): Promise<Set<string>> {
    if (!parent || !needed) return new Set();
    const found = await this.readRecord(s, inc, name, parent);
    if (!found) throw new ValidationError('parent', 'no such snapshot of this workspace');
    const read = await this.readManifest(s, inc, name, parent, found.record.manifest.md5);
    if (!read) throw new ValidationError('parent', 'the snapshot has no manifest');
    return new Set(read.manifest.entries.flatMap((e) => (e.chunks ?? []).map((c) => c.hash)));
  }

  async commit(
    s: string,
    name: string,
    snapshotId: string,
    request: WorkspaceSnapshotCommitRequest,
    fence: Fence,
  ): Promise<WorkspaceSnapshotInfo> {
    this.requireTransfer();
    checkSnapshotId(snapshotId, 'snapshotId');
    const parent = request.parent === undefined ? undefined : checkSnapshotId(request.parent, 'parent');
    const packs = checkPacks(request.packs);
    const manifestDeclared = checkManifestDeclaration(request.manifest);
    const identity = {
      commitId: snapshotId,
      digest: requestDigest({ snapshotId, parent: parent ?? null, packs, manifest: manifestDeclared }),
    };
    const { driver } = this.ctx;
    const sessionRead = await this.sessions.read(s);
    const live = sessionRead.live?.inc;
    // A replay is answered from its record before the fence's check (docs/DESIGN.md, "Fencing"),
    // so a commit retried after its lease was released still answers; another body is refused.
    const existing = live === undefined ? undefined : await this.readRecord(s, live, name, snapshotId);
    if (existing && live !== undefined) {
      const recordName = this.layout.snapshotRecord(s, live, name, snapshotId);
      await putRecordOnce(driver, recordName, '', identity, fence, existing.object, {});
      return this.info(existing.record);
    }
    const marker = await this.sessions.forWrite(s, sessionRead, fence, true);
    const { inc } = marker;
    const recordName = this.layout.snapshotRecord(s, inc, name, snapshotId);
    const stored = await this.storedPacks(s, inc, name);
    const bad = packs.filter((p) => {
      const o = stored.get(p.id);
      const md5Differs = o && driver.capabilities.md5Etags && o.etag.toLowerCase() !== hexOf(p.md5);
      return !o || o.size !== p.size || md5Differs;
    });
    if (bad.length > 0)
      throw new UploadMismatchError(
        `packs missing or not as declared: ${bad
          .slice(0, 5)
          .map((p) => p.id.slice(0, 12))
          .join(', ')}${bad.length > 5 ? ` and ${bad.length - 5} more` : ''}`,
      );
    const sizes = new Map([...stored].map(([id, o]) => [id, o.size]));
    const read = await this.readManifest(s, inc, name, snapshotId, manifestDeclared.md5, sizes);
    if (!read) throw new UploadMismatchError('the manifest was not uploaded');
    if (read.size !== manifestDeclared.size)
      throw new UploadMismatchError(`the stored manifest (${read.size} bytes) is not the one declared`);
    if (parent && !(await this.readRecord(s, inc, name, parent)))
      throw new ValidationError('parent', 'no such snapshot of this workspace');
    const files = read.manifest.entries.filter((e) => e.type === 'file');
    const record: SnapshotRecord = {
      v: 1,
      snapshotId,
      createdAt: new Date(this.ctx.now()).toISOString(),
      ...(parent ? { parent } : {}),
      manifest: manifestDeclared,
      entries: read.manifest.entries.length,
      bytes: files.reduce((n, e) => n + e.size, 0),
      packs: [...new Set(files.flatMap((e) => (e.chunks ?? []).map((c) => c.pack)))].sort(),
    };
    const outcome = await putRecordOnce(
      driver,
      recordName,
      JSON.stringify(record),
      identity,
      fence,
      undefined,
      { kind: 'pack' },
      { inc },
    );
    if (outcome === 'replayed') {
      const now = await this.readRecord(s, inc, name, snapshotId);
      if (now) return this.info(now.record);
    }
    return this.info(record);
  }

  async list(s: string, name: string): Promise<WorkspaceSnapshotSummary[]> {
    const read = await this.sessions.read(s);
    if (!read.live) return [];
    const prefix = this.layout.snapshotRecords(s, read.live.inc, name);
    return (await listAll(this.ctx.driver, prefix))
      .map((o) => o.key.slice(prefix.length))
      .filter((id) => SNAPSHOT_ID.test(id))
      .sort()
      .reverse()
      .map((snapshotId) => ({
        snapshotId,
        createdAt: new Date(Number.parseInt(snapshotId.slice(0, 10), 36)),
      }));
  }

  async get(s: string, name: string, snapshotId: string): Promise<WorkspaceSnapshotDownload | undefined> {
    this.requireTransfer();
    const { driver, presignExpiresIn: expiresIn } = this.ctx;
    const sessionRead = await this.sessions.read(s);
    if (!sessionRead.live) return undefined;
    const { inc } = sessionRead.live;
    let id = snapshotId;
    if (snapshotId === LATEST_SNAPSHOT) {
      const newest = (await this.list(s, name))[0];
      if (!newest) return undefined;
      id = newest.snapshotId;
    } else if (!SNAPSHOT_ID.test(snapshotId)) return undefined;
    const found = await this.readRecord(s, inc, name, id);
    if (!found) return undefined;
    const { record } = found;
    const get = async (key: string): Promise<SnapshotDirectRequest> => ({
      method: 'GET',
      url: await driver.presignGet(key, { expiresIn }),
      headers: {},
    });
    const [manifest, packUrls] = await Promise.all([
      get(this.layout.snapshotManifest(s, inc, name, id, hexOf(record.manifest.md5))),
      Promise.all(
        record.packs.map(async (pack) => ({
          pack,
          ...(await get(this.layout.snapshotPack(s, inc, name, pack))),
        })),
      ),
    ]);
    return {
      ...this.info(record),
      manifest,
      packUrls,
      expiresAt: new Date(this.ctx.now() + expiresIn * 1000),
    };
  }

  async delete(s: string, name: string, snapshotId: string, fence: Fence): Promise<void> {
    checkSnapshotId(snapshotId, 'snapshotId');
    const { driver } = this.ctx;
    const read = await this.sessions.read(s);
    if (!read.live) return fence.check();
    const marker = await this.sessions.forWrite(s, read, fence, false);
    await fence.check();
    const { inc } = marker;
    const manifests = await listAll(driver, this.layout.snapshotManifests(s, inc, name, snapshotId));
    // The record first: the snapshot is gone at once; a manifest left behind is never read.
    await driver.delete(this.layout.snapshotRecord(s, inc, name, snapshotId));
    if (manifests.length > 0) await driver.deleteMany(manifests.map((o) => o.key));
  }
}
