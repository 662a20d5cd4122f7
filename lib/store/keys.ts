/**
 * The keys of a session (docs/DESIGN.md, "Keys of a session"): its single values and its lists, a
 * page at a time, in the UTF-8 byte order of the key.
 *
 * A key's objects are `<key>.json` (a value) and `<key>.list.hash` (a list's head or pointer), its
 * name segment being the key itself when plain, else `!` + base64url. The session's folder is
 * listed with the delimiter `~`, so everything a list keeps besides its head (`<key>.list~…`:
 * segments, logs, item objects, archives) and the session's `~…` folders (workspaces, uploads) are
 * one entry each; `<key>.list.json` is a materialization, never a key.
 *
 * Order. Encoded names keep neither the keys' order nor their prefixes: every page lists the
 * encoded names whole (one LIST per 1,000 of their entries; with `prefix`, only those whose
 * base64url starts as the prefix's whole 3-byte groups do) and sorts them here. Plain names are in
 * name order, which is the keys' order except that a key sorts before its extensions by `-` or `.`
 * while its names (`k.json`, `k.list.hash`) may sort after theirs: a page reads plain names from
 * the cursor on, and answers only the keys below the bound of what it has read (`boundAfter`), so
 * a key is answered only once both of its objects and every smaller key have been seen.
 *
 * Cost of a page: one LIST per 1,000 entries read (`k.json`, `k.list.hash`, `k.list.json`,
 * `k.list~` for a key with both), plus, after the cursor or with a prefix, the LIST of the encoded
 * names; one HEAD per value answered (the LIST does not carry the value's incarnation) and per
 * list what its format's `stat` reads (CAS: the head, one GET; append: the pointer and the last
 * KiB of the current log, two GET); the marker in parallel with the first LIST.
 */

import { CorruptValueError, SessionNotFoundError } from '../contract/errors.js';
import {
  compareUtf8,
  cursorOf,
  decodeId,
  type KeyPageOptions,
  keyPageOptions,
  PLAIN_ID,
} from '../contract/ids.js';
import type { KeyListInfo, KeyPage, KeyValueInfo, ListKeysOptions } from '../contract/types.js';
import { ObjectNotFoundError } from '../drivers/errors.js';
import type { ListedObject, ObjectInfo } from '../drivers/types.js';
import { mapLimited } from '../util/map-limited.js';
import type { StoreContext } from './context.js';
import { NAME, type UserLayout } from './layout.js';
import type { ListFormat } from './lists/format.js';
import { incOf } from './reference.js';
import type { Sessions } from './sessions.js';
import { revisionOf } from './write-path.js';

/** The characters of plain ids, in byte order. */
const PLAIN_CHARS = '-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz';
const VALUE_SUFFIX = NAME.value;
const LIST_SUFFIX = NAME.listHead;
/** Requests `listKeys` has in flight at once for the values and lists of a page. */
const PARALLEL = 64;

// The byte order of keys is the contract's (every engine's).
export { compareUtf8 };

const isPlainChar = (c: string) => c.length === 1 && PLAIN_CHARS.includes(c);

/** The least plain character above `c`, if any. */
function plainAbove(c: string): string | undefined {
  for (const p of PLAIN_CHARS) if (p > c) return p;
  return undefined;
}

/**
 * The least string `b` over the plain characters with `b + ".list.hash"` after `t` in byte order:
 * when a listing has returned every name up to `t`, each plain key below `b` has had its value and
 * its list head returned (`k.json` < `k.list.hash` ≤ t), and every such key has; undefined when no
 * plain key can have a name after `t`. (`t` is a name relative to the session's folder; every such
 * name is ASCII.) The candidates: `t`'s own plain prefixes after which `t` continues below
 * `.list.hash`, and `t[0..i)` + the least plain character above `t[i]` (or `t` + `-`) for each `i`
 * up to its first character that is not plain; any key with a later head name is one of them or
 * above one of them.
 */
