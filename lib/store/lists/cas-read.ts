/**
 * Reading a CAS-format list (docs/DESIGN.md, "CAS format": *read*): its head, and the one segment
 * (whole, or its header and the index stride around the page) a page needs besides it, every
 * segment checked against its reference and its chain hash; items stored as objects of their own
 * are read and checked against their leaves.
 */

import { CorruptValueError } from '../../contract/errors.js';
import { EMPTY_HASH } from '../../contract/hash.js';
import type { ListPage, PageOptions } from '../../contract/types.js';
import { ObjectNotFoundError } from '../../drivers/errors.js';
import { getOrUndefined, type StoreContext } from '../context.js';
import type { UserLayout } from '../layout.js';
import { isReferenceListHash } from '../reference.js';
import {
  type Head,
  parseHead,
  parseHeader,
  parseItems,
  type Segment,
  type SegmentRef,
  splitSegment,
} from './cas-codec.js';
import { checkWholeRead, rangeOf } from './format.js';
import { resolveItems, storedChain } from './items.js';

/** What is stored under the head's name. */
export interface Current {
  /** The head of this incarnation (a deleted one too); undefined when absent or a leftover. */
  readonly head?: Head;
  /** The etag of the object there, whatever it is (the CAS is on it). */
  readonly etag?: string;
  /** The object there cannot be read as a head. */
  readonly corrupt?: boolean;
  /** When the object there was written. */
  readonly modified?: Date;
}

/** A segment vanished under a read (a concurrent session delete or retirement): read again. */
export class SegmentGoneError extends Error {}

/** What is stored, seen from incarnation `inc`: a head of another one is a leftover (only its etag counts). */
export function mine(current: Current, inc: string | undefined): Current {
  if (current.corrupt || !current.head) return current;
  return current.head.inc === inc ? current : { etag: current.etag };
}

/** The heads and segments of one user's CAS-format lists. */
export class CasReader {
  constructor(
    private readonly ctx: StoreContext,
    private readonly layout: UserLayout,
    /** The most bytes between a segment's index entries: a segment this size or smaller is read whole. */
    private readonly indexBytes: number,
  ) {}

  /** The object under the head's name (of any incarnation: see `mine`). */
  async readCurrent(s: string, k: string, again = true): Promise<Current> {
    const object = await getOrUndefined(this.ctx.driver, this.layout.listHash(s, k));
    if (!object) return {};
    // A body shorter than the object is a read that broke off, not damage: retryable.
    checkWholeRead(object, object.key);
    // The AgentScope reference's hash (an adopted session's unconverted list) is no head: the list
    // is absent to this format, and its first write replaces it conditionally (lists/reference-lists.ts).
    if (isReferenceListHash(object.body)) return { etag: object.etag, modified: object.lastModified };
    const head = parseHead(object.body);
    // A head that does not parse is read once more before it counts as damaged (a read can break off
    // where the driver cannot tell).
    if (!head && again) return this.readCurrent(s, k, false);
    if (!head) {
      this.ctx.metrics.count('corruptObjects');
      return { etag: object.etag, corrupt: true };
    }
    return { head, etag: object.etag, modified: object.lastModified };
  }

  /** The page with its items as they were sent: items stored as objects of their own are read (in parallel). */
  async resolve(k: string, page: ListPage): Promise<ListPage> {
    const items = await resolveItems(this.ctx.driver, page.items, {
      gone: () => new SegmentGoneError(),
      corrupt: () => {
        this.ctx.metrics.count('corruptObjects');
        return new CorruptValueError(k);
      },
    });
    return { ...page, items };
  }

