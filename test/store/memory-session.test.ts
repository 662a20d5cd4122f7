/**
 * The memory session never expires (lib/contract/ids.ts, `MEMORY_SESSION`): its marker and state
 * objects carry `kind=memory`, which none of the rendered lifecycle rules (S3 and OSS) selects,
 * while an ordinary session's objects are all selected by an expiring rule; the store never counts
 * its marker over-age, so a year without activity leaves it whole; and it is never kept alive (no
 * marker rewrite, no refresh copies). Both list formats, on the memory driver with a fake clock.
 */
import { describe, expect, it } from 'vitest';
import { isMemorySession, MEMORY_KIND, MEMORY_SESSION } from '../../lib/contract/ids.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { lifecycleRules, renderOss, renderS3 } from '../../lib/lifecycle/index.js';
import { inMemorySession, layoutFor } from '../../lib/store/layout.js';
import { tagsFor } from '../../lib/store/memory-session.js';
import { createStateStore, type ListFormatName } from '../../lib/store/store.js';
import { counting } from './wrappers.js';

const DAY = 24 * 3_600_000;
const PREFIX = 'agent-state/';

/** Every object under the prefix with its tags. */
async function objects(driver: ObjectStoreDriver) {
  const all: Array<{ key: string; tags: Readonly<Record<string, string>> }> = [];
  let cursor: string | undefined;
  do {
    const page = await driver.list({ prefix: PREFIX, cursor });
    for (const o of page.objects)
      all.push({ key: o.key, tags: (await driver.head(o.key, { tags: true })).tags ?? {} });
    cursor = page.nextCursor;
  } while (cursor);
  return all;
}

/** The rendered rules that would expire or move an object: S3's (prefix and tags) and OSS's. */
function expiringRules(key: string, tags: Readonly<Record<string, string>>): string[] {
  const s3 = renderS3(lifecycleRules('s3')).Rules.filter((r) => {
    const filter = r.Filter as {
      Prefix?: string;
      And?: { Prefix: string; Tags: { Key: string; Value: string }[] };
    };
    const prefix = filter.And?.Prefix ?? filter.Prefix ?? '';
    const wanted = filter.And?.Tags ?? [];
    const acts = 'Expiration' in r || 'Transitions' in r;
    return acts && key.startsWith(prefix) && wanted.every((t) => tags[t.Key] === t.Value);
  });
  const oss = renderOss(lifecycleRules('oss')).filter((r) => {
    const wanted = (r as { tag?: { key: string; value: string }[] }).tag ?? [];
    const acts = 'expiration' in r || 'transition' in r;
    return acts && key.startsWith(r.prefix) && wanted.every((t) => tags[t.key] === t.value);
  });
  return [...s3.map((r) => `s3:${r.ID}`), ...oss.map((r) => `oss:${r.id}`)];
}

describe('the memory session’s names and tags', () => {
  it('is one reserved id, told apart by name for every user (its folder, marker and tombstone)', () => {
    expect(isMemorySession(MEMORY_SESSION)).toBe(true);
    expect(isMemorySession('memory')).toBe(false);
    for (const user of ['u', '~memory', null]) {
      const layout = layoutFor(PREFIX, user);
      for (const name of [
        layout.marker(MEMORY_SESSION),
        layout.tombstone(MEMORY_SESSION),
        layout.value(MEMORY_SESSION, 'k'),
        layout.listHash(MEMORY_SESSION, 'k'),
        layout.commitRecord(MEMORY_SESSION, 'c1'),
      ])
        expect(inMemorySession(PREFIX, name)).toBe(true);
      for (const session of ['s', 'memory', '~memory2', '~sessions'])
        for (const name of [layout.marker(session), layout.value(session, MEMORY_SESSION)])
          expect(inMemorySession(PREFIX, name)).toBe(false);
    }
    expect(inMemorySession('other/', layoutFor(PREFIX, 'u').value(MEMORY_SESSION, 'k'))).toBe(false);
  });

  it('retags only markers and state: archives and workspaces keep theirs', () => {
    const name = layoutFor(PREFIX, 'u').value(MEMORY_SESSION, 'k');
    expect(tagsFor(PREFIX, name, { kind: 'state' })).toEqual({ kind: MEMORY_KIND });
    expect(tagsFor(PREFIX, name, { kind: 'marker' })).toEqual({ kind: MEMORY_KIND });
    expect(tagsFor(PREFIX, name, { kind: 'archive' })).toEqual({ kind: 'archive' });
    expect(tagsFor(PREFIX, name, { kind: 'workspace' })).toEqual({ kind: 'workspace' });
    expect(tagsFor(PREFIX, layoutFor(PREFIX, 'u').value('s', 'k'), { kind: 'state' })).toEqual({
      kind: 'state',
    });
  });
});

