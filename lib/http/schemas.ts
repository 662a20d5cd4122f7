/** Request and response schemas (zod); the OpenAPI document is generated from the same schemas. */
import * as z from 'zod';
import { LEASE_MS, WAIT_MS } from '../lock/types.js';

const json = z.json().describe('any JSON value');
const hash = z
  .string()
  .regex(/^sha256:[0-9a-f]{64}$/)
  .describe('chain hash: sha256 over RFC 8785 canonical items');
const owner = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/);
const timestamp = z.string().describe('RFC 3339 UTC with milliseconds');

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
  Problem: z.object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.enum([
      'invalid-request',
      'unauthorized',
      'not-found',
      'method-not-allowed',
      'append-conflict',
      'fenced',
      'lock-held',
      'lock-lost',
      'precondition-failed',
      'payload-too-large',
      'precondition-unsupported',
      'backend-unavailable',
      'internal',
    ]),
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