export function boundAfter(t: string): string | undefined {
  let best: string | undefined;
  const consider = (candidate: string) => {
    if (best === undefined || compareUtf8(candidate, best) < 0) best = candidate;
  };
  let i = 0;
  for (; i < t.length; i++) {
    const c = t[i] as string;
    const above = plainAbove(c);
    if (above !== undefined) consider(t.slice(0, i) + above);
    if (!isPlainChar(c)) break;
    if (compareUtf8(t.slice(i + 1), LIST_SUFFIX) < 0) consider(t.slice(0, i + 1));
  }
  if (i === t.length) consider(`${t}-`);
  return best;
}

/** The longest prefix of `s` made of plain characters. */
function plainPart(s: string): string {
  let i = 0;
  while (i < s.length && isPlainChar(s[i] as string)) i++;
  return s.slice(0, i);
}

/** The key and kind of a name (relative to the session's folder), or undefined when it is no key's. */
function keyOf(name: string): { key: string; kind: 'value' | 'list' } | undefined {
  const kind = name.endsWith(LIST_SUFFIX) ? 'list' : name.endsWith(VALUE_SUFFIX) ? 'value' : undefined;
  if (!kind) return undefined;
  const segment = name.slice(0, -(kind === 'list' ? LIST_SUFFIX : VALUE_SUFFIX).length);
  // `<k>.list.json` decodes to no key: a plain key never ends with `.list`, an encoded one has no `.`.
  try {
    return { key: decodeId('key', segment), kind };
  } catch {
    return undefined;
  }
}

/** What a listing found of one key: its value's object, and whether it has a list. */
export interface ListedKey {
  value?: ListedObject;
  list?: boolean;
}

/** The keys a page's listing found, in order, and the cursor after them. */
export interface ListedKeys {
  readonly keys: readonly string[];
  readonly found: ReadonlyMap<string, ListedKey>;
  readonly nextCursor?: string;
}

