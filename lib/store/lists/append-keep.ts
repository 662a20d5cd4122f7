/**
 * The keep-alive of append-format lists (docs/DESIGN.md, "Append format": *Expiry and
 * keep-alive*): with the marker's refresh (at most once per R), each list's current log gets a
 * keep-alive record when idle, its older logs and segments are refreshed, and the objects no chain
 * names go once older than `retireAfterMs`.
 */

import { decodeId } from '../../contract/ids.js';
import { ObjectConditionFailedError } from '../../drivers/errors.js';
import type { ListedObject } from '../../drivers/types.js';
import type { StoreContext } from '../context.js';
import { NAME, parseLogName, type UserLayout } from '../layout.js';
import { type AppendChain, mine, type Tail } from './append-chain.js';
import { encodeRecord, parseChunk } from './append-codec.js';
import { NDJSON } from './format.js';

/** Keeps the objects of one user's append-format lists alive (sessions.ts calls it with the marker's refresh). */
export class AppendKeeper {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    private readonly chain: AppendChain,
  ) {}

  async keep(
    s: string,
    inc: string,
    objects: readonly ListedObject[],
    cutoff: number,
  ): Promise<ReadonlySet<string>> {
    const marks = [NAME.log, NAME.item];
    const logs = objects.filter((o) => marks.some((mark) => o.key.includes(mark)));
    const byList = new Map<string, ListedObject[]>();
    for (const o of logs) {
      const base = o.key.slice(0, Math.max(...marks.map((mark) => o.key.lastIndexOf(mark))));
      byList.set(base, [...(byList.get(base) ?? []), o]);
    }
    const session = this.layout.session(s);
    for (const [base, group] of byList) {
      try {
        await this.keepList(s, decodeId('key', base.slice(session.length)), inc, group, cutoff);
      } catch {
        // The next keep-alive tries again (a list damaged or changing meanwhile).
        this.ctx.metrics.count('persistenceFailures');
      }
    }
    return new Set(logs.map((o) => o.key));
  }

  /**
   * One list: its current log gets a keep-alive record when idle past the cutoff; an older log or
   * segment past it is refreshed (a sealed log once stored again as a normal object, the same
   * bytes; a normal one copied onto itself); objects no chain names (superseded generations,
   * rewrites that lost) go once older than `retireAfterMs`; so do item objects of another
   * generation than the current one (those of the current one are refreshed like segments).
   */
  private async keepList(s: string, k: string, inc: string, group: readonly ListedObject[], cutoff: number) {
    const pointer = mine(await this.chain.readPointer(s, k), inc);
    const tail = await this.chain.current(s, k, inc, pointer, true);
    if (!tail) return;
    const info = await this.chain.infoOf(inc, tail);
    const live = new Set([tail.name, ...info.index.map((e) => this.chain.name(s, k, inc, e))]);
    const prefix = this.layout.incarnationLogs(s, k, inc);
    const itemPrefix = this.layout.listItems(s, k, inc);
    const { driver } = this.ctx;
    for (const o of group) {
      if (o.key.startsWith(itemPrefix)) {
        const gen = /^(\d{16})~\d{16}~[0-9a-f]{12}$/.exec(o.key.slice(itemPrefix.length))?.[1];
        if (gen === undefined) continue;
        // A truncate's generation still references the item objects of the generations it kept.
        if (Number(gen) <= tail.ref.gen && Number(gen) >= (info.keepsFrom ?? tail.ref.gen)) {
          if (o.lastModified.getTime() < cutoff) await driver.copy(o.key, o.key, { tags: { kind: 'state' } });
        } else if (this.ctx.now() - o.lastModified.getTime() > this.ctx.retireAfterMs)
          await driver.delete(o.key);
        continue;
      }
      if (!o.key.startsWith(prefix) || !parseLogName(o.key.slice(prefix.length))) continue;
      const old = o.lastModified.getTime() < cutoff;
      if (o.key === tail.name) {
        if (old) await this.keepAliveRecord(tail);
      } else if (live.has(o.key)) {
        if (old) await this.refreshSegment(o.key);
      } else if (this.ctx.now() - o.lastModified.getTime() > this.ctx.retireAfterMs) {
        await driver.delete(o.key);
      }
    }
  }

  /** An empty record at the end of an idle log: its last-modified time moves, nothing else. */
  private async keepAliveRecord(tail: Tail): Promise<void> {
    const record = encodeRecord(Buffer.alloc(0), { ...tail.last, kind: 'k', wid: '', start: tail.size });
    try {
      await this.ctx.driver.append(tail.name, record, { position: tail.size });
    } catch (error) {
      // Appended to meanwhile: then it is fresh.
      if (!(error instanceof ObjectConditionFailedError)) throw error;
    }
  }

  private async refreshSegment(name: string): Promise<void> {
    const { driver } = this.ctx;
    const head = await driver.head(name);
    if (!head.appendable) {
      await driver.copy(name, name, { tags: { kind: 'state' } });
      return;
    }
    // A sealed log cannot be copied (OSS refuses appendable sources): stored again as a normal
    // object with the same bytes (it never changes once sealed; a late append to it fails).
    const object = await driver.get(name);
    const chunk = parseChunk(Buffer.from(object.body), 0, object.size);
    if (chunk.recs.at(-1)?.kind !== 's') return;
    await driver.put(name, object.body, { contentType: NDJSON, tags: { kind: 'state' } });
  }
}
