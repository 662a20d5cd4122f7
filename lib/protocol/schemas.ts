/**
 * The request and answer schemas (zod), defined once: the router validates what it receives with
 * them, the typed client validates what it is answered, and the OpenAPI document is generated from
 * them. `schemas` are the bodies (the document's components); `headers` and `queries` are what the
 * routes read from headers and query strings.
 */

import * as z from 'zod/mini';
import { keyBoundProblem } from '../contract/ids.js';
import {
  DECIMAL_PATTERN,
  HASH_PATTERN,
  MAX_APPEND_ITEMS,
  MAX_KEY_PAGE,
  MAX_SESSION_PAGE,
  MAX_TURN_KEYS,
  MAX_UPLOAD_PARTS,
  MD5_PATTERN,
  SHA256_PATTERN,
  WRITE_ID_PATTERN,
  WRITE_ID_RULE,
} from '../contract/limits.js';
import { LEASE_MS, OWNER_PATTERN, OWNER_RULE, WAIT_MS } from '../contract/lock.js';
import { isRevision, REVISION_RULE } from '../contract/revisions.js';
import {
  MAX_MANIFEST_BYTES,
  MAX_PACK_BYTES,
  MAX_SNAPSHOT_CHUNKS,
  MAX_SNAPSHOT_PACKS,
  SNAPSHOT_ID,
} from '../contract/workspace-snapshots.js';
import { Problem } from './problems.js';

/** `schema`, with metadata for the OpenAPI document (a description, or what JSON Schema it reads as). */
export function meta<S extends z.ZodMiniType>(schema: S, data: z.core.GlobalMeta): S {
  const type: z.core.$ZodType = schema;
  z.globalRegistry.add(type, data);
  return schema;
}

/**
 * Any JSON value, passed through as it is: bodies are already I-JSON (lib/contract/json.ts), and rebuilding
 * objects, as z.json() does, would drop own `__proto__` members. Cheap on a 4 MiB list page. Its
 * JSON Schema is `{}` (any value), which generators read as `unknown`: a `type` list with `array`
 * would need `items`, and a union would make every caller's `unknown` fail to type-check.
 */