/** The keys of one user's sessions. */
export class Keys {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    private readonly sessions: Sessions,
    private readonly lists: ListFormat,
  ) {}

  async page(s: string, options: ListKeysOptions = {}): Promise<KeyPage> {
    // Bad options are refused before any request is made.
    const checked = keyPageOptions(options);
    const marker = this.sessions.read(s);
    // Read early, so an absent session is not reported as a listing failure.
    marker.catch(() => undefined);
    const { keys, found, nextCursor } = await this.listedChecked(s, checked);
    const read = await marker;
    if (!read.live) throw new SessionNotFoundError(s);
    const { inc } = read.live;
    const values: KeyValueInfo[] = [];
    const lists: KeyListInfo[] = [];
    const resolved = await mapLimited(keys, PARALLEL, async (key) => {
      const entry = found.get(key) as ListedKey;
      const [value, list] = await Promise.all([
        entry.value ? this.value(entry.value, inc) : undefined,
        entry.list ? this.list(s, key, inc) : undefined,
      ]);
      return { key, value, list };
    });
    for (const { key, value, list } of resolved) {
      if (value)
        values.push({
          key,
          etag: value.etag,
          revision: revisionOf(value),
          size: value.size,
          lastModified: value.lastModified,
        });
      if (list) lists.push({ key, ...list });
    }
    return { values, lists, ...(nextCursor !== undefined ? { nextCursor } : {}) };
  }

  /**
   * The keys of a page as its listing names them, in order, with what it found of each and the
   * cursor after them (the LISTs only: neither the marker nor any object is read).
   */
  async listed(s: string, options: ListKeysOptions = {}): Promise<ListedKeys> {
    return this.listedChecked(s, keyPageOptions(options));
  }

  private async listedChecked(s: string, { prefix, after, limit }: KeyPageOptions): Promise<ListedKeys> {
    const { driver } = this.ctx;
    const folder = this.layout.session(s);
    const found = new Map<string, ListedKey>();
    const wanted = (key: string) =>
      key.startsWith(prefix) && (after === undefined || compareUtf8(key, after) > 0);
    const take = (object: ListedObject) => {
      const got = keyOf(object.key.slice(folder.length));
      if (!got || !wanted(got.key)) return;
      const entry: ListedKey = found.get(got.key) ?? {};
      if (got.kind === 'value') entry.value = object;
      else entry.list = true;
      found.set(got.key, entry);
    };

    // One listing from the folder's start covers the encoded names (`!` sorts before every plain
    // character) and then the plain ones; otherwise the encoded names are listed whole, in parallel
    // with the first page of plain names.
    const unified = after === undefined && prefix === '';
    const plainPrefix = PLAIN_ID.test(prefix) || prefix === '' ? prefix : undefined;
    let encodedDone = false;
    const encoded = unified
      ? Promise.resolve()
      : (async () => {
          const bytes = Buffer.from(prefix, 'utf8');
          const groups = bytes.subarray(0, bytes.length - (bytes.length % 3)).toString('base64url');
          let cursor: string | undefined;
          do {
            const page = await driver.list({
              prefix: `${folder}!${groups}`,
              delimiter: NAME.delimiter,
              cursor,
            });
            for (const object of page.objects) take(object);
            cursor = page.nextCursor;
          } while (cursor);
        })();
    encoded.catch(() => undefined);
    // Plain names from the cursor on: every plain key after `after` has names after its plain part.
    let plainDone = plainPrefix === undefined;
    let last: string | undefined;
    let cursor: string | undefined;
    const start = after === undefined ? '' : plainPart(after) || ',';
    const startAfter =
      unified || plainPrefix === undefined || compareUtf8(start, plainPrefix) <= 0
        ? undefined
        : `${folder}${start}`;
    let bound: string | undefined;
    let answerable: string[] = [];
    for (;;) {
      if (!plainDone) {
        const page = await driver.list({
          prefix: `${folder}${plainPrefix}`,
          delimiter: NAME.delimiter,
          ...(cursor === undefined && startAfter !== undefined ? { startAfter } : {}),
          ...(cursor !== undefined ? { cursor } : {}),
        });
        for (const object of page.objects) take(object);
        for (const name of [...page.objects.map((o) => o.key), ...page.prefixes]) {
          const relative = name.slice(folder.length);
          if (last === undefined || compareUtf8(relative, last) > 0) last = relative;
        }
        cursor = page.nextCursor;
        plainDone = cursor === undefined;
        if (unified && (plainDone || (last !== undefined && !last.startsWith('!')))) encodedDone = true;
      }
      if (!unified && !encodedDone) {
        await encoded;
        encodedDone = true;
      }
      bound = plainDone ? undefined : last === undefined ? '' : boundAfter(last);
      answerable = encodedDone
        ? [...found.keys()].filter((key) => bound === undefined || compareUtf8(key, bound) < 0)
        : [];
      if (plainDone || answerable.length >= limit) break;
    }
    answerable.sort(compareUtf8);
    const keys = answerable.slice(0, limit);
    const more = !plainDone || answerable.length > keys.length;
    const end = keys.at(-1);
    return { keys, found, ...(more && end !== undefined ? { nextCursor: cursorOf(end) } : {}) };
  }

  /** The value's attributes when it is this incarnation's (a leftover of another is no key). */
  private async value(object: ListedObject, inc: string): Promise<ObjectInfo | undefined> {
    try {
      const head = await this.ctx.driver.head(object.key);
      return incOf(head) === inc ? head : undefined;
    } catch (error) {
      if (error instanceof ObjectNotFoundError) return undefined;
      throw error;
    }
  }

  /** The list's count, hash and last write; a damaged list is left out (its format counted it). */
  private async list(s: string, key: string, inc: string) {
    try {
      return await this.lists.stat(s, key, inc);
    } catch (error) {
      if (error instanceof CorruptValueError) return undefined;
      throw error;
    }
  }
}
