/**
 * Expiry of the append list format on a fake clock: a list left idle for 90 days in a session that
 * stays active keeps every log and segment it needs younger than the lifecycle rules' reach (the
 * rules simulated here as lib/lifecycle renders them: markers at the retention, state at retention +
 * grace), and reads back whole. Without the keep-alive its logs would be 90 days old, past the
 * 32-day reach, and the simulated lifecycle would delete them.
 */
import { describe, expect, it } from 'vitest';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createStateStore } from '../../lib/store/store.js';

const DAY = 24 * 60 * 60 * 1000;
const HOUR = 60 * 60 * 1000;
const msg = (i: number) => ({
  role: i % 2 ? 'assistant' : 'user',
  n: i,
  content: `turn ${i} ${'z'.repeat(180)}`,
});
const msgs = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => msg(from + i));

describe('append format expiry on a fake clock', () => {
  it('a long-idle list of an active session keeps every log and segment younger than the lifecycle reach, and reads back', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const clock = () => now;
    const driver = createMemoryDriver({ now: clock });
    const retentionDays = 30;
    const graceDays = 2;
    const user = createStateStore({
      driver,
      now: clock,
      listFormat: 'append',
      listLogBytes: 2048,
      retentionDays,
      stateGraceDays: graceDays,
    }).forUser('u');
    const session = 'agent-state/u/s/';
    const marker = 'agent-state/u/~sessions/s';

    // Several logs (rollovers), then a rewrite (segments and a new generation), then more appends.
    let hash = EMPTY_HASH;
    for (let i = 0; i < 60; i++) {
      now += 60_000;
      ({ hash } = await user.appendList('s', 'l', [msg(i)], { expectedCount: i, expectedHash: hash }));
    }
    const expected: unknown[] = msgs(10, 60);
    expect((await user.saveList('s', 'l', expected)).action).toBe('rewritten');
    hash = chainHash(EMPTY_HASH, expected);
    for (let i = 60; i < 90; i++) {
      now += 60_000;
      ({ hash } = await user.appendList('s', 'l', [msg(i)], {
        expectedCount: expected.length,
        expectedHash: hash,
      }));
      expected.push(msg(i));
    }
    const logsAtStart = (await driver.list({ prefix: `${session}l.list~l~` })).objects.map((o) => o.key);
    expect(logsAtStart.length).toBeGreaterThan(4);

    // 90 days: the list is never touched; another key of the session is written every 6 hours.
    let expiredByLifecycle = 0;
    for (let t = 0; t < 90 * DAY; t += 6 * HOUR) {
      now += 6 * HOUR;
      await user.save('s', 'state', { t });
      // The lifecycle rules: markers go at the retention, state objects at retention + grace.
      const markerAge = now - (await driver.head(marker)).lastModified.getTime();
      for (const object of (await driver.list({ prefix: 'agent-state/u/' })).objects) {
        const age = now - object.lastModified.getTime();
        const isMarker = object.key === marker;
        const isState = object.key.startsWith(session) && !object.key.includes('.list~a~');
        if ((isMarker && age > retentionDays * DAY) || (isState && age > (retentionDays + graceDays) * DAY)) {
          await driver.delete(object.key);
          expiredByLifecycle++;
        }
        // No state object is ever more than the grace older than its marker: never half expired.
        if (isState) expect(age).toBeLessThanOrEqual(markerAge + graceDays * DAY);
      }
    }
    expect(expiredByLifecycle).toBe(0);

    // The list reads back whole, by page and by last.
    const whole = await user.getList('s', 'l');
    expect(whole.items).toEqual(expected);
    expect(whole.hash).toBe(chainHash(EMPTY_HASH, expected));
    const read: unknown[] = [];
    while (read.length < expected.length) {
      const page = await user.getList('s', 'l', { offset: read.length, limit: 7 });
      expect(page.items.length).toBeGreaterThan(0);
      read.push(...page.items);
    }
    expect(read).toEqual(expected);
    expect((await user.getList('s', 'l', { last: 3 })).items).toEqual(expected.slice(-3));

    // Sealed logs were stored again as normal objects (copied onto themselves since); the current
    // log stayed appendable (kept alive by empty records); the superseded generation is gone.
    const logs = (await driver.list({ prefix: `${session}l.list~l~` })).objects;
    const kinds = await Promise.all(logs.map(async (o) => (await driver.head(o.key)).appendable === true));
    expect(kinds.filter(Boolean)).toHaveLength(1);
    expect(logs.length).toBeLessThan(logsAtStart.length);
    // And the list goes on.
    const next = await user.appendList('s', 'l', [msg(90)], {
      expectedCount: expected.length,
      expectedHash: hash,
    });
    expect(next.count).toBe(expected.length + 1);
  });
});
