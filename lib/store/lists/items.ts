/**
 * List items stored as objects of their own (docs/DESIGN.md, "Lists"), shared by both formats: an
 * item over `LIST_ITEM_OBJECT_BYTES` of JSON is its own object, created create-only before what
 * references it, and stored as `{ "~ref": <object name>, "~leaf": <its leaf hash> }`; an item that
 * has a `~ref` or `~esc` member of its own is stored as `{ "~esc": item }`. Chain hashes fold in a
 * reference's leaf, so a list's hash is the same whatever is stored where. Also the item lines both
 * formats store: one JSON text and `\n` per item.
 */

import { chainLeaves, leafHash, leafHex } from '../../contract/hash.js';
import { jsonBody } from '../../contract/json.js';
import { LIST_ITEM_OBJECT_BYTES } from '../../contract/limits.js';
import type { ObjectStoreDriver } from '../../drivers/types.js';
import { getOrUndefined } from '../context.js';
import { createOnce } from './format.js';

export const ITEM_REF = '~ref';
export const ITEM_LEAF = '~leaf';
export const ITEM_ESCAPE = '~esc';

export type ItemRef = { readonly [ITEM_REF]: string; readonly [ITEM_LEAF]: string };

/** An item object to create (create-only) before the record or head that references it. */
export interface ItemObject {
  readonly name: string;
  readonly body: Buffer;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function isItemRef(stored: unknown): stored is ItemRef {
  return isRecord(stored) && Object.hasOwn(stored, ITEM_REF);
}

export function escapeItem(item: unknown): unknown {
  return isRecord(item) && (Object.hasOwn(item, ITEM_REF) || Object.hasOwn(item, ITEM_ESCAPE))
    ? { [ITEM_ESCAPE]: item }
    : item;
}

export function unescapeItem(stored: unknown): unknown {
  return isRecord(stored) && Object.hasOwn(stored, ITEM_ESCAPE) ? stored[ITEM_ESCAPE] : stored;
}

/** Stored items as item lines (one JSON text and `\n` each), as segments and log records hold them. */
export function itemLines(items: readonly unknown[]): Buffer {
  return Buffer.from(items.map(itemLine).join(''), 'utf8');
}

/** One stored item as its line. */
export function itemLine(item: unknown): string {
  return `${jsonBody(item)}\n`;
}

/**
 * The stored items of item lines; `damaged` makes the error for bytes that are not item lines (the
 * last line cut off, a line that is not JSON).
 */
export function parseItemLines(
  data: Uint8Array,
  damaged: (reason: string, options?: { cause: unknown }) => Error,
): unknown[] {
  const text = Buffer.from(data).toString('utf8');
  if (text === '') return [];
  if (!text.endsWith('\n')) throw damaged('an item record without its last line');
  try {
    return text
      .slice(0, -1)
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
  } catch (error) {
    throw damaged('an item that is not JSON', { cause: error });
  }
}

/** The chain hash after stored items: a reference folds in the leaf hash of the item it stands for. */
export function storedChain(from: string, stored: readonly unknown[]): string {
  return chainLeaves(
    from,
    stored.map((item) =>
      isItemRef(item) ? Buffer.from(item[ITEM_LEAF], 'hex') : leafHash(unescapeItem(item)),
    ),
  );
}

/** `storedChain` after each prefix of stored items: `[h0, h1, …, hn]` from `from`. */
export function storedPrefixes(stored: readonly unknown[], from: string): string[] {
  const out = [from];
  for (const item of stored) out.push(storedChain(out.at(-1) as string, [item]));
  return out;
}

/**
 * Items as stored: one over `LIST_ITEM_OBJECT_BYTES` becomes a reference to an object named by
 * `nameOf(i, <first 12 hex digits of its leaf>)` (returned in `objects`, to create first).
 */
export function storedItems(
  items: readonly unknown[],
  nameOf: (i: number, tag: string) => string,
): { stored: unknown[]; objects: ItemObject[] } {
  const objects: ItemObject[] = [];
  const stored = items.map((item, i) => {
    const body = Buffer.from(jsonBody(item), 'utf8');
    if (body.length <= LIST_ITEM_OBJECT_BYTES) return escapeItem(item);
    const leaf = leafHex(item);
    const name = nameOf(i, leaf.slice(0, 12));
    objects.push({ name, body });
    return { [ITEM_REF]: name, [ITEM_LEAF]: leaf };
  });
  return { stored, objects };
}

/** A stored item read back: the item, or its object gone, or an object that is not the item. */
export type Resolved = { readonly value: unknown } | { readonly gone: true } | { readonly corrupt: true };

/**
 * Creates item objects (create-only: one already there holds that item of that generation), in
 * parallel.
 */
export async function createItemObjects(
  driver: ObjectStoreDriver,
  objects: readonly ItemObject[],
): Promise<void> {
  await Promise.all(objects.map((o) => createOnce(driver, o.name, o.body, 'application/json')));
}

/** The item a stored item stands for (a reference's object read and checked against its leaf). */
export async function resolveItem(driver: ObjectStoreDriver, stored: unknown): Promise<Resolved> {
  if (!isItemRef(stored)) return { value: unescapeItem(stored) };
  const object = await getOrUndefined(driver, stored[ITEM_REF]);
  if (!object) return { gone: true };
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(object.body).toString('utf8'));
  } catch {
    value = undefined;
  }
  if (value === undefined || leafHex(value) !== stored[ITEM_LEAF]) return { corrupt: true };
  return { value };
}

/**
 * The items stored items stand for, resolved in parallel: `refuse.gone()` is thrown for an item
 * object that is gone, `refuse.corrupt()` for one that is not its item (the first to be found).
 */
export async function resolveItems(
  driver: ObjectStoreDriver,
  stored: readonly unknown[],
  refuse: { readonly gone: () => Error; readonly corrupt: () => Error },
): Promise<unknown[]> {
  return Promise.all(
    stored.map(async (item) => {
      const got = await resolveItem(driver, item);
      if ('gone' in got) throw refuse.gone();
      if ('corrupt' in got) throw refuse.corrupt();
      return got.value;
    }),
  );
}