const json = meta(z.unknown(), { description: 'any I-JSON value (RFC 7493)' });
const int = (min?: number, max?: number) => {
  const checks = [
    ...(min === undefined ? [] : [z.minimum(min)]),
    ...(max === undefined ? [] : [z.maximum(max)]),
  ];
  return checks.length ? z.int().check(...checks) : z.int();
};
const pattern = (re: RegExp, message?: string) => z.string().check(z.regex(re, message));
const hash = meta(pattern(HASH_PATTERN), { description: 'chain hash: sha256 over RFC 8785 canonical items' });
const owner = pattern(OWNER_PATTERN, OWNER_RULE);
const timestamp = meta(z.string(), { description: 'RFC 3339 UTC with milliseconds' });
const md5 = meta(pattern(MD5_PATTERN), { description: 'base64 MD5 of the bytes as stored' });
const tier = z.enum(['standard', 'infrequent', 'archive']);
const direct = meta(
  z.object({
    method: z.enum(['GET', 'PUT']),
    url: z.string(),
    headers: meta(z.record(z.string(), z.string()), {
      description: 'send exactly these headers (they are signed)',
    }),
  }),
  { description: 'a request made straight to the object store' },
);
const lease = z.object({ owner, token: int(), expiresAt: timestamp, leaseMs: int() });
const snapshotKeys = {
  values: meta(z.optional(z.array(z.string()).check(z.maxLength(MAX_TURN_KEYS))), {
    description: `value keys to read (at most ${MAX_TURN_KEYS} keys, values and lists together; a key at most once)`,
  }),
  lists: meta(
    z.optional(
      z
        .array(
          z.strictObject({
            key: z.string(),
            last: meta(z.optional(int(0)), {
              description: 'the most recent items only; absent: the whole list',
            }),
          }),
        )
        .check(z.maxLength(MAX_TURN_KEYS)),
    ),
    { description: 'lists to read (a key at most once)' },
  ),
  valuePage: meta(
    z.optional(
      z.strictObject({
        prefix: meta(z.optional(z.string()), {
          description: 'only keys that start with this (UTF-8); at most 128 bytes, no control characters',
        }),
        limit: meta(int(1, MAX_TURN_KEYS), {
          description: "most keys in the page (they count towards the snapshot's keys)",
        }),
        cursor: z.optional(meta(z.string(), { description: 'nextCursor of the previous snapshot' })),
      }),
    ),
    {
      description:
        'the values of a page of keys, in key order, as listKeys pages them: answered after the values named (a key named too comes once); a key that is only a list is left out',
    },
  ),
};
const snapshotValue = z.union([
  z.object({ key: z.string(), absent: z.literal(true) }),
  meta(z.object({ key: z.string(), corrupt: z.literal(true) }), {
    description: 'the stored value is damaged: only this key fails',
  }),
  meta(
    z.object({
      key: z.string(),
      etag: z.string(),
      revision: int(1),
      size: int(),
      download: direct,
      expiresAt: timestamp,
    }),
    { description: 'too large for the answer: read it from the presigned URL' },
  ),
  z.object({ key: z.string(), value: json, etag: z.string(), revision: int(1) }),
]);
const snapshotList = z.union([
  meta(z.object({ key: z.string(), corrupt: z.literal(true) }), {
    description: 'the stored list is damaged: only this key fails',
  }),
  meta(
    z.object({ key: z.string(), items: z.array(json), count: int(), hash, offset: int(), baseHash: hash }),
    {
      description:
        "the most recent items that fit the answer, from `offset` (read the rest with getList); `count` and `hash` are the whole list's",
    },
  ),
]);
const snapshot = {
  exists: meta(z.boolean(), { description: 'false (and no data) for an absent session' }),
  values: z.array(snapshotValue),
  lists: z.array(snapshotList),
  nextCursor: meta(z.optional(z.string()), {
    description: "with a valuePage: pass as the page's `cursor` for the next one; absent on the last page",
  }),
};
const workspace = {
  name: z.string(),
  size: int(),
  storageClass: tier,
  lastModified: timestamp,
  contentEncoding: z.optional(z.string()),
};

const snapshotId = meta(pattern(SNAPSHOT_ID), {
  description: 'a workspace snapshot id: 10 base-36 digits of its creation time in ms, "-", 16 hex digits',
});
const chunkHash = meta(pattern(/^sha256:[0-9a-f]{64}$/), { description: 'sha256:<hex> of a chunk' });
const packId = meta(pattern(/^[0-9a-f]{64}$/), { description: 'a pack: hex SHA-256 of its bytes' });
const packDeclaration = z.strictObject({ id: packId, size: int(1, MAX_PACK_BYTES), md5 });
const manifestDeclaration = z.strictObject({ size: int(1, MAX_MANIFEST_BYTES), md5 });
const workspaceSnapshot = {
  snapshotId,
  createdAt: timestamp,
  parent: z.optional(snapshotId),
  entries: int(0),
  bytes: meta(int(0), { description: 'plain bytes of its files' }),
  manifestSize: int(0),
  packs: meta(z.array(packId), { description: 'the packs its manifest references' }),
};

