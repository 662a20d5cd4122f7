/**
 * Session-coherent expiry, simulated: the memory driver on a fake clock, and an interpreter of the
 * rendered lifecycle rules that deletes each eligible object at a random moment after it becomes
 * eligible (lazily, in no order). Over 1,000 random session histories no read ever returns part of
 * a session, and an idle session disappears whole.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { type LifecycleRule, lifecycleRules } from '../../lib/lifecycle/index.js';
import { createStateStore } from '../../lib/store/store.js';
import { seededRandom } from '../seeded-random.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Deletes eligible objects (age past their rule's days), each with probability `p` per pass. */
async function lifecycle(
  driver: ObjectStoreDriver,
  rules: LifecycleRule[],
  now: number,
  random: () => number,
  p: number,
) {
  const days = new Map(
    rules.filter((r) => r.kind).map((r) => [r.kind, r.expirationDays ?? Number.POSITIVE_INFINITY]),
  );
  let cursor: string | undefined;
  const eligible: string[] = [];
  do {
    const page = await driver.list({ cursor });
    for (const o of page.objects) {
      const kind = (await driver.head(o.key, { tags: true })).tags?.kind;
      const limit = days.get(kind as LifecycleRule['kind']);
      if (limit === undefined) throw new Error(`object without a kind tag: ${o.key}`);
      if (now - o.lastModified.getTime() > limit * DAY && random() < p) eligible.push(o.key);
    }
    cursor = page.nextCursor;
  } while (cursor);
  await driver.deleteMany(eligible);
  return eligible.length;
}

describe('session-coherent expiry (simulation of the rendered lifecycle rules)', () => {
  it('over 1,000 random histories, no read returns a partial session and idle sessions disappear whole', async () => {
    const rules = lifecycleRules('s3', { retentionDays: 3, stateGraceDays: 2 });
    let deletions = 0;
    let expiries = 0;
    let checks = 0;
    for (let seed = 1; seed <= 1000; seed++) {
      const random = seededRandom(seed);
      let now = Date.parse('2026-01-01T00:00:00Z');
      const clock = () => now;
      const driver = createMemoryDriver({ now: clock });
      const user = createStateStore({
        driver,
        now: clock,
        retentionDays: 3,
        keepAliveMs: HOUR,
        stateGraceDays: 2,
        listHeadBytes: 300,
        listSealBytes: 256,
        listLogBytes: 1024,
      }).forUser('u');
      const model = new Map<string, { values: Map<string, number>; list: unknown[] }>();
      const fresh = () => ({ values: new Map<string, number>(), list: [] as unknown[] });
      const sessions = ['s1', 's2'];
      for (let step = 0; step < 14; step++) {
        // Time passes: mostly hours, sometimes days (long enough to expire a session).
        now += random() < 0.75 ? Math.floor(random() * 30 * HOUR) : Math.floor(random() * 7 * DAY);
        deletions += await lifecycle(driver, rules, now, random, 0.5);
        const s = sessions[Math.floor(random() * sessions.length)] as string;
        const exists = await user.exists(s);
        const m = exists ? (model.get(s) ?? fresh()) : fresh();
        if (!exists && model.has(s)) expiries++;
        // Whatever the store says, it must say it about the whole session.
        for (const key of ['a', 'b']) expect(await user.get(s, key)).toBe(m.values.get(key));
        expect((await user.getList(s, 'l')).items).toEqual(m.list);
        checks++;
        const op = random();
        if (op < 0.35) {
          const key = random() < 0.5 ? 'a' : 'b';
          const value = Math.floor(random() * 1000);
          await user.save(s, key, value);
          m.values.set(key, value);
        } else if (op < 0.75) {
          m.list = [...m.list, { step, seed }];
          await user.saveList(s, 'l', m.list);
        } else if (op < 0.85) {
          m.list = [{ summary: step }];
          await user.saveList(s, 'l', m.list);
        }
        if (op < 0.85) model.set(s, m);
      }
      // Idle past retention + grace: everything but the archives is gone, whole.
      now += 6 * DAY;
      deletions += await lifecycle(driver, rules, now, random, 1);
      for (const s of sessions) {
        expect(await user.exists(s)).toBe(false);
        expect(await user.get(s, 'a')).toBeUndefined();
      }
      const left = (await driver.list({})).objects.map((o) => o.key);
      expect(left.filter((k) => !k.includes('.list~a~'))).toEqual([]);
    }
    // The simulation exercised what it claims to.
    expect(deletions).toBeGreaterThan(1000);
    expect(expiries).toBeGreaterThan(50);
    expect(checks).toBe(14_000);
  });

  it('keep-alive keeps an active session whole past its objects nominal age', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const clock = () => now;
    const driver = createMemoryDriver({ now: clock });
    const rules = lifecycleRules('s3', { retentionDays: 3, stateGraceDays: 2 });
    // Small list caps: the long list is a head and several sealed segments, all written once.
    const user = createStateStore({
      driver,
      now: clock,
      retentionDays: 3,
      stateGraceDays: 2,
      listHeadBytes: 512,
      listSealBytes: 256,
    }).forUser('u');
    const long = Array.from({ length: 600 }, (_, i) => ({ i, text: 'x'.repeat(40) }));
    await user.save('s', 'written-once', 'still here');
    await user.saveList('s', 'l', [1]);
    await user.saveList('s', 'long', long);
    expect((await driver.list({ prefix: 'agent-state/u/s/long.list~g~' })).objects.length).toBeGreaterThan(1);
    for (let day = 1; day <= 20; day++) {
      now += DAY;
      await user.save('s', 'tick', day); // activity, without touching the old objects
      await lifecycle(driver, rules, now, Math.random, 1);
    }
    expect(await user.get('s', 'written-once')).toBe('still here');
    expect((await user.getList('s', 'l')).items).toEqual([1]);
    expect((await user.getList('s', 'long')).items).toEqual(long);
    expect((await user.getList('s', 'long', { offset: 77, limit: 3 })).items).toEqual(long.slice(77, 80));
  });

  it('keep-alive refreshes state only: workspaces and pending uploads keep their tag and age', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const clock = () => now;
    const driver = createMemoryDriver({ now: clock });
    const user = createStateStore({ driver, now: clock, retentionDays: 3, stateGraceDays: 2 }).forUser('u');
    await user.save('s', 'plan', 1);
    const blobs = ['agent-state/u/s/~ws~inc/repo.tar', 'agent-state/u/s/~vu/big~0123'];
    for (const name of blobs) await driver.put(name, 'bytes', { tags: { kind: 'workspace' } });
    const written = now;
    for (let day = 1; day <= 4; day++) {
      now += DAY;
      await user.save('s', 'tick', day);
    }
    for (const name of blobs) {
      const info = await driver.head(name, { tags: true });
      expect(info.tags).toEqual({ kind: 'workspace' });
      expect(info.lastModified.getTime()).toBe(written);
    }
    // The state object was refreshed meanwhile.
    expect((await driver.head('agent-state/u/s/plan.json')).lastModified.getTime()).toBeGreaterThan(written);
  });
});
