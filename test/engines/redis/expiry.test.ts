/**
 * Expiry on Redis (docs/backends.md, "Redis"): every key of a session carries the same deadline,
 * moved for all of them at most once per keep-alive interval by the writing script.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EMPTY_HASH } from '../../../lib/contract/hash.js';
import { encodeId, MEMORY_SESSION } from '../../../lib/contract/ids.js';
import { createRedisStateStore } from '../../../lib/engines/redis/store.js';
import { type RedisUnderTest, startTopology } from './harness.js';

let redis: RedisUnderTest;
beforeAll(async () => {
  redis = await startTopology('standalone');
});
afterAll(() => redis.close());

it('every key of a session expires at one deadline, moved at most once per keep-alive interval', async () => {
  const prefix = `x-${randomUUID().slice(0, 8)}/`;
  const client = redis.client as Redis;
  // A day of retention, a 1.5 s keep-alive interval.
  const alice = createRedisStateStore({ client, prefix, retentionDays: 1, keepAliveMs: 1500 }).forUser(
    'alice',
  );
  const deadlines = async () => {
    const keys = await client.keys(`${prefix}{alice/s}:*`);
    return new Map(await Promise.all(keys.map(async (k) => [k, await client.pexpiretime(k)] as const)));
  };
  await alice.save('s', 'plan', 1);
  const listed = await alice.appendList('s', 'm', [1, 2], { expectedCount: 0, writeId: 'w1' });
  await alice.saveList('s', 'r', [1]);
  await alice.saveList('s', 'r', [2]); // archived: its archive keys too
  await alice.commit('s', { commitId: 'c1', values: [{ key: 'c', value: 1 }] });
  const first = await deadlines();
  expect(first.size).toBeGreaterThanOrEqual(12);
  const [deadline] = [...new Set(first.values())];
  expect(new Set(first.values()).size).toBe(1);
  expect((deadline as number) - Date.now()).toBeGreaterThan(86_400_000 - 60_000);
  // Within the interval: a write leaves the deadline where it is (no refresh of every key).
  await alice.appendList('s', 'm', [3], { expectedCount: 2, expectedHash: listed.hash });
  expect(new Set((await deadlines()).values())).toEqual(new Set([deadline]));
  // After it: the next write moves every key's deadline, together.
  await new Promise((r) => setTimeout(r, 1600));
  await alice.appendList('s', 'm', [4], { expectedCount: 3 });
  const moved = await deadlines();
  expect(moved.size).toBe(first.size);
  expect(new Set(moved.values()).size).toBe(1);
  expect([...moved.values()][0]).toBeGreaterThan(deadline as number);
  // No key without a deadline; an absent list's append creates none either.
  expect([...moved.values()].every((t) => t > 0)).toBe(true);
  expect((await alice.getList('s', 'm')).hash).not.toBe(EMPTY_HASH);
});

it('the memory session never expires: none of its keys carries a deadline', async () => {
  const prefix = `x-${randomUUID().slice(0, 8)}/`;
  const client = redis.client as Redis;
  const alice = createRedisStateStore({ client, prefix, retentionDays: 1, keepAliveMs: 1 }).forUser('alice');
  const base = `${prefix}{alice/${encodeId('sessionId', MEMORY_SESSION)}}:`;
  await alice.save(MEMORY_SESSION, 'i:a', { note: 1 });
  await alice.appendList(MEMORY_SESSION, 'm', [1], { expectedCount: 0, writeId: 'w1' });
  await alice.saveList(MEMORY_SESSION, 'r', [1]);
  await alice.saveList(MEMORY_SESSION, 'r', [2]); // archived
  await new Promise((r) => setTimeout(r, 5)); // past the keep-alive interval: a refresh
  await alice.commit(MEMORY_SESSION, { commitId: 'c1', values: [{ key: 'i:b', value: 2 }] });
  const keys = await client.keys(`${base}*`);
  expect(keys.length).toBeGreaterThanOrEqual(8);
  for (const k of keys) expect(await client.pexpiretime(k), k).toBe(-1);
  // An ordinary session beside it still expires.
  await alice.save('s', 'plan', 1);
  expect(await client.pexpiretime(`${prefix}{alice/s}:v:plan`)).toBeGreaterThan(Date.now());
  // Deleted, its fencing tombstone stays too, without a deadline.
  await alice.delete(MEMORY_SESSION, { token: 5 });
  const left = await client.keys(`${base}*`);
  expect(left).toEqual([`${base}m`]);
  expect(await client.pexpiretime(left[0] as string)).toBe(-1);
});