/** Every body, by the name the OpenAPI document gives it. */
export const schemas = {
  LockRequest: z.strictObject({
    leaseMs: z.optional(int(LEASE_MS.min, LEASE_MS.max)),
    waitMs: z.optional(int(WAIT_MS.min, WAIT_MS.max)),
    owner: z.optional(owner),
  }),
  RenewRequest: z.strictObject({ leaseMs: z.optional(int(LEASE_MS.min, LEASE_MS.max)) }),
  AppendRequest: z.strictObject({
    items: z.array(json).check(z.minLength(1), z.maxLength(MAX_APPEND_ITEMS)),
    expectedCount: int(0),
    expectedHash: z.optional(hash),
  }),
  TruncateRequest: z.strictObject({
    count: meta(int(0), { description: 'the number of items to keep: the first `count`' }),
    expectedHash: meta(hash, { description: 'the chain hash the list must have' }),
  }),
  WholeList: z.array(json),
  Value: json,
  Saved: z.object({
    etag: meta(z.string(), { description: 'its new version (also the ETag header)' }),
    revision: meta(int(1), { description: 'its new revision (also the Agent-State-Revision header)' }),
  }),
  ListWrite: z.object({
    action: z.enum(['created', 'appended', 'rewritten', 'truncated', 'unchanged']),
    count: int(),
    hash,
  }),
  ListPage: z.object({ items: z.array(json), count: int(), hash, offset: int(), baseHash: hash }),
  Archives: z.object({
    archives: z.array(
      z.object({
        archiveId: z.string(),
        count: int(),
        hash,
        archivedAt: timestamp,
        offset: meta(int(0), {
          description:
            "the list position of the archive's first item: 0 for a whole list (a rewrite or a delete), the kept count for a truncate",
        }),
      }),
    ),
  }),
  SessionPage: z.object({
    sessions: z.array(z.object({ sessionId: z.string(), lastActivity: timestamp })),
    nextCursor: z.nullable(z.string()),
  }),
  KeyPage: z.object({
    values: z.array(
      z.object({
        key: z.string(),
        etag: meta(z.string(), { description: 'its version, as getValue answers it in ETag' }),
        revision: meta(int(1), {
          description: 'its revision, as getValue answers it in Agent-State-Revision',
        }),
        size: meta(int(), { description: 'bytes of its JSON' }),
        lastModified: timestamp,
      }),
    ),
    lists: z.array(z.object({ key: z.string(), count: int(), hash, lastModified: timestamp })),
    nextCursor: meta(z.optional(z.string()), {
      description: 'pass as `cursor` for the next page; absent on the last page',
    }),
  }),
  Lease: lease,
  LockHolder: z.object({ owner, token: int(), expiresAt: timestamp }),
  SnapshotRequest: z.strictObject(snapshotKeys),
  Snapshot: z.object(snapshot),
  TurnRequest: z.strictObject({
    leaseMs: int(LEASE_MS.min, LEASE_MS.max),
    waitMs: z.optional(int(WAIT_MS.min, WAIT_MS.max)),
    owner: z.optional(owner),
    ...snapshotKeys,
  }),
  Turn: z.object({ lease, ...snapshot }),
  CommitRequest: z.strictObject({
    commitId: meta(pattern(WRITE_ID_PATTERN), {
      description: 'names the commit (1 to 64 letters, digits or `._:-`): send the same with every retry',
    }),
    token: meta(z.optional(int(0)), { description: "the lease's fencing token" }),
    values: z.optional(
      z
        .array(
          z.union([
            z.strictObject({ key: z.string(), delete: z.literal(true) }),
            z.strictObject({
              key: z.string(),
              value: json,
              ifVersion: meta(z.optional(z.string()), { description: 'write only over this version (etag)' }),
              ifAbsent: meta(z.optional(z.boolean()), { description: 'write only when there is no value' }),
              ifRevision: meta(z.optional(int(1)), {
                description: 'write only over this revision (501 precondition-unsupported on OSS)',
              }),
              seenVersion: meta(z.optional(z.string()), {
                description:
                  'not a condition: the version (etag) the caller read, which the server tries as `If-Match` before it reads the value (an unconditional save stays unconditional); with `seenRevision` only',
              }),
              seenRevision: meta(z.optional(int(1)), {
                description:
                  'not a condition: the revision of the version named by `ifVersion` or `seenVersion`, so the server need not read the value to write the next revision',
              }),
            }),
          ]),
        )
        .check(z.maxLength(MAX_TURN_KEYS)),
    ),
    lists: z.optional(
      z
        .array(
          z.union([
            z.strictObject({
              key: z.string(),
              append: z.array(json).check(z.minLength(1), z.maxLength(MAX_APPEND_ITEMS)),
              expectedCount: int(0),
              expectedHash: hash,
            }),
            z.strictObject({ key: z.string(), replace: z.array(json), expectedHash: z.optional(hash) }),
            z.strictObject({ key: z.string(), truncate: int(0), expectedHash: hash }),
          ]),
        )
        .check(z.maxLength(MAX_TURN_KEYS)),
    ),
    lease: meta(
      z.optional(
        z.union([
          z.strictObject({ owner, release: z.literal(true) }),
          z.strictObject({ owner, renewMs: int(LEASE_MS.min, LEASE_MS.max) }),
        ]),
      ),
      { description: 'release (after the writes succeeded) or renew the lease named by `owner` and `token`' },
    ),
  }),
  CommitResult: z.object({
    commitId: z.string(),
    values: z.array(
      z.object({ key: z.string(), etag: z.optional(z.string()), revision: z.optional(int(1)) }),
    ),
    lists: z.array(
      z.object({
        key: z.string(),
        action: z.enum(['created', 'appended', 'rewritten', 'truncated', 'unchanged']),
        count: int(),
        hash,
      }),
    ),
    lease: meta(z.optional(z.union([z.object({ owner, released: z.literal(true) }), lease])), {
      description: 'the lease released, or renewed',
    }),
  }),

  Health: z.object({ status: z.literal('ok') }),
  Ready: z.object({ status: z.literal('ok') }),
  Capabilities: z.object({
    versioning: meta(z.boolean(), {
      description: 'every value carries a version (its ETag), and reads can be conditioned on it',
    }),
    revisions: meta(z.boolean(), { description: 'values carry a revision (1 on create, +1 per write)' }),
    conditionalOverwrite: meta(z.boolean(), {
      description:
        "a save conditioned on a version (If-Match, a commit's ifVersion) is evaluated atomically; false: refused with 501 precondition-unsupported (OSS)",
    }),
    ranges: meta(z.boolean(), {
      description: 'the backend reads byte ranges of stored objects (presigned downloads honour Range)',
    }),
    presignedTransfer: meta(z.boolean(), {
      description: 'workspaces and large values move straight to and from the object store by presigned URLs',
    }),
    atomicCommits: meta(z.boolean(), {
      description: 'a commit is atomic across its keys (false on object storage: per-key atomic)',
    }),
  }),
  WorkspaceUploadRequest: z.strictObject({
    size: int(0),
    md5: meta(z.optional(md5), { description: 'whole body, for a single PUT' }),
    sha256: meta(z.optional(pattern(SHA256_PATTERN)), {
      description: 'base64 SHA-256 of the whole body (checked by AWS S3)',
    }),
    parts: meta(
      z.optional(
        z.array(z.strictObject({ size: int(1), md5 })).check(z.minLength(1), z.maxLength(MAX_UPLOAD_PARTS)),
      ),
      { description: 'a multipart upload: each part (all but the last at least 5 MiB)' },
    ),
    storageClass: z.optional(tier),
    contentEncoding: z.optional(z.enum(['identity', 'gzip', 'br'])),
    contentType: z.optional(pattern(/^[\x21-\x7e][\x20-\x7e]{0,127}$/)),
  }),
  WorkspaceUpload: z.object({
    uploadId: z.string(),
    expiresAt: timestamp,
    upload: z.optional(direct),
    parts: z.optional(z.array(z.extend(direct, { partNumber: int() }))),
  }),
  Workspace: z.object(workspace),
  Workspaces: z.object({ workspaces: z.array(z.object(workspace)) }),
  WorkspaceDownload: z.object({
    ...workspace,
    status: z.literal('ready'),
    download: direct,
    expiresAt: timestamp,
  }),
  WorkspaceRestoring: z.object({ ...workspace, status: z.literal('restoring'), detail: z.string() }),
  WorkspaceSnapshotStartRequest: z.strictObject({
    snapshotId: meta(z.optional(snapshotId), { description: 'the snapshot a retried push continues' }),
    parent: meta(z.optional(snapshotId), { description: 'the snapshot this one deduplicates against' }),
    chunks: meta(z.optional(z.array(chunkHash).check(z.maxLength(MAX_SNAPSHOT_CHUNKS))), {
      description: 'hashes of the chunks the client believes new (a batch: at most 10,000)',
    }),
    packs: meta(z.optional(z.array(packDeclaration).check(z.maxLength(MAX_SNAPSHOT_PACKS))), {
      description: 'the new packs, in the last batch',
    }),
    manifest: meta(z.optional(manifestDeclaration), {
      description: 'the compressed manifest, in the last batch',
    }),
  }),
  WorkspaceSnapshotStart: z.object({
    snapshotId,
    missing: meta(z.array(chunkHash), { description: 'those of `chunks` the parent snapshot lacks' }),
    uploads: meta(z.array(z.extend(direct, { pack: packId })), {
      description: 'a presigned PUT (Content-MD5 signed) for each declared pack not stored yet',
    }),
    manifestUpload: meta(z.optional(direct), { description: 'a presigned PUT of the compressed manifest' }),
    expiresAt: timestamp,
  }),
  WorkspaceSnapshotCommitRequest: z.strictObject({
    parent: z.optional(snapshotId),
    packs: z.array(packDeclaration).check(z.maxLength(MAX_SNAPSHOT_PACKS)),
    manifest: manifestDeclaration,
  }),
  WorkspaceSnapshot: z.object(workspaceSnapshot),
  WorkspaceSnapshots: z.object({
    snapshots: meta(z.array(z.object({ snapshotId, createdAt: timestamp })), { description: 'newest first' }),
  }),
  WorkspaceSnapshotDownload: z.object({
    ...workspaceSnapshot,
    manifest: meta(direct, { description: 'a presigned GET of the gzip manifest' }),
    packUrls: meta(z.array(z.extend(direct, { pack: packId })), {
      description: 'a presigned GET of each pack the manifest references (send Range for one chunk)',
    }),
    expiresAt: timestamp,
  }),
  Restoring: z.object({
    status: z.literal('restoring'),
    detail: z.string(),
    name: z.optional(z.string()),
    storageClass: z.optional(tier),
  }),
  ValueUploadRequest: z.strictObject({ size: int(1), md5 }),
  ValueUpload: z.object({ uploadId: z.string(), upload: direct, expiresAt: timestamp }),
  ListItemLocation: z.object({
    count: int(),
    hash,
    offset: int(),
    baseHash: hash,
    size: int(),
    download: direct,
    expiresAt: timestamp,
  }),
  ValueLocation: z.object({
    etag: z.string(),
    revision: int(1),
    size: int(),
    download: direct,
    expiresAt: timestamp,
  }),
  Problem,
} as const;

