/**
 * Workspace snapshots from the Node client (`client.workspaces`; docs/workspaces.md, "Workspace
 * snapshots"): a directory tree pushed as content-defined chunks in packs, deduplicated against
 * the parent snapshot (by default the newest), and read back without downloading what is not
 * needed. The bytes go straight between this client and the object store; the API only signs.
 *
 * - `push`: reads the tree (a file whose size, mtime and inode match the parent's entry is not
 *   read: its chunks are the parent's), chunks, hashes and compresses the new chunks into packs of
 *   ~16 MiB (kept in a temporary folder); while it reads on, start calls declare the new chunks
 *   and the sealed packs (one per 8 packs, or per request body) and the packs not stored yet
 *   upload; the last call declares the gzip manifest, which uploads, then the push commits. Three
 *   calls to the API for a push with a parent and few changes.
 * - `pull`: restores a snapshot into an empty folder, every chunk and file checked against its
 *   SHA-256, the chunks read with ranged GETs of their packs (neighbours read together).
 * - `diff`: two manifests compared, no pack read; `readFile`: ranged GETs of exactly one file's chunks.
 */
import { createHash } from 'node:crypto';
import { lstat, mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { ProtocolError, ValidationError } from '../../contract/errors.js';
import type { WriteOptions } from '../../contract/types.js';
import {
  LATEST_SNAPSHOT,
  MAX_SNAPSHOT_CHUNKS,
  MAX_SNAPSHOT_PACKS,
  type SnapshotDirectRequest,
  type WorkspacePackDeclaration,
  type WorkspaceSnapshotInfo,
  type WorkspaceSnapshotSummary,
} from '../../contract/workspace-snapshots.js';
import { paths } from '../../protocol/paths.js';
import { schemas } from '../../protocol/schemas.js';
import { concatBytes } from '../../util/bytes.js';
import { guidedChunks } from '../../workspace-snapshots/chunker.js';
import {
  checkManifestPath,
  diffWorkspaceManifests,
  validateWorkspaceManifest,
  type WorkspaceManifest,
  type WorkspaceManifestDiff,
  type WorkspaceManifestEntry,
} from '../../workspace-snapshots/manifest.js';
import {
  type ChunkRef,
  chunkHash,
  decodeChunk,
  type EncodedChunk,
  encodeChunkAsync,
  PACK_TARGET,
  PackWriter,
} from '../../workspace-snapshots/packs.js';
import { restoreTree } from '../../workspace-snapshots/tree.js';
import { bodyOf, chunksOf, fail, fence, type Requests } from '../requests.js';
import type { CallOptions } from '../types.js';
import { FileBuffers, fileHasher } from './file-reads.js';

/** Options of a push. */
export interface PushOptions extends WriteOptions, CallOptions {
  /** The snapshot to deduplicate against: an id, or null for none; default the newest. */
  readonly parent?: string | null;
  /** Whether files whose size, mtime and inode match the parent's entry are taken as unchanged (default true). */
  readonly statCache?: boolean;
  /** Uploads in parallel (default 4). */
  readonly concurrency?: number;
  /** Where a pack is closed (default 16 MiB, `PACK_TARGET`); smaller only for tests and tiny trees. */
  readonly packBytes?: number;
  /** Called as the upload goes: stored bytes sent (packs and manifest), of `total`. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** Options of a pull. */
export interface PullOptions extends CallOptions {
  /**
   * Continue a pull that was cut off into the same folder: files already there with their size and
   * SHA-256 are kept and not downloaded again; the rest is written again.
   */
  readonly resume?: boolean;
  /** Called after each file: plain bytes of files done, of the snapshot's total. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** A committed push, with what it sent. */
export interface PushResult extends WorkspaceSnapshotInfo {
  /** Packs and bytes uploaded (the manifest included in the bytes). */
  readonly uploadedPacks: number;
  readonly uploadedBytes: number;
  /** Files taken from the parent without being read (stat cache). */
  readonly unchangedFiles: number;
}

/** Options of `gc`. */
export interface GcOptions extends WriteOptions, CallOptions {
  /** Share of a pack's bytes no live snapshot references from which it is rewritten; default 0.3. */
  readonly threshold?: number;
  /** Where a new pack is closed (default 16 MiB). */
  readonly packBytes?: number;
  /** Packs read and uploaded at once; default 4. */
  readonly concurrency?: number;
}

/** What `gc` did. */
export interface GcResult {
  /** Packs the live snapshots reference, and those rewritten (≥ `threshold` garbage). */
  readonly packs: number;
  readonly rewrittenPacks: number;
  /** Bytes of the rewritten packs no live snapshot referenced (left to the sweep). */
  readonly garbageBytes: number;
  /** New packs and the bytes uploaded (manifests included). */
  readonly uploadedPacks: number;
  readonly uploadedBytes: number;
  /** Each replaced snapshot's id and its replacement's (same tree, same place in the order). */
  readonly replaced: ReadonlyArray<{ readonly from: string; readonly to: string }>;
}

/** A snapshot as read for its manifest and packs. */
type Located = {
  readonly info: WorkspaceSnapshotInfo;
  readonly manifestUrl: SnapshotDirectRequest;
  readonly packUrls: ReadonlyMap<string, SnapshotDirectRequest>;
};

const md5Of = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('base64');

/** Runs `work` over `items`, at most `limit` at a time. */
async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const run = async () => {
    while (next < items.length) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
}

const infoOf = (s: {
  snapshotId: string;
  createdAt: string;
  parent?: string | undefined;
  entries: number;
  bytes: number;
  manifestSize: number;
  packs: string[];
}): WorkspaceSnapshotInfo => ({
  snapshotId: s.snapshotId,
  createdAt: new Date(s.createdAt),
  ...(s.parent ? { parent: s.parent } : {}),
  entries: s.entries,
  bytes: s.bytes,
  manifestSize: s.manifestSize,
  packs: s.packs,
});

/** The workspace snapshot calls of the Node client (`client.workspaces`). */
export class WorkspaceSnapshotClient {
  constructor(private readonly requests: Requests) {}

  /** The workspace's snapshots, newest first. */
  async list(sessionId: string, name: string, o?: CallOptions): Promise<WorkspaceSnapshotSummary[]> {
    const response = await this.requests.call('GET', paths.workspaceSnapshots(sessionId, name), { call: o });
    if (response.status !== 200) return fail(response);
    const body = await bodyOf(response, schemas.WorkspaceSnapshots, 'listWorkspaceSnapshots');
    return body.snapshots.map((s) => ({ snapshotId: s.snapshotId, createdAt: new Date(s.createdAt) }));
  }

  /** A snapshot (`latest`: the newest); undefined when there is none. */
  async get(
    sessionId: string,
    name: string,
    snapshotId: string,
    o?: CallOptions,
  ): Promise<WorkspaceSnapshotInfo | undefined> {
    return (await this.locate(sessionId, name, snapshotId, o))?.info;
  }

  /** Deletes a snapshot (absent is fine); its packs go with a sweep. */
  async delete(
    sessionId: string,
    name: string,
    snapshotId: string,
    o?: WriteOptions & CallOptions,
  ): Promise<void> {
    const response = await this.requests.call(
      'DELETE',
      paths.workspaceSnapshot(sessionId, name, snapshotId),
      {
        headers: fence(o),
        call: o,
      },
    );
    if (response.status !== 204) await fail(response);
  }

  /** A snapshot's manifest (read compressed, validated); undefined when there is no such snapshot. */
  async manifest(
    sessionId: string,
    name: string,
    snapshotId: string,
    o?: CallOptions,
  ): Promise<WorkspaceManifest | undefined> {
    const located = await this.locate(sessionId, name, snapshotId, o);
    return located && this.readManifest(located, o);
  }

  /** Added, removed and changed paths from `a` to `b`, from their manifests alone (no pack read). */
  async diff(
    sessionId: string,
    name: string,
    a: string,
    b: string,
    o?: CallOptions,
  ): Promise<WorkspaceManifestDiff> {
    const [before, after] = await Promise.all([
      this.manifest(sessionId, name, a, o),
      this.manifest(sessionId, name, b, o),
    ]);
    if (!before) throw new ValidationError('a', `no snapshot ${a}`);
    if (!after) throw new ValidationError('b', `no snapshot ${b}`);
    return diffWorkspaceManifests(before, after);
  }

  /** One file of a snapshot, read with ranged GETs of exactly its chunks; undefined when absent. */
  async readFile(
    sessionId: string,
    name: string,
    snapshotId: string,
    file: string,
    o?: CallOptions,
  ): Promise<Uint8Array | undefined> {
    checkManifestPath(file, 'path');
    const located = await this.locate(sessionId, name, snapshotId, o);
    if (!located) return undefined;
    const manifest = await this.readManifest(located, o);
    const entry = manifest.entries.find((e) => e.path === file);
    if (entry?.type !== 'file') return undefined;
    const reader = this.packReader(located, entry.chunks ?? [], 0, o);
    const parts: Uint8Array[] = [];
    for (const ref of entry.chunks ?? [])
      parts.push(decodeChunk(await reader(ref.pack, ref.offset, ref.length), ref));
    const whole = concatBytes(parts);
    if (chunkHash(whole) !== entry.sha256) throw new ProtocolError(`${file} does not match its SHA-256`, 200);
    return whole;
  }

  /**
   * Restores a snapshot (`latest`: the newest) into `dir` (created if absent, refused unless empty,
   * or with `resume` continued): byte-identical, every chunk and file checked against its SHA-256.
   * False when there is no such snapshot.
   */
  async pull(
    sessionId: string,
    name: string,
    snapshotId: string,
    dir: string,
    o?: PullOptions,
  ): Promise<boolean> {
    const located = await this.locate(sessionId, name, snapshotId, o);
    if (!located) return false;
    const manifest = await this.readManifest(located, o);
    const refs = manifest.entries.flatMap((e) => e.chunks ?? []);
    // Neighbouring chunks of a pack are read together (gaps up to 1 MiB, spans up to 16 MiB).
    await restoreTree(manifest, dir, this.packReader(located, refs, 1024 * 1024, o), {
      ...(o?.resume ? { resume: true } : {}),
      ...(o?.onProgress ? { onProgress: o.onProgress } : {}),
    });
    return true;
  }

  /**
   * Repacking (docs/workspaces.md, "The sweep and repacking"): every pack of the live snapshots
   * with at least `threshold` (30 %) of its bytes referenced by none of them is rewritten, its live
   * chunks copied as stored into new packs uploaded through the usual start and commit; each
   * snapshot that references such a pack is replaced by one of the same tree on the new packs (an
   * id of the same creation time, so the order and `latest` stay), then deleted. The old packs
   * are left to the sweep.
   */
  async gc(sessionId: string, name: string, o: GcOptions = {}): Promise<GcResult> {
    const threshold = o.threshold ?? 0.3;
    const listed = [...(await this.list(sessionId, name, o))].reverse(); // oldest first
    const snapshots: Array<{ located: Located; manifest: WorkspaceManifest }> = [];
    for (const s of listed) {
      const located = await this.locate(sessionId, name, s.snapshotId, o);
      if (located) snapshots.push({ located, manifest: await this.readManifest(located, o) });
    }
    // The live bytes of every pack: its distinct chunks (by offset) any live manifest references.
    const live = new Map<string, Map<number, ChunkRef>>();
    for (const { manifest } of snapshots)
      for (const e of manifest.entries)
        for (const c of e.chunks ?? []) {
          const chunks = live.get(c.pack) ?? new Map<number, ChunkRef>();
          chunks.set(c.offset, c);
          live.set(c.pack, chunks);
        }
    const urlOf = (pack: string) => snapshots.find((s) => s.located.packUrls.has(pack))?.located;
    const sizes = new Map<string, number>();
    await pool([...live.keys()], o.concurrency ?? 4, async (pack) => {
      sizes.set(pack, await this.packSize(urlOf(pack) as Located, pack, o));
    });
    const garbage = [...live].filter(([pack, chunks]) => {
      const used = [...chunks.values()].reduce((n, c) => n + c.length, 0);
      const size = sizes.get(pack) ?? used;
      return size > 0 && (size - used) / size >= threshold;
    });
    const none = { packs: live.size, rewrittenPacks: 0, garbageBytes: 0, uploadedPacks: 0, uploadedBytes: 0 };
    if (garbage.length === 0) return { ...none, replaced: [] };
    // The live chunks of the rewritten packs, by hash, copied as stored into new packs.
    const moved = new Map<string, { pack: string; offset: number }>(); // old pack:offset → new place
    const packs: Array<{ id: string; bytes: Uint8Array }> = [];
    const target = o.packBytes ?? PACK_TARGET;
    let parts: Uint8Array[] = [];
    let pending: Array<[string, number]> = []; // old keys and offsets in the pack being built
    let at = 0;
    const close = () => {
      if (parts.length === 0) return;
      const bytes = concatBytes(parts);
      const id = createHash('sha256').update(bytes).digest('hex');
      packs.push({ id, bytes });
      for (const [key, offset] of pending) moved.set(key, { pack: id, offset });
      parts = [];
      pending = [];
      at = 0;
    };
    const byHash = new Map<string, string>(); // a chunk stored twice is kept once
    let garbageBytes = 0;
    for (const [pack, chunks] of garbage) {
      const refs = [...chunks.values()].sort((a, b) => a.offset - b.offset);
      garbageBytes += (sizes.get(pack) ?? 0) - refs.reduce((n, c) => n + c.length, 0);
      const reader = this.packReader(urlOf(pack) as Located, refs, 1024 * 1024, o);
      for (const c of refs) {
        const key = `${pack}:${c.offset}`;
        const same = byHash.get(`${c.hash}:${c.encoding}`);
        if (same) {
          moved.set(key, { pack: '', offset: -1 }); // where its first copy goes (`place`)
          continue;
        }
        const stored = await reader(pack, c.offset, c.length);
        byHash.set(`${c.hash}:${c.encoding}`, key);
        parts.push(stored);
        pending.push([key, at]);
        at += stored.length;
        if (at >= target) close();
      }
    }
    close();
    const place = (c: ChunkRef) => {
      const key = `${c.pack}:${c.offset}`;
      let m = moved.get(key);
      if (m && m.offset < 0) m = moved.get(byHash.get(`${c.hash}:${c.encoding}`) as string);
      return m;
    };
    const declared = packs.map((p) => ({ id: p.id, size: p.bytes.length, md5: md5Of(p.bytes) }));
    const rewritten = new Set(garbage.map(([pack]) => pack));
    const replaced: Array<{ from: string; to: string }> = [];
    const sent = new Set<string>();
    let uploadedBytes = 0;
    for (const { located, manifest } of snapshots) {
      if (!located.info.packs.some((p) => rewritten.has(p))) continue;
      const entries = manifest.entries.map((e) =>
        e.chunks
          ? {
              ...e,
              chunks: e.chunks.map((c) => {
                const m = rewritten.has(c.pack) ? place(c) : undefined;
                return m ? { ...c, pack: m.pack, offset: m.offset } : c;
              }),
            }
          : e,
      );
      const next = { ...manifest, entries } as WorkspaceManifest;
      const used = new Set(entries.flatMap((e) => (e.chunks ?? []).map((c) => c.pack)));
      const mine = declared.filter((p) => used.has(p.id));
      const manifestBytes = gzipSync(Buffer.from(JSON.stringify(next)));
      const manifestDecl = { size: manifestBytes.length, md5: md5Of(manifestBytes) };
      const from = located.info.snapshotId;
      const tail = createHash('sha256').update(`${from}:${manifestDecl.md5}`).digest('hex').slice(0, 16);
      const to = `${from.slice(0, 10)}-${tail === from.slice(11) ? tail.split('').reverse().join('') : tail}`;
      const started = await this.start(
        sessionId,
        name,
        { snapshotId: to, packs: mine, manifest: manifestDecl },
        o,
      );
      await pool(
        started.uploads.filter((u) => !sent.has(u.pack)),
        o.concurrency ?? 4,
        async (upload) => {
          const pack = packs.find((p) => p.id === upload.pack);
          if (!pack) throw new ProtocolError(`the API asked for an unknown pack ${upload.pack}`, 201);
          await this.requests.direct(upload, { body: pack.bytes, call: o });
          sent.add(upload.pack);
          uploadedBytes += pack.bytes.length;
        },
      );
      if (started.manifestUpload) {
        await this.requests.direct(started.manifestUpload, { body: manifestBytes, call: o });
        uploadedBytes += manifestBytes.length;
      }
      await this.commit(sessionId, name, to, { packs: mine, manifest: manifestDecl }, o);
      await this.delete(sessionId, name, from, o);
      replaced.push({ from, to });
    }
    return {
      ...none,
      rewrittenPacks: garbage.length,
      garbageBytes,
      uploadedPacks: sent.size,
      uploadedBytes,
      replaced,
    };
  }

  /** A pack's stored size: one ranged GET of its first byte (`Content-Range: bytes 0-0/<size>`). */
  private async packSize(located: Located, pack: string, o: CallOptions | undefined): Promise<number> {
    const url = located.packUrls.get(pack);
    if (!url) throw new ProtocolError(`no URL for pack ${pack}`, 200);
    return this.requests.direct(
      { ...url, headers: { ...url.headers, range: 'bytes=0-0' } },
      { call: o, download: true },
      async (response, clock) => {
        const total = /\/(\d+)$/.exec(response.headers.get('content-range') ?? '')?.[1];
        let length = 0;
        for await (const part of chunksOf(response, clock)) length += part.length;
        return total === undefined ? length : Number(total);
      },
    );
  }

  /** Pushes `dir` as a new snapshot of the workspace; see the module's comment. */
  async push(sessionId: string, name: string, dir: string, o: PushOptions = {}): Promise<PushResult> {
    const parentId = o.parent === null ? undefined : (o.parent ?? LATEST_SNAPSHOT);
    const parentLocated = parentId ? await this.locate(sessionId, name, parentId, o) : undefined;
    if (o.parent && !parentLocated) throw new ValidationError('parent', `no snapshot ${o.parent}`);
    const parent = parentLocated ? await this.readManifest(parentLocated, o) : undefined;
    const temp = await mkdtemp(path.join(tmpdir(), 'ws-push-'));
    try {
      const base = parentLocated ? { parent: parentLocated.info.snapshotId } : {};
      let uploadedBytes = 0;
      let toSend = 0;
      let uploadedPacks = 0;
      const files = new Map<string, ScannedPack>();
      const uploads = taskQueue(o.concurrency ?? 4);
      const sent = (bytes: number) => {
        uploadedBytes += bytes;
        o.onProgress?.(uploadedBytes, toSend);
      };
      // The start calls go out while the scan reads on, and each one's packs upload at once.
      const batches = new PushBatches(this.requests.bodyLimit, base.parent, async (body) => {
        const started = await this.start(sessionId, name, body, o);
        for (const upload of started.uploads) {
          const pack = files.get(upload.pack);
          if (!pack) throw new ProtocolError(`the API asked for an unknown pack ${upload.pack}`, 201);
          uploadedPacks++;
          toSend += pack.size;
          uploads.push(async () => {
            const body = await readFile(pack.file);
            await this.requests.direct(upload, { body, call: o });
            sent(body.length);
          });
        }
        return started;
      });
      const scan = await scanForPush(dir, parent, temp, o.statCache ?? true, o.packBytes ?? PACK_TARGET, {
        chunk: (hash) => batches.chunk(hash),
        pack: (pack) => {
          files.set(pack.id, pack);
          batches.pack({ id: pack.id, size: pack.size, md5: pack.md5 });
        },
      });
      const manifestBytes = gzipSync(Buffer.from(JSON.stringify(scan.manifest)));
      const manifest = { size: manifestBytes.length, md5: md5Of(manifestBytes) };
      const last = await batches.finish(manifest);
      if (last.manifestUpload) toSend += manifestBytes.length;
      o.onProgress?.(uploadedBytes, toSend);
      await uploads.drained();
      if (last.manifestUpload) {
        await this.requests.direct(last.manifestUpload, { body: manifestBytes, call: o });
        sent(manifestBytes.length);
      }
      const packs = scan.packs.map(({ id, size, md5 }) => ({ id, size, md5 }));
      const info = await this.commit(sessionId, name, last.snapshotId, { ...base, packs, manifest }, o);
      return {
        ...info,
        uploadedPacks,
        uploadedBytes,
        unchangedFiles: scan.unchanged,
      };
    } finally {
      await rm(temp, { recursive: true, force: true });
    }
  }

  private async start(sessionId: string, name: string, body: Record<string, unknown>, o: PushOptions) {
    const response = await this.requests.call('POST', paths.workspaceSnapshots(sessionId, name), {
      body,
      headers: fence(o),
      call: o,
      idempotent: true,
    });
    if (response.status !== 201) return fail(response);
    return bodyOf(response, schemas.WorkspaceSnapshotStart, 'startWorkspaceSnapshot');
  }

  private async commit(
    sessionId: string,
    name: string,
    snapshotId: string,
    body: { parent?: string; packs: WorkspacePackDeclaration[]; manifest: { size: number; md5: string } },
    o: PushOptions,
  ): Promise<WorkspaceSnapshotInfo> {
    const response = await this.requests.call('POST', paths.workspaceSnapshot(sessionId, name, snapshotId), {
      body,
      headers: fence(o),
      call: o,
      idempotent: true,
    });
    if (response.status !== 200) return fail(response);
    return infoOf(await bodyOf(response, schemas.WorkspaceSnapshot, 'commitWorkspaceSnapshot'));
  }

  private async locate(
    sessionId: string,
    name: string,
    snapshotId: string,
    o: CallOptions | undefined,
  ): Promise<Located | undefined> {
    const response = await this.requests.call('GET', paths.workspaceSnapshot(sessionId, name, snapshotId), {
      call: o,
    });
    if (response.status === 404) {
      await response.arrayBuffer();
      return undefined;
    }
    if (response.status !== 200) return fail(response);
    const body = await bodyOf(response, schemas.WorkspaceSnapshotDownload, 'getWorkspaceSnapshot');
    return {
      info: infoOf(body),
      manifestUrl: body.manifest,
      packUrls: new Map(
        body.packUrls.map((p) => [p.pack, { method: p.method, url: p.url, headers: p.headers }]),
      ),
    };
  }

  /** Bytes of a presigned GET (with `range`: those bytes, even where the store answers all of it). */
  private async fetchBytes(
    request: SnapshotDirectRequest,
    o: CallOptions | undefined,
    range?: { start: number; length: number },
  ): Promise<Uint8Array> {
    const headers = range
      ? { ...request.headers, range: `bytes=${range.start}-${range.start + range.length - 1}` }
      : request.headers;
    return this.requests.direct(
      { ...request, headers },
      { call: o, download: true },
      async (response, clock) => {
        const parts: Uint8Array[] = [];
        for await (const part of chunksOf(response, clock)) parts.push(part);
        const bytes = concatBytes(parts);
        if (!range || response.status === 206) return bytes;
        // A store that ignores the range answers the whole object: cut it here.
        return bytes.subarray(range.start, range.start + range.length);
      },
    );
  }

  private async readManifest(located: Located, o: CallOptions | undefined): Promise<WorkspaceManifest> {
    const stored = await this.fetchBytes(located.manifestUrl, o);
    return validateWorkspaceManifest(JSON.parse(gunzipSync(stored).toString('utf8')));
  }

  /**
   * A reader of chunks for `refs` (the chunks to be read, in order): a miss fetches a span of the
   * pack from the chunk on, through the later chunks of `refs` in the same pack whose gaps are at
   * most `gap` bytes (0: exactly adjacent chunks), up to 16 MiB; the last spans are kept.
   */
  private packReader(
    located: Located,
    refs: readonly ChunkRef[],
    gap: number,
    o: CallOptions | undefined,
  ): (pack: string, offset: number, length: number) => Promise<Uint8Array> {
    const byPack = new Map<string, Array<[number, number]>>();
    for (const r of refs) {
      const list = byPack.get(r.pack) ?? [];
      list.push([r.offset, r.length]);
      byPack.set(r.pack, list);
    }
    for (const list of byPack.values()) list.sort((a, b) => a[0] - b[0]);
    const spans: Array<{ pack: string; start: number; bytes: Uint8Array }> = [];
    const SPAN = 16 * 1024 * 1024;
    return async (pack, offset, length) => {
      const hit = spans.find(
        (s) => s.pack === pack && offset >= s.start && offset + length <= s.start + s.bytes.length,
      );
      if (hit) return hit.bytes.subarray(offset - hit.start, offset - hit.start + length);
      const url = located.packUrls.get(pack);
      if (!url) throw new ProtocolError(`no URL for pack ${pack}`, 200);
      let end = offset + length;
      for (const [at, len] of byPack.get(pack) ?? []) {
        if (at + len <= end) continue;
        if (at > end + gap || at + len - offset > SPAN) break;
        end = at + len;
      }
      const bytes = await this.fetchBytes(url, o, { start: offset, length: end - offset });
      spans.push({ pack, start: offset, bytes });
      if (spans.length > 4) spans.shift();
      return bytes.subarray(0, length);
    };
  }
}

/** Sealed packs a start call waits for before it goes out during a scan (128 MiB of 16 MiB packs). */
const PACKS_PER_CALL = 8;

/**
 * The start calls of a push, sent as the scan goes: its new chunks' hashes and its packs'
 * declarations, a call whenever the next item would take its JSON past 90 % of `bodyLimit` or the
 * API's caps (10,000 hashes, 1,000 packs), or `PACKS_PER_CALL` packs are waiting; the last call
 * (`finish`) carries the manifest. One call after another (the first answers the snapshot id), each
 * answered by `start`, which sets its packs uploading.
 */
class PushBatches<Answer extends { readonly snapshotId: string }> {
  private chunks: string[] = [];
  private packs: WorkspacePackDeclaration[] = [];
  private size = 0;
  private snapshotId: string | undefined;
  private last: Answer | undefined;
  private calls: Promise<void> = Promise.resolve();
  /** Room for the snapshot id, the parent and the manifest's declaration besides the lists. */
  private readonly room: number;

  constructor(
    bodyLimit: number,
    private readonly parent: string | undefined,
    private readonly start: (body: Record<string, unknown>) => Promise<Answer>,
  ) {
    this.room = Math.floor(bodyLimit * 0.9) - 160 - (parent?.length ?? 0);
  }

  chunk(hash: string): void {
    this.make(hash.length + 3, this.chunks.length >= MAX_SNAPSHOT_CHUNKS);
    this.chunks.push(hash);
  }

  pack(pack: WorkspacePackDeclaration): void {
    this.make(JSON.stringify(pack).length + 1, this.packs.length >= MAX_SNAPSHOT_PACKS);
    this.packs.push(pack);
    if (this.packs.length >= PACKS_PER_CALL) this.send(undefined);
  }

  /** Sends what is left with the manifest's declaration; answers the last call's answer. */
  async finish(manifest: { size: number; md5: string }): Promise<Answer> {
    this.send(manifest);
    await this.calls;
    return this.last as Answer;
  }

  /** Room for an item of `cost`: the waiting items go out first when it would not fit. */
  private make(cost: number, full: boolean): void {
    if ((this.size + cost > this.room || full) && (this.chunks.length > 0 || this.packs.length > 0))
      this.send(undefined);
    this.size += cost;
  }

  private send(manifest: { size: number; md5: string } | undefined): void {
    const { chunks, packs } = this;
    this.chunks = [];
    this.packs = [];
    this.size = 0;
    this.calls = this.calls.then(async () => {
      this.last = await this.start({
        ...(this.parent ? { parent: this.parent } : {}),
        ...(this.snapshotId ? { snapshotId: this.snapshotId } : {}),
        chunks,
        ...(packs.length > 0 ? { packs } : {}),
        ...(manifest ? { manifest } : {}),
      });
      this.snapshotId = this.last.snapshotId;
    });
    // A failure is thrown by `finish`, not left unhandled meanwhile.
    this.calls.catch(() => {});
  }
}

/** Work run as it is pushed, at most `limit` at a time; `drained` waits for all (rejects with the first failure). */
function taskQueue(limit: number) {
  const waiting: Array<() => Promise<void>> = [];
  let active = 0;
  let failure: { error: unknown } | undefined;
  let wake: (() => void) | undefined;
  const next = () => {
    while (active < limit && waiting.length > 0 && !failure) {
      const task = waiting.shift() as () => Promise<void>;
      active++;
      task()
        .catch((error: unknown) => {
          failure ??= { error };
        })
        .finally(() => {
          active--;
          next();
          wake?.();
        });
    }
  };
  return {
    push(task: () => Promise<void>): void {
      waiting.push(task);
      next();
    },
    async drained(): Promise<void> {
      while (active > 0 || (waiting.length > 0 && !failure)) await new Promise<void>((r) => (wake = r));
      if (failure) throw failure.error;
    },
  };
}

/** Bytes of files being hashed and compressed at once while the scan reads on. */
const PACKING_AHEAD = 64 * 1024 * 1024;

/**
 * The scan's files in order: each file's work is started by the caller (hashing in a worker and
 * compressing in libuv's thread pool while the main thread reads and cuts the next files) and `finish`ed in
 * the files' order (so packs do not depend on timing); `add` waits while more than
 * `PACKING_AHEAD` bytes are on their way.
 */
function orderedQueue() {
  let chain: Promise<void> = Promise.resolve();
  let ahead = 0;
  return {
    async add<T>(bytes: number, prepared: Promise<T>, finish: (value: T) => Promise<void>) {
      // Awaited in the chain below; marked handled now so a failure waits its turn there.
      prepared.catch(() => {});
      ahead += bytes;
      chain = chain.then(async () => {
        const value = await prepared;
        ahead -= bytes;
        await finish(value);
      });
      // A failure is thrown by the next wait or by `done`, not left unhandled meanwhile.
      chain.catch(() => {});
      if (ahead > PACKING_AHEAD) await chain;
    },
    done: () => chain,
  };
}

/** A promise whose failure is left to whoever awaits it (not reported as unhandled meanwhile). */
function awaitedLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/** A pack sealed during a scan, kept in a temporary file. */
interface ScannedPack extends WorkspacePackDeclaration {
  readonly file: string;
}

/**
 * Reads a tree for a push: its manifest, the hashes of chunks the parent does not have (once
 * each), and the packs holding them (in files under `temp`). With `statCache`, a file whose size,
 * mtime and inode equal its entry in the parent keeps the parent's chunks without being read.
 */
async function scanForPush(
  dir: string,
  parent: WorkspaceManifest | undefined,
  temp: string,
  statCache: boolean,
  packBytes: number,
  found: { chunk(hash: string): void; pack(pack: ScannedPack): void },
): Promise<{ manifest: WorkspaceManifest; packs: ScannedPack[]; unchanged: number }> {
  const before = new Map((parent?.entries ?? []).map((e) => [e.path, e]));
  const known = new Map<string, ChunkRef>();
  for (const e of parent?.entries ?? []) for (const c of e.chunks ?? []) known.set(c.hash, c);
  const writer = new PackWriter(packBytes);
  const packs: ScannedPack[] = [];
  const added = new Set<string>();
  let unchanged = 0;
  const drain = async () => {
    for (const sealed of writer.sealed.splice(0)) {
      const file = path.join(temp, sealed.id);
      await writeFile(file, sealed.bytes);
      const pack = { id: sealed.id, size: sealed.bytes.length, md5: sealed.md5, file };
      packs.push(pack);
      found.pack(pack);
    }
  };
  const packing = orderedQueue();
  // Large files in reused shared buffers, their hashes in a worker (./file-reads.ts).
  const buffers = new FileBuffers();
  const hasher = fileHasher();
  type Pending = {
    entry: Omit<WorkspaceManifestEntry, 'chunks'>;
    chunks?: readonly ChunkRef[];
    hashes?: string[];
  };
  // In walk order; a read file's slot is filled when its hashes are in (`packing`).
  const pending: Array<Pending | undefined> = [];
  const walk = async (abs: string, rel: string): Promise<void> => {
    for (const entryName of (await readdir(abs)).sort()) {
      const full = path.join(abs, entryName);
      const p = rel ? `${rel}/${entryName}` : entryName;
      const st = await lstat(full);
      const common = { path: p, mode: st.mode & 0o7777, mtimeMs: st.mtimeMs };
      if (st.isSymbolicLink()) {
        pending.push({ entry: { ...common, type: 'symlink', size: 0, target: await readlink(full) } });
      } else if (st.isDirectory()) {
        pending.push({ entry: { ...common, type: 'dir', size: 0 } });
        await walk(full, p);
      } else if (st.isFile()) {
        const old = before.get(p);
        if (
          statCache &&
          old?.type === 'file' &&
          old.size === st.size &&
          old.mtimeMs === st.mtimeMs &&
          old.ino === st.ino &&
          old.sha256 &&
          (old.chunks ?? []).every((c) => known.has(c.hash))
        ) {
          unchanged++;
          pending.push({
            entry: { ...common, type: 'file', size: st.size, ino: st.ino, sha256: old.sha256 },
            chunks: old.chunks ?? [],
          });
          continue;
        }
        const data = await buffers.read(full);
        const slot = pending.push(undefined) - 1;
        const entry = { ...common, type: 'file' as const, size: data.length, ino: st.ino };
        // Cuts and chunk hashes here (guided by the chunks the path had: an edited file is cut
        // again only where it changed); the file's hash in the worker and the stored form of each
        // chunk the parent lacks in the thread pool, while the scan reads on.
        const chunks = guidedChunks(data, old?.type === 'file' ? (old.chunks ?? []) : [], chunkHash);
        const pieces = chunks.map((c) => data.subarray(c.at, c.at + c.length));
        const hashes = chunks.map((c) => c.hash);
        const stored = hashes.map((h, i) =>
          known.has(h) ? undefined : awaitedLater(encodeChunkAsync(pieces[i] as Uint8Array)),
        );
        // A file of one chunk: its hash is the chunk's.
        const prepared = hashes.length === 1 ? Promise.resolve(hashes[0] as string) : hasher.hash(data);
        await packing.add(data.length, prepared, async (sha256) => {
          pending[slot] = { entry: { ...entry, sha256 }, hashes };
          for (const [i, hash] of hashes.entries()) {
            if (known.has(hash) || added.has(hash)) continue;
            added.add(hash);
            found.chunk(hash);
            writer.add(pieces[i] as Uint8Array, { hash, stored: await (stored[i] as Promise<EncodedChunk>) });
          }
          await drain();
          // Every job on the file's bytes is over (a repeated chunk's compression too): its buffer is free.
          await Promise.allSettled(stored);
          buffers.release(data);
        });
      }
    }
  };
  try {
    await walk(dir, '');
  } finally {
    // The worker stops once nothing waits for it, whether the walk finished or failed.
    await packing.done().catch(() => {});
    await hasher.close();
  }
  await packing.done();
  writer.flush();
  await drain();
  const entries = pending.map((slot): WorkspaceManifestEntry => {
    const { entry, chunks, hashes } = slot as Pending;
    if (entry.type !== 'file') return entry;
    const refs = chunks ?? (hashes ?? []).map((h) => known.get(h) ?? writer.refOf(h));
    return { ...entry, chunks: refs };
  });
  return { manifest: validateWorkspaceManifest({ format: 1, entries }), packs, unchanged };
}
