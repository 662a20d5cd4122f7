/**
 * The object layout (docs/DESIGN.md, "Ids and the object layout", which lists every name): the
 * only place that spells the names of the object-storage engine, and tells a name's kind from its
 * spelling. Ids are encoded as lib/contract/ids.ts says.
 */
import { randomBytes } from 'node:crypto';
import { encodeId, MEMORY_SESSION, namedUser, REFERENCE_ANONYMOUS, userSegment } from '../contract/ids.js';
import { HASH_PREFIX } from '../contract/limits.js';

/** Digits of generation and sequence numbers in names (2^53 has 16), so name order is number order. */
const NUMBER_DIGITS = 16;

/** A generation or sequence number as it appears in names. */
export function padNumber(n: number): string {
  return String(n).padStart(NUMBER_DIGITS, '0');
}

/** The folders of a user's session markers and tombstones (beside the session folders). */
const MARKERS = '~sessions';
const TOMBSTONES = '~deleted';

/** Object names of one user (created by `layoutFor`). */
export interface UserLayout {
  /** `<prefix><user>/` */
  readonly root: string;
  /** Prefix of the session markers. */
  readonly markers: string;
  marker(sessionId: string): string;
  tombstone(sessionId: string): string;
  /**
   * The folder the AgentScope reference writes the session in (`<prefix><user|__anon__>/<session>/`,
   * no encoding), when it differs from `session(…)` and can be told apart (no `/` or `~` in either
   * id); else undefined.
   */
  referenceSession(sessionId: string): string | undefined;
  /** `<prefix><user>/<session>/`: everything the session owns. */
  session(sessionId: string): string;
  value(sessionId: string, key: string): string;
  listJson(sessionId: string, key: string): string;
  listHash(sessionId: string, key: string): string;
  /** A sealed segment of items `first` to `last` (inclusive), named by its content (`tag`: a short hash). */
  segment(
    sessionId: string,
    key: string,
    inc: string,
    gen: number,
    first: number,
    last: number,
    tag: string,
  ): string;
  /** A list item stored as its own object (over 1 MiB): item `n` of generation `gen`, `tag` a short hash. */
  listItem(sessionId: string, key: string, inc: string, gen: number, n: number, tag: string): string;
  /** Prefix of the item objects of a list in one incarnation. */
  listItems(sessionId: string, key: string, inc: string): string;
  /** Prefix of the logs and segments of a list in the append format in one incarnation. */
  incarnationLogs(sessionId: string, key: string, inc: string): string;
  /** Prefix of every log and segment of a list in the append format (all incarnations). */
  logs(sessionId: string, key: string): string;
  /** Log `seq` of generation `gen` (named `tag`) of a list in the append format. */
  log(sessionId: string, key: string, inc: string, gen: number, seq: number, tag: string): string;
  /** Prefix of the archives of a list in one incarnation. */
  archives(sessionId: string, key: string, inc: string): string;
  archive(sessionId: string, key: string, inc: string, gen: number): string;
  /** Prefix of the archives of one generation (their full names: `archiveName`). */
  generationArchives(sessionId: string, key: string, inc: string, gen: number): string;
  /** Prefix of the workspaces of a session in one incarnation. */
  workspaces(sessionId: string, inc: string): string;
  workspace(sessionId: string, inc: string, name: string): string;
  workspaceUpload(sessionId: string, inc: string, name: string): string;
  valueUpload(sessionId: string, key: string, uploadId: string): string;
  /** Prefix of every workspace snapshot object of a session in one incarnation. */
  snapshots(sessionId: string, inc: string): string;
  /** Prefix of a workspace's snapshot objects in one incarnation (docs/DESIGN.md, "Workspace snapshots"). */
  snapshotRoot(sessionId: string, inc: string, name: string): string;
  /** Prefix of a workspace's packs (kind=pack), and one pack, named by the hex SHA-256 of its bytes. */
  snapshotPacks(sessionId: string, inc: string, name: string): string;
  snapshotPack(sessionId: string, inc: string, name: string, pack: string): string;
  /** Prefix of a workspace's committed snapshot records, and one record. */
  snapshotRecords(sessionId: string, inc: string, name: string): string;
  snapshotRecord(sessionId: string, inc: string, name: string, snapshotId: string): string;
  /** Prefix of a snapshot's compressed manifests, and the one of hex MD5 `md5` (content-addressed). */
  snapshotManifests(sessionId: string, inc: string, name: string, snapshotId: string): string;
  snapshotManifest(sessionId: string, inc: string, name: string, snapshotId: string, md5: string): string;
  /** The sweep's state of a workspace's packs (docs/DESIGN.md, "Workspace snapshots"). */
  snapshotSweep(sessionId: string, inc: string, name: string): string;
  /** The record of a commit made without a lease (its id and digest), create-only. */
  commitRecord(sessionId: string, commitId: string): string;
}