export type SchemaName = keyof typeof schemas;

/** The name of a body schema (for the OpenAPI document); undefined for a schema not in `schemas`. */
export function schemaName(schema: z.core.$ZodType): SchemaName | undefined {
  return NAMES.get(schema);
}
const NAMES = new Map<z.core.$ZodType, SchemaName>(
  Object.entries(schemas).map(([name, schema]) => [schema, name as SchemaName]),
);

/** The answer header with a value's revision (docs/DESIGN.md, "Revisions"), beside its ETag. */
export const REVISION_HEADER = 'Agent-State-Revision';

/** The answer header with the request's id (every answer carries it; a client may send its own). */
export const REQUEST_ID_HEADER = 'X-Request-Id';
/** A request id a client may send and see kept: 1 to 128 visible ASCII characters (0x21-0x7E). */
export const REQUEST_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** Request headers a route may read, by the name a route's `headers` schema gives them. */
export const HEADER_NAMES = {
  fencingToken: 'Fencing-Token',
  lockOwner: 'Lock-Owner',
  ifMatch: 'If-Match',
  ifNoneMatch: 'If-None-Match',
  ifRevision: 'If-Revision',
  idempotencyKey: 'Idempotency-Key',
  /**
   * The user the client means, in the URL id form: a differing token user is 403 `user-mismatch`
   * (checked by the authentication step of every route that needs an identity, lib/http/auth.ts).
   */
  user: 'Agent-State-User',
} as const;

