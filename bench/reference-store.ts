/**
 * A faithful re-implementation of the request pattern of the reference's OSS store (REFERENCE.md),
 * on our driver interface, so both are measured on the same driver and server:
 * - reads are HEAD then GET (single values `<key>.json` and lists alike);
 * - a single value's save is one unconditional PUT;
 * - a list save GETs the hash object; if present, GETs and parses the WHOLE list just to count it;
 *   PUTs the whole list whenever the size changed or a rewrite is needed; always PUTs the hash;
 * - the "hash" is a hashCode over the size and up to five sampled items.
 * It exists only to be measured against; it keeps every fault the reference has.
 */
import { ObjectNotFoundError } from '../lib/drivers/errors.js';
import type { ObjectStoreDriver } from '../lib/drivers/types.js';

function javaHashCode(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(31, h) + text.charCodeAt(i)) | 0;
  return h;
}

/** Size and up to five sampled items, as the reference computes it. */
export function sampledHash(list: readonly unknown[]): string {
  let h = list.length;
  const step = Math.max(1, Math.floor(list.length / 5));
  for (let i = 0; i < list.length && i / step < 5; i += step)
    h = (Math.imul(31, h) + javaHashCode(JSON.stringify(list[i]))) | 0;
  return (h >>> 0).toString(16);
}

export class ReferenceStore {
  constructor(
    private readonly driver: ObjectStoreDriver,
    private readonly prefix: string,
  ) {}

  private name(user: string, session: string, key: string, suffix: string) {
    return `${this.prefix}${user}/${session}/${key}${suffix}`;
  }

  /** A single value: PUT of `<key>.json`, unconditional. */
  async save(user: string, session: string, key: string, value: unknown): Promise<void> {
    await this.driver.put(this.name(user, session, key, '.json'), JSON.stringify(value));
  }

  /** A single value: HEAD, then GET (undefined when absent). */
  async get(user: string, session: string, key: string): Promise<unknown> {
    const name = this.name(user, session, key, '.json');
    try {
      await this.driver.head(name);
      return JSON.parse(Buffer.from((await this.driver.get(name)).body).toString()) as unknown;
    } catch (error) {
      if (error instanceof ObjectNotFoundError) return undefined;
      throw error;
    }
  }

  async saveList(user: string, session: string, key: string, list: readonly unknown[]): Promise<void> {
    const hashName = this.name(user, session, key, '.list.hash');
    const listName = this.name(user, session, key, '.list.json');
    let storedSize = -1;
    let storedHash: string | undefined;
    try {
      storedHash = Buffer.from((await this.driver.get(hashName)).body).toString();
      storedSize = (JSON.parse(Buffer.from((await this.driver.get(listName)).body).toString()) as unknown[])
        .length;
    } catch (error) {
      if (!(error instanceof ObjectNotFoundError)) throw error;
    }
    const hash = sampledHash(list);
    if (storedSize !== list.length || storedHash !== hash)
      await this.driver.put(listName, JSON.stringify(list));
    await this.driver.put(hashName, hash);
  }

  async getList(user: string, session: string, key: string): Promise<unknown[]> {
    const listName = this.name(user, session, key, '.list.json');
    try {
      await this.driver.head(listName);
      return JSON.parse(Buffer.from((await this.driver.get(listName)).body).toString()) as unknown[];
    } catch (error) {
      if (error instanceof ObjectNotFoundError) return [];
      throw error;
    }
  }
}