/** The layout of one user's objects under `prefix`; a null or blank user is the anonymous user. */
export function layoutFor(prefix: string, userId: string | null | undefined): UserLayout {
  const root = `${prefix}${userSegment(userId)}/`;
  const session = (s: string) => `${root}${encodeId('sessionId', s)}/`;
  const key = (s: string, k: string) => `${session(s)}${encodeId('key', k)}`;
  const named = namedUser(userId);
  const rawUser = named ?? REFERENCE_ANONYMOUS;
  return {
    root,
    referenceSession: (s) => {
      const raw = `${prefix}${rawUser}/${s}/`;
      return raw === session(s) || /[/~]/.test(rawUser) || /[/~]/.test(s) ? undefined : raw;
    },
    markers: `${root}${MARKERS}/`,
    marker: (s) => `${root}${MARKERS}/${encodeId('sessionId', s)}`,
    tombstone: (s) => `${root}${TOMBSTONES}/${encodeId('sessionId', s)}`,
    session,
    value: (s, k) => `${key(s, k)}.json`,
    listJson: (s, k) => `${key(s, k)}.list.json`,
    listHash: (s, k) => `${key(s, k)}.list.hash`,
    segment: (s, k, inc, gen, first, last, tag) =>
      `${key(s, k)}.list~g~${inc}~${padNumber(gen)}~${padNumber(first)}~${padNumber(last)}~${tag}`,
    listItems: (s, k, inc) => `${key(s, k)}.list~i~${inc}~`,
    incarnationLogs: (s, k, inc) => `${key(s, k)}.list~l~${inc}~`,
    listItem: (s, k, inc, gen, n, tag) =>
      `${key(s, k)}.list~i~${inc}~${padNumber(gen)}~${padNumber(n)}~${tag}`,
    logs: (s, k) => `${key(s, k)}.list~l~`,
    log: (s, k, inc, gen, seq, tag) =>
      `${key(s, k)}.list~l~${inc}~${padNumber(gen)}~${padNumber(seq)}~${tag}`,
    archives: (s, k, inc) => `${key(s, k)}.list~a~${inc}~`,
    archive: (s, k, inc, gen) => `${key(s, k)}.list~a~${inc}~${padNumber(gen)}`,
    generationArchives: (s, k, inc, gen) => `${key(s, k)}.list~a~${inc}~${padNumber(gen)}~`,
    workspaces: (s, inc) => `${session(s)}~ws~${inc}/`,
    workspace: (s, inc, name) => `${session(s)}~ws~${inc}/${encodeId('workspace', name)}`,
    workspaceUpload: (s, inc, name) => `${session(s)}~wsu~${inc}/${encodeId('workspace', name)}`,
    valueUpload: (s, k, id) => `${session(s)}~vu/${encodeId('key', k)}~${id}`,
    snapshots: (s, inc) => `${session(s)}~wss~${inc}/`,
    snapshotRoot: (s, inc, name) => `${session(s)}~wss~${inc}/${encodeId('workspace', name)}/`,
    snapshotPacks: (s, inc, name) => `${session(s)}~wss~${inc}/${encodeId('workspace', name)}/p/`,
    snapshotPack: (s, inc, name, pack) => `${session(s)}~wss~${inc}/${encodeId('workspace', name)}/p/${pack}`,
    snapshotRecords: (s, inc, name) => `${session(s)}~wss~${inc}/${encodeId('workspace', name)}/s/`,
    snapshotRecord: (s, inc, name, id) => `${session(s)}~wss~${inc}/${encodeId('workspace', name)}/s/${id}`,
    snapshotManifests: (s, inc, name, id) =>
      `${session(s)}~wss~${inc}/${encodeId('workspace', name)}/m/${id}~`,
    snapshotManifest: (s, inc, name, id, md5) =>
      `${session(s)}~wss~${inc}/${encodeId('workspace', name)}/m/${id}~${md5}`,
    snapshotSweep: (s, inc, name) => `${session(s)}~wss~${inc}/${encodeId('workspace', name)}/sweep`,
    commitRecord: (s, commitId) => `${session(s)}~commits/${encodeId('key', commitId)}`,
  };
}