/** A request header's name in a route's `headers` schema. */
export type HeaderKey = keyof typeof HEADER_NAMES;

/** A fencing token in a header: a decimal integer below 2^53. */
export const FENCING_TOKEN_PATTERN = DECIMAL_PATTERN;
const TOKEN_RULE = 'must be a decimal integer below 2^53';

/** An `Idempotency-Key` header: the append's write id (1 to 64 letters, digits or any of `._:-`). */
export const IDEMPOTENCY_KEY_PATTERN = WRITE_ID_PATTERN;

/** A string that must be present ('is required' otherwise). */
const present = () =>
  z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') });

/** A refusal of a header or query value: what it must be. */
class Refused {
  constructor(readonly message: string) {}
}

/** A header or query value read by `read`, which returns the value or a `Refused`. */
const reading = <T>(source: z.ZodMiniString<string>, read: (raw: string) => T | Refused) =>
  z.pipe(
    source,
    z.transform((raw: string, payload): T => {
      const value = read(raw);
      if (!(value instanceof Refused)) return value;
      payload.issues.push({ code: 'custom', message: value.message, input: raw });
      return z.NEVER;
    }),
  );

const fencingToken = meta(
  reading(present(), (raw) =>
    FENCING_TOKEN_PATTERN.test(raw) && Number.isSafeInteger(Number(raw))
      ? Number(raw)
      : new Refused(TOKEN_RULE),
  ),
  { type: 'string', pattern: FENCING_TOKEN_PATTERN.source, description: 'the lease token' },
);

