/** Request and response schemas (zod); the OpenAPI document is generated from the same schemas. */
import * as z from 'zod';
import { LEASE_MS, WAIT_MS } from '../lock/types.js';
import { PROBLEM_CODES } from './problems.js';

/**
 * Any JSON value, passed through as it is: bodies are already I-JSON (ijson.ts), and rebuilding
 * objects, as z.json() does, would drop own `__proto__` members.
 */
const json = z.unknown().meta({
  description: 'any I-JSON value (RFC 7493)',
  type: ['null', 'boolean', 'number', 'string', 'array', 'object'],
});
const hash = z
  .string()
  .regex(/^sha256:[0-9a-f]{64}$/)
  .describe('chain hash: sha256 over RFC 8785 canonical items');
const owner = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/);
const timestamp = z.string().describe('RFC 3339 UTC with milliseconds');
const md5 = z
  .string()
  .regex(/^[A-Za-z0-9+/]{22}==$/)
  .describe('base64 MD5 of the bytes as stored');
const tier = z.enum(['standard', 'infrequent', 'archive']);
const direct = z
  .object({
    method: z.enum(['GET', 'PUT']),
    url: z.string(),
    headers: z.record(z.string(), z.string()).describe('send exactly these headers (they are signed)'),
  })
  .describe('a request made straight to the object store');
const workspace = {
  name: z.string(),
  size: z.number().int(),
  storageClass: tier,
  lastModified: timestamp,
  contentEncoding: z.string().optional(),
};

export const schemas = {
  LockRequest: z
    .object({
      leaseMs: z.number().int().min(LEASE_MS.min).max(LEASE_MS.max).optional(),
      waitMs: z.number().int().min(WAIT_MS.min).max(WAIT_MS.max).optional(),
      owner: owner.optional(),
    })
    .strict(),
  RenewRequest: z
    .object({ leaseMs: z.number().int().min(LEASE_MS.min).max(LEASE_MS.max).optional() })
    .strict(),
  AppendRequest: z
    .object({
      items: z.array(json).min(1).max(1000),
      expectedCount: z.number().int().min(0),
      expectedHash: hash.optional(),
    })
    .strict(),
  WholeList: z.array(json),
  Value: json,
  Etag: z.object({ etag: z.string() }),
  ListWrite: z.object({
    action: z.enum(['created', 'appended', 'rewritten', 'unchanged']),
    count: z.number().int(),
    hash,
  }),
  ListPage: z.object({ items: z.array(json), count: z.number().int(), hash }),
  Archives: z.object({
    archives: z.array(
      z.object({ archiveId: z.string(), count: z.number().int(), hash, archivedAt: timestamp }),
    ),
  }),
  SessionPage: z.object({
    sessions: z.array(z.object({ sessionId: z.string(), lastActivity: timestamp })),
    nextCursor: z.string().nullable(),
  }),
  Lease: z.object({ owner, token: z.number().int(), expiresAt: timestamp, leaseMs: z.number().int() }),
  Health: z.object({ status: z.literal('ok') }),
  WorkspaceUploadRequest: z
    .object({
      size: z.number().int().min(0),
      md5: md5.optional().describe('whole body, for a single PUT'),
      sha256: z
        .string()
        .regex(/^[A-Za-z0-9+/]{43}=$/)
        .optional()
        .describe('base64 SHA-256 of the whole body (checked by AWS S3)'),
      parts: z
        .array(z.object({ size: z.number().int().min(1), md5 }).strict())
        .min(1)
        .max(1000)
        .optional()
        .describe('a multipart upload: each part (all but the last at least 5 MiB)'),
      storageClass: tier.optional(),
      contentEncoding: z.enum(['identity', 'gzip', 'br']).optional(),
      contentType: z
        .string()
        .regex(/^[\x21-\x7e][\x20-\x7e]{0,127}$/)
        .optional(),
    })
    .strict(),
  WorkspaceUpload: z.object({
    uploadId: z.string(),
    expiresAt: timestamp,
    upload: direct.optional(),
    parts: z.array(direct.extend({ partNumber: z.number().int() })).optional(),
  }),
  Workspace: z.object(workspace),
  Workspaces: z.object({ workspaces: z.array(z.object(workspace)) }),
  WorkspaceDownload: z.object({
    ...workspace,
    status: z.literal('ready'),
    download: direct,
    expiresAt: timestamp,
  }),
  Restoring: z.object({
    status: z.literal('restoring'),
    detail: z.string(),
    name: z.string().optional(),
    storageClass: tier.optional(),
  }),
  ValueUploadRequest: z.object({ size: z.number().int().min(1), md5 }).strict(),
  ValueUpload: z.object({ uploadId: z.string(), upload: direct, expiresAt: timestamp }),
  ValueLocation: z.object({
    etag: z.string(),
    size: z.number().int(),
    download: direct,
    expiresAt: timestamp,
  }),
  Problem: z.object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.enum(PROBLEM_CODES),
    field: z.string().optional(),
    count: z.number().int().optional(),
    hash: z.string().optional(),
    holder: z.string().optional(),
    expiresAt: z.string().optional(),
    currentEtag: z.string().nullable().optional(),
    currentHash: z.string().optional(),
    limit: z.number().int().optional(),
    requestId: z.string().optional(),
    corruptKey: z.string().optional(),
  }),
} as const;

export type SchemaName = keyof typeof schemas;