describe.each(['cas', 'append'] as ListFormatName[])(
  'the memory session never expires (%s lists)',
  (listFormat) => {
    it('its objects are tagged kind=memory, which no rendered rule selects; a year idle leaves it whole', async () => {
      let now = Date.parse('2026-01-01T00:00:00Z');
      const clock = () => now;
      const driver = createMemoryDriver({ now: clock });
      const store = createStateStore({ driver, now: clock, listFormat, listLogBytes: 1024 });
      const user = store.forUser('u');
      for (const s of [MEMORY_SESSION, 's']) {
        await user.save(s, 'm a  k', { text: 'remember this' });
        await user.saveList(s, 'l', [1, 2]);
        await user.appendList(s, 'l', [3], { expectedCount: 2 });
        await user.commit(s, { commitId: `c-${s.length}`, values: [{ key: 'c', value: 1 }] });
      }
      const all = await objects(driver);
      const memory = all.filter((o) => inMemorySession(PREFIX, o.key));
      const ordinary = all.filter((o) => !inMemorySession(PREFIX, o.key));
      expect(memory.length).toBeGreaterThanOrEqual(4);
      expect(ordinary.length).toBe(memory.length);
      for (const o of memory) {
        expect(o.tags.kind, o.key).toBe(MEMORY_KIND);
        expect(expiringRules(o.key, o.tags), o.key).toEqual([]);
      }
      for (const o of ordinary) {
        expect(['state', 'marker']).toContain(o.tags.kind);
        expect(expiringRules(o.key, o.tags).length, o.key).toBe(2);
      }

      // A year without activity: the ordinary session is gone, the memory session reads whole.
      now += 365 * DAY;
      expect(await user.exists('s')).toBe(false);
      expect(await user.get('s', 'm a  k')).toBeUndefined();
      expect(await user.exists(MEMORY_SESSION)).toBe(true);
      expect(await user.get(MEMORY_SESSION, 'm a  k')).toEqual({ text: 'remember this' });
      expect((await user.getList(MEMORY_SESSION, 'l')).items).toEqual([1, 2, 3]);
      expect((await user.listKeys(MEMORY_SESSION)).values.map((v) => v.key)).toEqual(['c', 'm a  k']);
      expect((await user.listSessionIds()).sessions.map((s) => s.sessionId)).toEqual([MEMORY_SESSION]);
      // A write then finds the same incarnation: nothing of it is purged.
      await user.save(MEMORY_SESSION, 'later', 1);
      expect(await user.get(MEMORY_SESSION, 'm a  k')).toEqual({ text: 'remember this' });
    });

    it('is never kept alive: a write days later rewrites no marker and copies nothing', async () => {
      let now = Date.parse('2026-01-01T00:00:00Z');
      const clock = () => now;
      const driver = counting(createMemoryDriver({ now: clock }));
      const user = createStateStore({ driver, now: clock, listFormat }).forUser('u');
      const layout = layoutFor(PREFIX, 'u');
      for (const s of [MEMORY_SESSION, 's']) await user.save(s, 'old', 1);
      now += 3 * DAY;
      for (const s of [MEMORY_SESSION, 's']) {
        driver.reset();
        await user.save(s, 'new', 2);
        const marker = driver.puts.filter((name) => name === layout.marker(s)).length;
        expect([marker, driver.calls.copy > 0 || driver.puts.includes(layout.value(s, 'old'))]).toEqual(
          s === MEMORY_SESSION ? [0, false] : [1, true],
        );
      }
    });
  },
);