/** The memory session's name segment (the same for every user). */
const MEMORY_SEGMENT = encodeId('sessionId', MEMORY_SESSION);

/**
 * Whether an object under `prefix` is the memory session's: in its folder
 * (`<prefix><user>/<memory>/…`), or its marker or tombstone (`<prefix><user>/~sessions/<memory>`).
 * Encoded ids hold no `/` or `~`, so no other session's object has either shape.
 */
export function inMemorySession(prefix: string, name: string): boolean {
  if (!name.startsWith(prefix)) return false;
  const [, second, third] = name.slice(prefix.length).split('/');
  if (second === MEMORY_SEGMENT) return true;
  return (second === MARKERS || second === TOMBSTONES) && third === MEMORY_SEGMENT;
}

/** The endings and marks of names in a session folder, for the readers that tell kinds apart. */
export const NAME = {
  /** A single value: `<key>.json`. */
  value: '.json',
  /** A list's head (CAS) or pointer (append): `<key>.list.hash`. */
  listHead: '.list.hash',
  /** A list's materialization (the whole array): `<key>.list.json`, never a key of its own. */
  listJson: '.list.json',
  /** Inside the name of an archived list: `<key>.list~a~…`. */
  archive: '.list~a~',
  /** Inside the name of a log or segment of the append format: `<key>.list~l~…`. */
  log: '.list~l~',
  /** Inside the name of a list item stored as an object of its own: `<key>.list~i~…`. */
  item: '.list~i~',
  /** The start of a workspace folder in a session folder: `~ws~<inc>/`. */
  workspaces: '~ws~',
  /** What separates a key from what the store adds to it (and the `~` folders): the listing delimiter. */
  delimiter: '~',
} as const;

/** Whether a name in a session folder is a single value's (`.json`, not a list's materialization). */
export const isValueName = (name: string) => name.endsWith(NAME.value) && !name.endsWith(NAME.listJson);

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * The name readiness checks read (`StateStore.checkReady`, one GET): `<prefix>~ready`, never written;
 * no user's segment holds `~`, so no object of the store has it.
 */
export const readyProbe = (prefix: string) => `${prefix}~ready`;

/** The backend probe's objects: a random user's random session's values, under the store's prefix. */
export const probeNames = {
  /** A fresh session folder: `<prefix><24 hex>/<24 hex>/`. */
  session: (prefix: string) => `${prefix}${hex(12)}/${hex(12)}/`,
  /** A fresh value of that session: `<session><8 hex>.json`. */
  value: (session: string) => `${session}${hex(4)}.json`,
  /** Every name the probe may write under `prefix`. */
  pattern(prefix: string): RegExp {
    const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return new RegExp(`^${escaped}[0-9a-f]{24}/[0-9a-f]{24}/[0-9a-f]{8}\\.json$`);
  },
};

/**
 * An archive's full name: its generation's name (`archive(…)`) and `~<count>~<hash>[~<offset>]`
 * (the archived items' count and chain hash; a truncate's kept count from which they start).
 */
export function archiveName(generation: string, count: number, hash: string, offset: number): string {
  const rest = `~${padNumber(count)}~${hash.slice(HASH_PREFIX.length)}`;
  return `${generation}${rest}${offset > 0 ? `~${padNumber(offset)}` : ''}`;
}

/** What an archive's name says after its list's `archives(…)` prefix: `<gen>~<count>~<hash>[~<offset>]`. */
export function parseArchiveName(
  name: string,
): { gen: number; count: number; hash: string; offset: number } | undefined {
  const match = /^(\d{16})~(\d{16})~([0-9a-f]{64})(?:~(\d{16}))?$/.exec(name);
  if (!match) return undefined;
  return {
    gen: Number(match[1]),
    count: Number(match[2]),
    hash: `${HASH_PREFIX}${match[3]}`,
    offset: match[4] === undefined ? 0 : Number(match[4]),
  };
}

/** The generation, sequence and tag of a log's name after its list's `incarnationLogs(…)` prefix. */
export function parseLogName(tail: string): { gen: number; seq: number; tag: string } | undefined {
  const match = /^(\d{16})~(\d{16})~([0-9a-z]{1,16})$/.exec(tail);
  return match ? { gen: Number(match[1]), seq: Number(match[2]), tag: match[3] as string } : undefined;
}
