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
  sumSweeps,
  type WorkspaceManifestDeclaration,
  type WorkspacePackDeclaration,
  type WorkspaceSnapshotCommitRequest,
  type WorkspaceSnapshotDownload,
  type WorkspaceSnapshotInfo,
  type WorkspaceSnapshotStart,
  type WorkspaceSnapshotStartRequest,
  type WorkspaceSnapshotSummary,
  type WorkspaceSweepOptions,
  type WorkspaceSweepResult,
} from '../contract/workspace-snapshots.js';
import { ObjectConditionFailedError } from '../drivers/errors.js';
import type { ListedObject, PresignedRequest } from '../drivers/types.js';
import { mapLimited } from '../util/map-limited.js';
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

/** The sweep's state of one workspace's packs (`…/sweep`): what the last sweep saw. */
interface SweepState {
  readonly v: 1;
  readonly sweptAt: number;
  /** Packs no live snapshot referenced in the last sweep. */
  readonly unreferenced: readonly string[];
  /** Packs tagged `gc=1`, with the time of the tagging (ms). */
  readonly tagged: Readonly<Record<string, number>>;
}

const PACK_TAGS = { kind: 'pack' } as const;
const GC_TAGS = { kind: 'pack', gc: '1' } as const;

function parseSweepState(body: Uint8Array | undefined): SweepState {
  const value = body ? parseJsonObject(body) : undefined;
  const ok =
    value?.v === 1 &&
    Array.isArray(value.unreferenced) &&
    typeof value.tagged === 'object' &&
    value.tagged !== null;
  return ok ? (value as unknown as SweepState) : { v: 1, sweptAt: 0, unreferenced: [], tagged: {} };
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

    const [known, stored, committed, sweep] = await Promise.all([
      this.parentChunks(s, inc, name, parent, chunks.length > 0),
      packs.length > 0 ? this.storedPacks(s, inc, name) : new Map<string, ListedObject>(),
      request.snapshotId === undefined
        ? undefined
        : headOrUndefined(driver, this.layout.snapshotRecord(s, inc, name, snapshotId)),
      packs.length > 0 ? this.sweepState(s, inc, name) : undefined,
    ]);
    // A committed snapshot's manifest and record are immutable: nothing more to upload for it.
    const done = committed !== undefined;
    const missing = chunks.filter((h) => !known.has(h));
    const pending = done
      ? []
      : packs.filter((p) => {
          const o = stored.get(p.id);
          // A pack the sweep tagged is uploaded again: the new object carries no `gc` tag.
          return !o || o.size !== p.size || sweep?.tagged[p.id] !== undefined;
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
    await this.rescue(s, inc, name, record.packs);
    return this.info(record);
  }

  private async sweepState(s: string, inc: string, name: string): Promise<SweepState> {
    const object = await getOrUndefined(this.ctx.driver, this.layout.snapshotSweep(s, inc, name));
    return parseSweepState(object?.body);
  }

  /**
   * After a commit wrote its record: a pack of it that a sweep tagged meanwhile loses the tag
   * again (copied onto itself with `kind=pack` only). A sweep that tags after this read sees the
   * record when it lists the records again (`sweepRoot`), so one of the two always untags.
   */
  private async rescue(s: string, inc: string, name: string, packs: readonly string[]): Promise<void> {
    const { tagged } = await this.sweepState(s, inc, name);
    const hit = packs.filter((p) => tagged[p] !== undefined);
    await mapLimited(hit, 8, (p) => {
      const key = this.layout.snapshotPack(s, inc, name, p);
      return this.ctx.driver.copy(key, key, { tags: PACK_TAGS });
    });
  }

  /**
   * The sweep of one session's workspace snapshots (docs/DESIGN.md, "Workspace snapshots"): every
   * workspace of every incarnation under the session's folder; an incarnation that is not the live
   * one (the session expired or was deleted and started again) references nothing, and its records
   * and manifests are deleted at once.
   */
  async sweep(s: string, options: WorkspaceSweepOptions = {}): Promise<WorkspaceSweepResult> {
    const folder = this.layout.session(s);
    // One flat listing (the records and packs of every root are needed), by workspace root.
    const objects = await listAll(this.ctx.driver, `${folder}~wss~`);
    const roots = new Map<string, { inc: string; objects: ListedObject[] }>();
    for (const o of objects) {
      const [inc, name] = o.key.slice(folder.length + '~wss~'.length).split('/');
      if (!inc || !name) continue;
      const root = `${folder}~wss~${inc}/${name}/`;
      const entry = roots.get(root) ?? { inc, objects: [] };
      entry.objects.push(o);
      roots.set(root, entry);
    }
    // Read after the listing: an incarnation listed with objects has its marker written already.
    const live = (await this.sessions.read(s)).live?.inc;
    const results = [];
    for (const [root, { inc, objects: listed }] of roots)
      results.push({ workspaces: 1, ...(await this.sweepRoot(root, inc === live, listed, options)) });
    return sumSweeps(results);
  }

  /** The packs a live workspace's records reference (each record lists its packs). */
  private async referencedBy(records: readonly ListedObject[]): Promise<Set<string>> {
    const bodies = await mapLimited(records, 16, (o) => getOrUndefined(this.ctx.driver, o.key));
    const out = new Set<string>();
    for (const b of bodies) {
      const record = b ? parseJsonObject(b.body) : undefined;
      if (record?.v === 1 && Array.isArray(record.packs)) for (const p of record.packs) out.add(String(p));
    }
    return out;
  }

  /**
   * One workspace: a pack unreferenced in this sweep and the previous one, and older than the
   * presign expiry + `maxCommitMs` (so no push in flight can still upload or commit it unnoticed),
   * is tagged `gc=1` by copying it onto itself; the lifecycle rule `workspace-packs-gc` deletes it
   * after the grace. The state is written before the tags (so a commit that reads it after sees
   * them), and the records are listed again after them (so a commit that read it before is seen).
   */
  private async sweepRoot(
    root: string,
    live: boolean,
    listed: readonly ListedObject[],
    options: WorkspaceSweepOptions,
  ) {
    const { driver, presignExpiresIn, maxCommitMs } = this.ctx;
    const now = this.ctx.now();
    const stateKey = `${root}sweep`;
    const records = listed.filter((o) => o.key.startsWith(`${root}s/`));
    const packs = listed.filter((o) => o.key.startsWith(`${root}p/`));
    const stateObject = await getOrUndefined(driver, stateKey);
    let deadObjects = 0;
    let referenced = new Set<string>();
    if (live) referenced = await this.referencedBy(records);
    else {
      const dead = listed
        .filter((o) => o.key.startsWith(`${root}s/`) || o.key.startsWith(`${root}m/`))
        .map((o) => o.key);
      if (dead.length > 0) deadObjects = (await driver.deleteMany(dead)).deleted.length;
    }
    const previous = parseSweepState(stateObject?.body);
    const byId = new Map(packs.map((o) => [o.key.slice(`${root}p/`.length), o]));
    const wasUnreferenced = new Set(previous.unreferenced);
    const tagged = new Map(Object.entries(previous.tagged).filter(([id]) => byId.has(id)));
    const unreferenced = [...byId.keys()].filter((id) => !referenced.has(id));
    // A tagged pack a push uploaded again since (start's answer for a tagged pack) has lost its
    // tag: it counts as untagged again, and its new age protects it.
    const retagCheck = [...tagged.keys()].filter((id) => !referenced.has(id));
    const stillTagged = await mapLimited(retagCheck, 16, (id) =>
      driver
        .head(`${root}p/${id}`, { tags: true })
        .then((o) => o.tags?.gc === '1')
        .catch(() => false),
    );
    retagCheck.forEach((id, i) => {
      if (!stillTagged[i]) tagged.delete(id);
    });
    const minAge = presignExpiresIn * 1000 + maxCommitMs;
    const rescue = [...tagged.keys()].filter((id) => referenced.has(id));
    for (const id of rescue) tagged.delete(id);
    const toTag = unreferenced.filter(
      (id) =>
        wasUnreferenced.has(id) &&
        !tagged.has(id) &&
        now - (byId.get(id) as ListedObject).lastModified.getTime() >= minAge,
    );
    for (const id of toTag) tagged.set(id, now);
    const toDelete =
      options.deleteTaggedAfterMs === undefined
        ? []
        : [...tagged].filter(
            ([id, at]) => !toTag.includes(id) && now - at >= (options.deleteTaggedAfterMs as number),
          );
    const write = async (etag: string | undefined) => {
      const state: SweepState = { v: 1, sweptAt: now, unreferenced, tagged: Object.fromEntries(tagged) };
      const condition = !driver.capabilities.conditionalOverwrite
        ? {}
        : etag === undefined
          ? { ifNoneMatch: '*' as const }
          : { ifMatch: etag };
      return driver.put(stateKey, JSON.stringify(state), {
        contentType: 'application/json',
        tags: PACK_TAGS,
        ...condition,
      });
    };
    const empty = {
      packs: 0,
      referenced: 0,
      unreferenced: 0,
      tagged: 0,
      rescued: 0,
      deleted: 0,
      deadObjects,
    };
    if (packs.length === 0) {
      if (stateObject) await driver.delete(stateKey);
      return empty;
    }
    let etag: string;
    try {
      ({ etag } = await write(stateObject?.etag));
    } catch (error) {
      // Another sweep of this workspace wrote the state first: it does this one's work.
      if (error instanceof ObjectConditionFailedError) return empty;
      throw error;
    }
    const key = (id: string) => `${root}p/${id}`;
    await mapLimited(rescue, 8, (id) => driver.copy(key(id), key(id), { tags: PACK_TAGS }));
    await mapLimited(toTag, 8, (id) => driver.copy(key(id), key(id), { tags: GC_TAGS }));
    let deleted = 0;
    if (toDelete.length > 0) {
      const result = await driver.deleteMany(toDelete.map(([id]) => key(id)));
      deleted = result.deleted.length;
      for (const [id] of toDelete) tagged.delete(id);
    }
    let late: string[] = [];
    if (live && toTag.length > 0) {
      // A commit that wrote its record since the first listing, and read the state before it.
      const seen = new Set(records.map((o) => o.key));
      const fresh = (await listAll(driver, `${root}s/`)).filter((o) => !seen.has(o.key));
      const now2 = await this.referencedBy(fresh);
      late = toTag.filter((id) => now2.has(id));
      await mapLimited(late, 8, (id) => driver.copy(key(id), key(id), { tags: PACK_TAGS }));
      for (const id of late) tagged.delete(id);
    }
    if (deleted > 0 || late.length > 0) await write(etag).catch(() => undefined);
    return {
      packs: packs.length,
      referenced: packs.length - unreferenced.length,
      unreferenced: unreferenced.length,
      tagged: toTag.length - late.length,
      rescued: rescue.length + late.length,
      deleted,
      deadObjects,
    };
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
