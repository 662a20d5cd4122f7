/**
 * Archived lists (docs/DESIGN.md, "Archives"): before a list is rewritten or deleted, its whole
 * content is written create-only to `<key>.list~a~<inc>~<gen>~<count>~<hash>` (kind=archive), so
 * listing the archives reads no bodies. Both list formats archive the same way. A replacement that
 * lost its race to an append archives again, longer: within a generation the list only grows, so
 * of several archives of one generation the one with the most items holds the others, and it is
 * the archive of that generation (the others are prefixes of it, left to the archive lifecycle).
 */
import { ObjectConditionFailedError } from '../../drivers/errors.js';
import { jsonBody, listAll, type StoreContext } from '../context.js';
import { decodeBody, encodeBody } from '../encoding.js';
import { CorruptValueError } from '../errors.js';
import { chainHash, EMPTY_HASH } from '../hash.js';
import { padNumber, type UserLayout } from '../ids.js';
import { ARCHIVE_ID_PATTERN, HASH_PREFIX } from '../limits.js';
import type { ArchiveInfo, ListPage, PageOptions } from '../types.js';
import { readRestoring } from '../workspaces.js';
import { pageOfItems } from './format.js';

/** The archives of one user's lists. */
export class Archives {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
  ) {}

  /** Archives generation `gen` of a list (a retry writing the same generation finds it there). */
  async write(
    s: string,
    k: string,
    inc: string,
    gen: number,
    content: { readonly items: readonly unknown[]; readonly count: number; readonly hash: string },
  ): Promise<void> {
    const name = `${this.layout.archive(s, k, inc, gen)}~${padNumber(content.count)}~${content.hash.slice(HASH_PREFIX.length)}`;
    try {
      const encoding = this.ctx.archiveEncoding;
      const body = encodeBody(Buffer.from(jsonBody(content.items), 'utf8'), encoding);
      await this.ctx.driver.put(name, body, {
        contentType: 'application/json',
        ...(encoding !== 'identity' ? { contentEncoding: encoding } : {}),
        metadata: { inc, count: String(content.count), hash: content.hash },
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
    // Name order is (generation, count): the last of a generation is its archive.
    const out = new Map<string, ArchiveInfo>();
    for (const object of await listAll(this.ctx.driver, prefix)) {
      const match = /^(\d{16})~(\d{16})~([0-9a-f]{64})$/.exec(object.key.slice(prefix.length));
      if (!match) continue;
      const archiveId = String(Number(match[1]));
      out.set(archiveId, {
        archiveId,
        count: Number(match[2]),
        hash: `${HASH_PREFIX}${match[3]}`,
        archivedAt: object.lastModified,
      });
    }
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
    const prefix = `${this.layout.archive(s, k, inc, Number(archiveId))}~`;
    const found = (await listAll(this.ctx.driver, prefix)).at(-1);
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