/** `If-Revision`: a decimal revision, 1 or more (lib/contract/revisions.ts). */
const revisionHeader = meta(
  reading(present(), (raw) =>
    DECIMAL_PATTERN.test(raw) && isRevision(Number(raw)) ? Number(raw) : new Refused(REVISION_RULE),
  ),
  { type: 'string', pattern: DECIMAL_PATTERN.source, description: 'save only over this revision' },
);

/** A strong entity tag, `"v"`; `*` as `star` says. */
const entityTag = (star: 'any' | 'refused', description: string) =>
  meta(
    reading(z.string(), (raw) => {
      if (raw === '*') return star === 'any' ? '*' : new Refused('must be an entity tag');
      return /^"([^"]*)"$/.exec(raw.trim())?.[1] ?? new Refused('must be a quoted entity tag');
    }),
    { type: 'string', description },
  );

/** `If-None-Match: *` (create only): true. */
const ifNoneMatch = meta(
  reading(z.string(), (raw): true | Refused => {
    if (raw === '*') return true;
    return new Refused(/^"[^"]*"$/.test(raw.trim()) ? 'only * is supported' : 'must be a quoted entity tag');
  }),
  { type: 'string', enum: ['*'], description: 'create only' },
);

/**
 * `If-None-Match` of a read (RFC 9110 13.1.2): `*`, or a list of entity tags, weak (`W/"v"`) or
 * strong (`"v"`); read as `*` or the opaque tags (without `W/` and quotes), which the router
 * compares weakly with the current version (a match answers 304 Not Modified).
 */
const notModifiedTags = meta(
  reading(z.string(), (raw): '*' | string[] | Refused => {
    if (raw.trim() === '*') return '*';
    const tags: string[] = [];
    const element = /[\t ]*(?:(?:W\/)?"([^"]*)")?[\t ]*(?:,|$)/y;
    while (element.lastIndex < raw.length) {
      const at = element.lastIndex;
      const match = element.exec(raw);
      if (!match || element.lastIndex === at) return new Refused('must be * or a list of entity tags');
      if (match[1] !== undefined) tags.push(match[1]);
    }
    return tags.length > 0 ? tags : new Refused('must be * or a list of entity tags');
  }),
  {
    type: 'string',
    description:
      'the ETag the caller holds (or a list of them; * for any): 304 Not Modified when one is still current (weak comparison)',
  },
);

