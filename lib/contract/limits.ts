/**
 * The patterns and limits the store enforces and the HTTP protocol (lib/protocol) publishes: each is
 * defined here once, in a module with no imports, so the store, the router and the typed client all
 * read the same value. Lease limits are the lock's (lock.ts).
 */

import { MIB } from '../util/units.js';

/** Byte limits of ids and the prefix (docs/DESIGN.md, "Ids and the object layout"). */
export const LIMITS = { userId: 128, sessionId: 180, key: 128, workspace: 128, prefix: 128 } as const;

/** The prefix of a list chain hash. */
export const HASH_PREFIX = 'sha256:';
/** A list chain hash: `sha256:` and 64 lower-case hex digits. */
export const HASH_PATTERN = new RegExp(`^${HASH_PREFIX}[0-9a-f]{64}$`);

/** A decimal number below 10^16, as archive ids and fencing tokens are written. */
export const DECIMAL_PATTERN = /^\d{1,16}$/;
/** An archive id as listed (any other form names no archive). */
export const ARCHIVE_ID_PATTERN = DECIMAL_PATTERN;

/** A list write id (`appendList`'s `writeId`, HTTP `Idempotency-Key`): 1 to 64 of `[A-Za-z0-9._:-]`. */
export const WRITE_ID_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;
/** What `WRITE_ID_PATTERN` asks for, as a refusal says it. */
export const WRITE_ID_RULE = 'must be 1 to 64 letters, digits or any of . _ : -';

/** List items larger than this (as JSON) are stored as objects of their own, never merged. */
export const LIST_ITEM_OBJECT_BYTES = 1024 * 1024;

/** Most items one append may carry. */
export const MAX_APPEND_ITEMS = 1000;
/** Most sessions one page of `listSessionIds` holds (and its default). */
export const MAX_SESSION_PAGE = 1000;
/** Most keys one page of `listKeys` holds (and its default). */
export const MAX_KEY_PAGE = 1000;

/** Largest single PUT (S3 and OSS: 5 GiB), and largest part. */
export const MAX_SINGLE_BYTES = 5 * 1024 * MIB;
/** Most parts of one upload: every part URL fits one answer (1,000 × 5 GiB ≈ 5 TiB). */
export const MAX_UPLOAD_PARTS = 1000;
/** Smallest part but the last (S3's limit; OSS's is lower). */
export const MIN_PART_BYTES = 5 * MIB;

/** A base64 MD5 (as `Content-MD5` carries it). */
export const MD5_PATTERN = /^[A-Za-z0-9+/]{22}==$/;
/** A base64 SHA-256 (as `x-amz-checksum-sha256` carries it). */
export const SHA256_PATTERN = /^[A-Za-z0-9+/]{43}=$/;

/** Most keys of a snapshot or a commit (values and lists together). */
export const MAX_TURN_KEYS = 100;
/** Most list items of one commit (appends and replacements together). */
export const MAX_COMMIT_ITEMS = MAX_APPEND_ITEMS;
