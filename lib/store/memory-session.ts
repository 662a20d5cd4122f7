/**
 * The memory session's tags (docs/DESIGN.md, "Sessions"): every object of the memory session
 * (lib/contract/ids.ts, `MEMORY_SESSION`) that the store would tag `kind=state` or `kind=marker` is
 * written `kind=memory` instead, which no lifecycle rule selects, so the bucket's rules never
 * expire long-term memory. Done here, on the driver the store writes through, so that no writer of
 * the store (values, lists, commits, markers, keep-alive) has a second rule to follow; archives and
 * workspaces keep their own tags and rules.
 */
import { MEMORY_KIND } from '../contract/ids.js';
import type { ObjectStoreDriver } from '../drivers/types.js';
import { inMemorySession } from './layout.js';

/** The tags an object is written with, `kind=memory` for the memory session's markers and state. */
export function tagsFor(
  prefix: string,
  name: string,
  tags: Readonly<Record<string, string>> | undefined,
): Readonly<Record<string, string>> | undefined {
  if (tags === undefined || (tags.kind !== 'state' && tags.kind !== 'marker')) return tags;
  return inMemorySession(prefix, name) ? { ...tags, kind: MEMORY_KIND } : tags;
}

/** Methods whose options carry the tags of the object they write (named by their first argument, or the second for `copy`). */
const WRITES = new Set(['put', 'append', 'copy']);

/** `driver`, writing the memory session's markers and state objects under `prefix` as `kind=memory`. */
export function withMemoryTags(driver: ObjectStoreDriver, prefix: string): ObjectStoreDriver {
  return new Proxy(driver, {
    get(target, name) {
      const member = Reflect.get(target, name, target);
      if (typeof member !== 'function') return member;
      if (typeof name !== 'string' || !WRITES.has(name)) return member.bind(target);
      return (first: string, second: unknown, options?: { tags?: Record<string, string> }) => {
        const written = name === 'copy' ? (second as string) : first;
        const tags = tagsFor(prefix, written, options?.tags);
        return member.call(target, first, second, options && { ...options, ...(tags ? { tags } : {}) });
      };
    },
  });
}
