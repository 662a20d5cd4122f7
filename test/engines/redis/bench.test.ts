/**
 * CI's smoke of `npm run bench`'s engine section on Redis (bench/engine-bench.ts at `ENGINE_SMOKE`:
 * a 200-item list): the issue's budgets for the Redis engine hold, counted (commands sent, the
 * server's count of scripts agreeing; bytes on the wire), and the seed's pattern costs what its
 * code sends. The p50 is printed, never asserted.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ENGINE_SMOKE,
  type EngineRowId,
  type EngineSection,
  engineTable,
  runRedisBench,
} from '../../../bench/engine-bench.js';

describe('engine bench on Redis (smoke: a 200-item list)', () => {
  let section: EngineSection;
  const row = (id: EngineRowId) => {
    const found = section.rows.find((r) => r.id === id);
    if (!found) throw new Error(`no row ${id}`);
    return found;
  };
  beforeAll(async () => {
    section = await runRedisBench(ENGINE_SMOKE);
    console.log(engineTable(section));
  });

  it('measures every row and prints the table', () => {
    expect(section.server).toMatch(/^redis-server \d/);
    expect(section.rows.map((r) => r.id)).toEqual([
      'append-hash',
      'append',
      'last50',
      'value-save',
      'turn',
      'append-p50',
      'append-bytes',
    ]);
    expect(engineTable(section).split('\n')).toHaveLength(2 + 7);
    expect(row('append-p50').ours.p50Ms).toBeGreaterThan(0);
  });

  it('holds the budgets: append 1 round trip (≤ 2 without the hash), last: 50 one, a conditional save one, the turn 2', () => {
    expect(row('append-hash').ours.trips).toBe(1);
    expect(row('append').ours.trips).toBeLessThanOrEqual(2);
    expect(row('last50').ours.trips).toBe(1);
    expect(row('value-save').ours.trips).toBe(1);
    expect(row('turn').ours.trips).toBe(2);
    for (const r of section.rows.filter((x) => x.id !== 'append-p50'))
      expect(r.holds, `${r.id}: ${r.ceiling}`).toBe(true);
  });

  it('bytes per append do not grow with the list', () => {
    const [short, long] = row('append-bytes').ours.bytesAt ?? [0, 0];
    expect(short).toBeGreaterThan(1000);
    expect(long).toBeLessThanOrEqual(short * 1.05 + 64);
  });

  it("the seed's pattern: GET hash, LLEN, RPUSH, SET hash, SADD per append; 15 commands a turn; the whole list for last: 50", () => {
    expect(row('append-hash').reference.trips).toBe(5);
    expect(row('append-hash').reference.detail).toContain('LLEN');
    expect(row('turn').reference.trips).toBe(15);
    expect(row('value-save').reference.trips).toBe(3);
    expect(row('last50').ours.bytes).toBeLessThan(row('last50').reference.bytes / 2);
    expect(row('turn').ours.bytes).toBeLessThan(row('turn').reference.bytes / 2);
  });
});
