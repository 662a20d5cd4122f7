/**
 * The command pattern of the reference's Redis store (AgentScope Java `RedisAgentStateStore`,
 * ../shared/REFERENCE.md and the seeds), re-implemented minimally on ioredis so that it runs on the
 * same server as the engine and is counted the same way. Each command is awaited before the next,
 * as the reference's client adapters send them (one round trip each):
 * - a value's save is `SET` then `SADD <session>:_keys`; a read is `GET`;
 * - a list save is `GET <list>:_hash`, `LLEN`, then either `DEL` + one `RPUSH` per item (a rewrite)
 *   or one `RPUSH` per new item (the list grew with the same sampled prefix), then `SET` of the
 *   hash and `SADD`: not atomic, no condition;
 * - a read of a list is the whole list (`LRANGE 0 -1`): the reference has no `last: N`;
 * - a conditional save (the newer `saveIfVersion`) as a read-compare-write: `GET`, then `SET` and
 *   `SADD` (not atomic either);
 * - the lock is `SET <lock> <owner> NX PX <ms>` and `DEL` (never renewed, no fencing token).
 * It exists only to be measured against; it keeps the reference's faults.
 */
import type { Redis } from 'ioredis';
import { sampledHash } from './reference-store.js';

export class ReferenceRedisStore {
  constructor(
    private readonly client: Redis,
    private readonly prefix = 'agentscope:session:',
  ) {}

  private base(sessionId: string) {
    return `${this.prefix}${sessionId}`;
  }

  async save(sessionId: string, key: string, value: unknown): Promise<void> {
    await this.client.set(`${this.base(sessionId)}:${key}`, JSON.stringify(value));
    await this.client.sadd(`${this.base(sessionId)}:_keys`, key);
  }

  async get(sessionId: string, key: string): Promise<unknown> {
    const text = await this.client.get(`${this.base(sessionId)}:${key}`);
    return text === null ? undefined : JSON.parse(text);
  }

  /** The modelled `saveIfVersion`: the stored JSON is the version; false (nothing written) on a mismatch. */
  async saveIf(sessionId: string, key: string, expected: unknown, value: unknown): Promise<boolean> {
    const stored = await this.client.get(`${this.base(sessionId)}:${key}`);
    if (stored !== JSON.stringify(expected)) return false;
    await this.save(sessionId, key, value);
    return true;
  }

  async saveList(sessionId: string, key: string, items: readonly unknown[]): Promise<void> {
    const list = `${this.base(sessionId)}:${key}:list`;
    const stored = await this.client.get(`${list}:_hash`);
    const existing = await this.client.llen(list);
    const rewrite =
      items.length < existing ||
      (stored === null && existing > 0) ||
      (existing > 0 && sampledHash(items.slice(0, existing)) !== stored);
    if (rewrite) {
      await this.client.del(list);
      for (const item of items) await this.client.rpush(list, JSON.stringify(item));
    } else for (const item of items.slice(existing)) await this.client.rpush(list, JSON.stringify(item));
    await this.client.set(`${list}:_hash`, sampledHash(items));
    await this.client.sadd(`${this.base(sessionId)}:_keys`, `${key}:list`);
  }

  async getList(sessionId: string, key: string): Promise<unknown[]> {
    const texts = await this.client.lrange(`${this.base(sessionId)}:${key}:list`, 0, -1);
    return texts.map((t) => JSON.parse(t) as unknown);
  }

  async lock(sessionId: string, owner: string, leaseMs: number): Promise<boolean> {
    return (await this.client.set(`${this.base(sessionId)}:_lock`, owner, 'PX', leaseMs, 'NX')) === 'OK';
  }

  async unlock(sessionId: string): Promise<void> {
    await this.client.del(`${this.base(sessionId)}:_lock`);
  }
}
