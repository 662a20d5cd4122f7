/**
 * Reads of a session the AgentScope reference wrote under segments this store writes encoded (a
 * user `a@b.example`, a session `a b`, the anonymous `__anon__`; docs/backends.md, "Reading data
 * written by the AgentScope reference"). While adoption is on and this store has no live marker
 * for the session, its values, whole lists and keys are read from the reference's own folder, as
 * they are; writes stay refused (`ReferenceIdUnsupportedError`) until `npm run adopt` moves them.
 * Keys are the reference's names as they are: `<key>.json` and `<key>.list.hash` (+ `.list.json`).
 */
import { CorruptValueError } from '../contract/errors.js';
import { compareUtf8, cursorOf, keyPageOptions } from '../contract/ids.js';
import type { KeyPage, ListKeysOptions, ListPage, PageOptions, Versioned } from '../contract/types.js';
import { getOrUndefined, listAll, type StoreContext } from './context.js';
import { NAME, type UserLayout } from './layout.js';
import { pageOfItems } from './lists/format.js';
import type { Sessions } from './sessions.js';

export class ReferenceReads {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    private readonly sessions: Sessions,
  ) {}

  /**
   * The reference's folder of session `s` when its reads go there: adoption on, a folder that is
   * not this store's own, and no live marker of this store for the session (one marker read).
   */
  async folder(s: string): Promise<string | undefined> {
    if (!this.ctx.adoptReference) return undefined;
    const folder = this.layout.referenceSession(s);
    if (folder === undefined) return undefined;
    return (await this.sessions.read(s)).live ? undefined : folder;
  }

  /** Value `k` of the reference's folder (revision 1: the reference records none). */
  async value<T>(folder: string, k: string): Promise<Versioned<T> | undefined> {
    const object = await getOrUndefined(this.ctx.driver, `${folder}${k}${NAME.value}`);
    if (!object) return undefined;
    return { value: this.parse(object.body, k) as T, version: object.etag, revision: 1 };
  }

  /** A page of list `k` of the reference's folder, from its whole array (absent: empty). */
  async list(folder: string, k: string, page: PageOptions): Promise<ListPage> {
    const object = await getOrUndefined(this.ctx.driver, `${folder}${k}${NAME.listJson}`);
    const items = object ? this.parse(object.body, k) : [];
    if (!Array.isArray(items)) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(k);
    }
    return pageOfItems(items, page);
  }

  /** Whether the reference's folder holds anything. */
  async exists(folder: string): Promise<boolean> {
    return (await this.ctx.driver.list({ prefix: folder, limit: 1 })).objects.length > 0;
  }

  /**
   * The keys of the reference's folder, a page at a time in UTF-8 order (the folder is listed
   * whole: the reference keeps a few objects per session); a list's count and hash are its array's.
   */
  async keys(folder: string, options: ListKeysOptions): Promise<KeyPage> {
    const { prefix, after, limit } = keyPageOptions(options);
    const objects = await listAll(this.ctx.driver, folder);
    const wanted = (k: string) => k.startsWith(prefix) && (after === undefined || compareUtf8(k, after) > 0);
    const values = objects
      .map((o) => ({ o, k: o.key.slice(folder.length) }))
      .filter(({ k }) => k.endsWith(NAME.value) && !k.endsWith(NAME.listJson))
      .map(({ o, k }) => ({ o, k: k.slice(0, -NAME.value.length) }));
    const lists = objects
      .map((o) => o.key.slice(folder.length))
      .filter((k) => k.endsWith(NAME.listHead))
      .map((k) => k.slice(0, -NAME.listHead.length));
    const all = [...new Set([...values.map((v) => v.k), ...lists])].filter(wanted).sort(compareUtf8);
    const keys = all.slice(0, limit);
    const inPage = new Set(keys);
    const pagedLists = await Promise.all(
      lists
        .filter((k) => inPage.has(k))
        .map(async (key) => {
          const whole = await this.list(folder, key, {});
          const head = objects.find((o) => o.key === `${folder}${key}${NAME.listHead}`);
          return {
            key,
            count: whole.count,
            hash: whole.hash,
            lastModified: head?.lastModified ?? new Date(0),
          };
        }),
    );
    const last = keys.at(-1);
    return {
      values: values
        .filter((v) => inPage.has(v.k))
        .sort((a, b) => compareUtf8(a.k, b.k))
        .map(({ o, k }) => ({
          key: k,
          etag: o.etag,
          revision: 1,
          size: o.size,
          lastModified: o.lastModified,
        })),
      lists: pagedLists.sort((a, b) => compareUtf8(a.key, b.key)),
      ...(all.length > keys.length && last !== undefined ? { nextCursor: cursorOf(last) } : {}),
    };
  }

  private parse(body: Uint8Array, k: string): unknown {
    try {
      return JSON.parse(Buffer.from(body).toString('utf8'));
    } catch (error) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(k, { cause: error });
    }
  }
}
