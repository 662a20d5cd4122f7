/**
 * `.list.json`, the reference's layout of a list (docs/DESIGN.md, "CAS format"): the whole array,
 * stamped with the list's `inc`, `gen`, `count` and `hash`, written only with `listJson:
 * 'reference'` (after a rewrite; removed with the list). Both formats write it here; nothing reads
 * it to answer a request.
 */

import { jsonBody } from '../../contract/json.js';
import { headOrUndefined, type StoreContext } from '../context.js';
import type { UserLayout } from '../layout.js';

/** What `.list.json` is stamped with: the list state its array is. */
export interface ListJsonStamp {
  readonly inc: string;
  readonly gen: number;
  readonly count: number;
  readonly hash: string;
}

/** The `.list.json` of one user's lists. */
export class ListJson {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
  ) {}

  /** Whether the deployment asks for `.list.json` (`listJson: 'reference'`). */
  get wanted(): boolean {
    return this.ctx.listJson === 'reference';
  }

  /** Writes the list's whole array (`items`), or deletes it when the list is empty or deleted. */
  async write(s: string, k: string, stamp: ListJsonStamp, items: readonly unknown[]): Promise<void> {
    if (!this.wanted) return;
    if (items.length === 0) {
      await this.ctx.driver.delete(this.layout.listJson(s, k));
      return;
    }
    await this.ctx.driver.put(this.layout.listJson(s, k), jsonBody(items), {
      contentType: 'application/json',
      metadata: { inc: stamp.inc, gen: String(stamp.gen), count: String(stamp.count), hash: stamp.hash },
      tags: { kind: 'state' },
    });
  }

  /** The stamp of the `.list.json` there (one HEAD); undefined when there is none. */
  async stamp(s: string, k: string): Promise<Readonly<Record<string, string>> | undefined> {
    return (await headOrUndefined(this.ctx.driver, this.layout.listJson(s, k)))?.metadata;
  }
}

/** True when a `.list.json` stamp is that of the list of incarnation `inc` at `count` and `hash`. */
export function stampedWith(
  stamp: Readonly<Record<string, string>> | undefined,
  inc: string,
  list: { readonly count: number; readonly hash: string },
): boolean {
  return stamp?.inc === inc && stamp.count === String(list.count) && stamp.hash === list.hash;
}