  /**
   * A page from the head and at most one segment (a page that would need two is cut at a segment
   * end), its items as stored (see `resolve`).
   */
  async pageOf(k: string, head: Head, page: PageOptions): Promise<ListPage> {
    const { from, to, keep } = rangeOf(page, head.count);
    const answer = (items: unknown[], offset: number, baseHash: string): ListPage => ({
      items,
      count: head.count,
      hash: head.hash,
      offset,
      baseHash,
    });
    if (from >= head.base) {
      const items = head.items.slice(from - head.base, to - head.base);
      return answer(items, from, storedChain(head.baseHash, head.items.slice(0, from - head.base)));
    }
    if (page.limit === undefined && page.last === undefined && from === 0) {
      const segments = await Promise.all(head.segments.map((ref) => this.readSegment(k, ref)));
      const items = segments.flatMap((segment) => parseItems(segment.data, k));
      this.verify(k, EMPTY_HASH, items, head.baseHash);
      return answer(items.concat(head.items), 0, EMPTY_HASH);
    }
    // The one segment the page reads: where it starts, or (for `last`) the newest one it reaches.
    const refs = head.segments;
    const index =
      keep === 'new'
        ? refs.length - 1
        : refs.findIndex((ref) => ref.first <= from && from < ref.first + ref.count);
    const ref = refs[index];
    if (!ref) throw new CorruptValueError(k);
    const start = Math.max(from, ref.first);
    const end = Math.min(to, ref.first + ref.count);
    const part = await this.readRange(k, ref, refs[index - 1]?.hash ?? EMPTY_HASH, start, end);
    const items =
      end === head.base && to > head.base
        ? part.items.concat(head.items.slice(0, to - head.base))
        : part.items;
    return answer(items, start, part.baseHash);
  }

  /** A whole segment, checked against its reference. */
  async readSegment(k: string, ref: SegmentRef): Promise<Segment> {
    const object = await getOrUndefined(this.ctx.driver, ref.name);
    if (!object) throw new SegmentGoneError();
    checkWholeRead(object, ref.name);
    const segment = splitSegment(Buffer.from(object.body));
    const header = segment?.header;
    if (!segment || header?.first !== ref.first || header.count !== ref.count || header.hash !== ref.hash) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(k);
    }
    return segment;
  }

  /** Items `[start, end)` of a segment whose chain starts at `baseHash`, with the hash before `start`. */
  private async readRange(k: string, ref: SegmentRef, baseHash: string, start: number, end: number) {
    const { driver } = this.ctx;
    if (ref.bytes <= this.indexBytes) {
      const items = parseItems((await this.readSegment(k, ref)).data, k);
      this.verify(k, baseHash, items, ref.hash);
      const at = start - ref.first;
      return { items: items.slice(at, end - ref.first), baseHash: storedChain(baseHash, items.slice(0, at)) };
    }
    const top = await getRange(driver, ref.name, 0, ref.data - 1);
    const header = parseHeader(top.subarray(0, top.indexOf(10)));
    if (header?.first !== ref.first || header.count !== ref.count || header.hash !== ref.hash) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(k);
    }
    const entries = header.index;
    const from = entries.findLast((entry) => entry[0] <= start) ?? entries[0];
    const upto = entries.find((entry) => entry[0] >= end);
    if (!from) throw new CorruptValueError(k);
    const last = (upto?.[1] ?? ref.bytes - ref.data) - 1;
    const items =
      last < from[1]
        ? []
        : parseItems(await getRange(driver, ref.name, ref.data + from[1], ref.data + last), k);
    this.verify(k, from[2], items, upto?.[2] ?? ref.hash);
    const at = start - from[0];
    return { items: items.slice(at, end - from[0]), baseHash: storedChain(from[2], items.slice(0, at)) };
  }

  /** Refuses items whose chain from `from` does not end at `expected` (counted as damage). */
  verify(k: string, from: string, items: readonly unknown[], expected: string): void {
    if (storedChain(from, items) !== expected) {
      this.ctx.metrics.count('corruptObjects');
      throw new CorruptValueError(k);
    }
  }
}

/** Bytes `[start, end]` of a segment (`SegmentGoneError` when it is gone). */
async function getRange(
  driver: StoreContext['driver'],
  name: string,
  start: number,
  end: number,
): Promise<Buffer> {
  try {
    return Buffer.from((await driver.get(name, { range: { start, end } })).body);
  } catch (error) {
    if (error instanceof ObjectNotFoundError) throw new SegmentGoneError();
    throw error;
  }
}
