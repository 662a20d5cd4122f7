/**
 * The Redis engine's scripts' answers read back in Node, and the requests they take
 * (lib/engines/redis/store.ts; the scripts: scripts.ts).
 */
import { chainLeaves, leafHash } from '../../contract/hash.js';
import { keyOfCursor } from '../../contract/ids.js';
import { HASH_PREFIX } from '../../contract/limits.js';
import type { checkSnapshot } from '../../contract/turns.js';
import type { CommitRequest, CommitResult, ListAction } from '../../contract/types.js';

/** A script's answer: its code first (`ok`, or a refusal), then its values. */
export type Reply = Array<string | number | null>;
export const str = (v: string | number | null | undefined): string => String(v);
export const int = (v: string | number | null | undefined): number => Number(v);
export const hexOf = (hash: string) => hash.slice(HASH_PREFIX.length);

/** The chain hashes (hex) after each of `items`, appended to a list at `from`. */
export function chainStates(from: string, items: readonly unknown[]): string[] {
  const out: string[] = [];
  let hash = from;
  for (const item of items) {
    hash = chainLeaves(hash, [leafHash(item)]);
    out.push(hexOf(hash));
  }
  return out;
}

/** A commit's answer from its request and the record its script wrote (or found). */
export function resultOf(
  commitId: string,
  changes: { values: NonNullable<CommitRequest['values']>; lists: NonNullable<CommitRequest['lists']> },
  record: string,
): CommitResult {
  const lines = record.split('\n');
  const nv = changes.values.length;
  return {
    commitId,
    values: changes.values.map((v, i) => {
      // A value's line: its version and revision (a delete's is empty).
      const [etag, revision] = (lines[i] ?? '').split(' ');
      return { key: v.key, ...(etag ? { etag } : {}), ...(revision ? { revision: Number(revision) } : {}) };
    }),
    lists: changes.lists.map((l, i) => {
      const [action, count, hash] = (lines[nv + i] ?? '').split(' ');
      return { key: l.key, action: action as ListAction, count: Number(count), hash: hash as string };
    }),
  };
}

/** What the snapshot scripts read, from a checked request. */
export function snapshotRequest({ values, lists, page }: ReturnType<typeof checkSnapshot>) {
  const after = page?.cursor !== undefined ? keyOfCursor(page.cursor, 'valuePage.cursor') : undefined;
  return {
    values,
    lists: lists.map((l) => ({ key: l.key, ...(l.last !== undefined ? { last: l.last } : {}) })),
    ...(page
      ? { page: { prefix: page.prefix ?? '', limit: page.limit, ...(after !== undefined ? { after } : {}) } }
      : {}),
  };
}