/** What each kind of route reads from headers; keys are `HEADER_NAMES` keys. */
export const headers = {
  /** A write: `Fencing-Token`. */
  write: z.object({ fencingToken: z.optional(fencingToken) }),
  /** A save of a value: conditions and `Fencing-Token`. */
  save: z.object({
    ifMatch: z.optional(entityTag('refused', 'a quoted entity tag: "<etag>"')),
    ifNoneMatch: z.optional(ifNoneMatch),
    ifRevision: z.optional(revisionHeader),
    fencingToken: z.optional(fencingToken),
  }),
  /** A whole-list save: its base (`If-Match: "<hash>"`) and `Fencing-Token`. */
  listSave: z.object({
    ifMatch: z.optional(
      entityTag('any', 'a quoted entity tag: "<hash>", the hash the list must have (or *)'),
    ),
    fencingToken: z.optional(fencingToken),
  }),
  /**
   * An append: `Fencing-Token`, and the `Idempotency-Key` the client sends once per logical append
   * (the append's write id: a replay of an applied one answers the original result).
   */
  append: z.object({
    fencingToken: z.optional(fencingToken),
    idempotencyKey: z.optional(
      meta(present().check(z.regex(IDEMPOTENCY_KEY_PATTERN, WRITE_ID_RULE)), {
        description: 'one per logical append, the same on each retry of it',
      }),
    ),
  }),
  /**
   * A truncate: `Fencing-Token`, and the `Idempotency-Key` the client sends once per logical
   * truncate (its write id: a replay of an applied one answers the original result).
   */
  truncate: z.object({
    fencingToken: z.optional(fencingToken),
    idempotencyKey: z.optional(
      meta(present().check(z.regex(IDEMPOTENCY_KEY_PATTERN, WRITE_ID_RULE)), {
        description: 'one per logical truncate, the same on each retry of it',
      }),
    ),
  }),
  /**
   * A value read: `If-Match` (412 unless the value has that version; RFC 9110 13.2.2 evaluates it
   * first) and `If-None-Match` (304 when the value still has that version).
   */
  read: z.object({
    ifMatch: z.optional(
      entityTag('any', 'a quoted entity tag: "<etag>" (or *): 412 unless the value has it'),
    ),
    ifNoneMatch: z.optional(notModifiedTags),
  }),
  /**
   * A list read: `If-Match: "<hash>"` reads only that version; `If-None-Match: "<hash>"` answers
   * 304 when the list still has that hash.
   */
  listRead: z.object({
    ifMatch: z.optional(entityTag('any', 'a quoted entity tag: "<hash>" (or *)')),
    ifNoneMatch: z.optional(notModifiedTags),
  }),
  /** A lease: its owner and token. */
  lease: z.object({
    lockOwner: meta(present().check(z.regex(OWNER_PATTERN, OWNER_RULE)), { description: 'lease owner' }),
    fencingToken,
  }),
} as const;

/** An integer query parameter from `min` to `max`. */
const integer = (min: number, max: number, description: string) => {
  const rule = `must be an integer from ${min} to ${max}`;
  return meta(
    reading(z.string(), (raw) => {
      const n = Number(raw);
      return /^\d+$/.test(raw) && n >= min && n <= max ? n : new Refused(rule);
    }),
    { type: 'integer', minimum: min, maximum: max, description },
  );
};

/** A key or the start of one, in a query: what the store accepts as a `listKeys` bound. */
const keyBound = (description: string) =>
  meta(
    reading(z.string(), (raw) => {
      const problem = keyBoundProblem(raw);
      return problem === undefined ? raw : new Refused(problem);
    }),
    { type: 'string', description: `${description}; at most 128 bytes of UTF-8, no control characters` },
  );

/** What each kind of route reads from the query string. */
export const queries = {
  /** A page of sessions. */
  sessionPage: z.object({
    limit: z.optional(integer(1, MAX_SESSION_PAGE, 'page size')),
    cursor: z.optional(meta(z.string(), { description: 'nextCursor of the previous page' })),
  }),
  /** A page of a session's keys. */
  keys: z.object({
    prefix: z.optional(keyBound('only keys that start with this (UTF-8)')),
    startAfter: z.optional(keyBound('only keys after this one (UTF-8 byte order)')),
    limit: z.optional(
      integer(1, MAX_KEY_PAGE, 'most keys in the page (a key both a value and a list counts once)'),
    ),
    cursor: z.optional(meta(z.string(), { description: 'nextCursor of the previous page' })),
  }),
  /** Deleting every session. */
  deleteAll: z.object({
    all: meta(z.literal('true', { error: 'must be true to delete every session' }), {
      description: 'must be true',
    }),
  }),
  /** A page of a list or an archive. */
  page: z.object({
    offset: z.optional(integer(0, Number.MAX_SAFE_INTEGER, 'first item')),
    limit: z.optional(integer(0, Number.MAX_SAFE_INTEGER, 'page size')),
    last: z.optional(integer(0, Number.MAX_SAFE_INTEGER, 'the most recent items (not with offset or limit)')),
  }),
} as const;
