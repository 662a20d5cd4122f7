/**
 * Archived lists (docs/DESIGN.md, "Archives"): before a list is rewritten or deleted, its whole
 * content is written create-only to `<key>.list~a~<inc>~<gen>~<count>~<hash>` (kind=archive), so
 * listing the archives reads no bodies; a truncate archives only the items it removes, from the
 * kept count `offset` on, as `…~<count>~<hash>~<offset>` (`count` and `hash`: those of the archived
 * items). Both list formats archive the same way. A replacement that lost its race to an append
 * archives again, longer: within a generation the list only grows, so of several archives of one
 * generation the one that reaches furthest (`offset + count`), and of those the one from the lowest
 * offset, holds the others, and it is the archive of that generation (the others are parts of it,
 * left to the archive lifecycle).
 */

import { CorruptValueError } from '../../contract/errors.js';
import { chainHash, EMPTY_HASH } from '../../contract/hash.js';
import { jsonBody } from '../../contract/json.js';
import { ARCHIVE_ID_PATTERN } from '../../contract/limits.js';
import type { ArchiveInfo, ListPage, PageOptions } from '../../contract/types.js';
import { ObjectConditionFailedError } from '../../drivers/errors.js';
import { decodeBody, encodeBody } from '../../util/encoding.js';
import { listAll, type StoreContext } from '../context.js';
import { archiveName, parseArchiveName, type UserLayout } from '../layout.js';
import { readRestoring } from '../workspaces.js';
import { pageOfItems } from './format.js';

/** The archives of one user's lists. */
export class Archives {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
  ) {}

  /**
   * Archives generation `gen` of a list (a retry writing the same generation finds it there): its
   * whole content, or (a truncate) its items from `offset` on, `content.count` and `content.hash`
   * being those of the archived items alone.
   */
  async write(
    s: string,
    k: string,
    inc: string,
    gen: number,
    content: { readonly items: readonly unknown[]; readonly count: number; readonly hash: string },
    offset = 0,
  ): Promise<void> {
    const name = archiveName(this.layout.archive(s, k, inc, gen), content.count, content.hash, offset);
    try {
      const encoding = this.ctx.archiveEncoding;
      const body = encodeBody(Buffer.from(jsonBody(content.items), 'utf8'), encoding);
      await this.ctx.driver.put(name, body, {
        contentType: 'application/json',
        ...(encoding !== 'identity' ? { contentEncoding: encoding } : {}),
        metadata: { inc, count: String(content.count), hash: content.hash, offset: String(offset) },
        tags: { kind: 'archive' },
        ifNoneMatch: '*',
      });
      this.ctx.metrics.count('archivedLists');
    } catch (error) {
      // Already archived by a writer that replaced the same generation: the same content.
      if (!(error instanceof ObjectConditionFailedError)) throw error;
    }
  }

  /** The archives of the list in this incarnation, oldest first (one LIST). */
  async list(s: string, k: string, inc: string): Promise<ArchiveInfo[]> {
    const prefix = this.layout.archives(s, k, inc);
    const out = new Map<string, ArchiveInfo>();
    for (const object of await listAll(this.ctx.driver, prefix)) {
      const found = archiveOf(object.key.slice(prefix.length), object.lastModified);
      if (!found) continue;
      const seen = out.get(found.archiveId);
      if (!seen || holdsMore(found, seen)) out.set(found.archiveId, found);
    }
    // Name order is generation order.
    return [...out.values()];
  }

  /** One archived list, or undefined. */
  async get(
    s: string,
    k: string,
    inc: string,
    archiveId: string,
    page: PageOptions,
  ): Promise<ListPage | undefined> {
    // Archive ids are decimal: any other form names no archive.
    if (!ARCHIVE_ID_PATTERN.test(archiveId)) return undefined;
    const prefix = this.layout.generationArchives(s, k, inc, Number(archiveId));
    // Of several archives of the generation, the one that holds the others.
    let found: { key: string; info: ArchiveInfo } | undefined;
    const archives = this.layout.archives(s, k, inc);
    for (const object of await listAll(this.ctx.driver, prefix)) {
      const info = archiveOf(object.key.slice(archives.length), object.lastModified);
      if (info && (!found || holdsMore(info, found.info))) found = { key: object.key, info };
    }
    // An archive in a cold class is restored first (RestoreInProgressError until it is readable).
    const object = found ? await readRestoring(this.ctx, found.key, `archive ${archiveId}`) : undefined;
    if (!object) return undefined;
    let items: unknown;
    try {
      items = JSON.parse(Buffer.from(decodeBody(object.body, object.contentEncoding)).toString('utf8'));
    } catch (error) {
      throw new CorruptValueError(k, { cause: error });
    }
    if (!Array.isArray(items)) throw new CorruptValueError(k);
    return pageOfItems(items, page, chainHash(EMPTY_HASH, items));
  }
}

/** The archive a name after the list's archives prefix names (layout.ts). */
function archiveOf(name: string, archivedAt: Date): Required<ArchiveInfo> | undefined {
  const parsed = parseArchiveName(name);
  if (!parsed) return undefined;
  const { gen, count, hash, offset } = parsed;
  return { archiveId: String(gen), count, hash, archivedAt, offset };
}

/**
 * True when archive `a` holds more of its generation than `b`: it reaches further, or as far from
 * a lower offset (within a generation the list only grows, so it holds `b`).
 */
function holdsMore(a: Required<ArchiveInfo>, b: ArchiveInfo): boolean {
  const offset = b.offset ?? 0;
  const end = a.offset + a.count;
  return end > offset + b.count || (end === offset + b.count && a.offset < offset);
}
