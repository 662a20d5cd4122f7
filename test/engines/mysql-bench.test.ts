/**
 * CI's smoke of `npm run bench`'s engine section on MariaDB (bench/engine-bench.ts at
 * `ENGINE_SMOKE`: a 200-item list): the issue's budgets for the MySQL engine hold, counted (commands
 * on the wire through the bench's proxy, statements and transactions as sent; bytes on the wire),
 * and the seed's pattern costs what its code sends. The p50 is printed, never asserted.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ENGINE_SMOKE,
  type EngineRowId,
  type EngineSection,
  engineTable,
  runMysqlBench,
} from '../../bench/engine-bench.js';
import { hasMariaDb } from '../servers/mariadb.js';

// Required, as the mysql tier's other files require it (MARIADB=off skips it where it is missing).
const run = hasMariaDb() || process.env.MARIADB !== 'off';

describe.runIf(run)('engine bench on MariaDB (smoke: a 200-item list)', () => {
  let section: EngineSection;
  const row = (id: EngineRowId) => {
    const found = section.rows.find((r) => r.id === id);
    if (!found) throw new Error(`no row ${id}`);
    return found;
  };
  beforeAll(async () => {
    section = await runMysqlBench(ENGINE_SMOKE);
    console.log(engineTable(section));
  });

  it('measures every row, states innodb_flush_log_at_trx_commit, and prints the table', () => {
    expect(section.server).toMatch(/^MariaDB 10\./);
    expect(section.flushLogAtTrxCommit).toMatch(/^[012]$/);
    expect(section.rows).toHaveLength(7);
    expect(row('append-p50').operation).toContain(
      `innodb_flush_log_at_trx_commit = ${section.flushLogAtTrxCommit}`,
    );
    expect(row('append-p50').ours.p50Ms).toBeGreaterThan(0);
  });

  it('holds the budgets: an append or a conditional save is 1 transaction in ≤ 3 round trips, last: 50 one SELECT, the turn ≤ 2 transactions + ≤ 2 lease statements', () => {
    for (const id of ['append-hash', 'append', 'value-save'] as const) {
      expect(row(id).ours.transactions, id).toBe(1);
      expect(row(id).ours.trips, id).toBeLessThanOrEqual(3);
    }
    expect(row('last50').ours).toMatchObject({ trips: 1, statements: 1, transactions: 0 });
    expect(row('turn').ours.transactions).toBeLessThanOrEqual(2);
    expect(row('turn').ours.leaseStatements).toBeLessThanOrEqual(2);
    for (const r of section.rows.filter((x) => x.id !== 'append-p50'))
      expect(r.holds, `${r.id}: ${r.ceiling}`).toBe(true);
  });

  it('bytes per append do not grow with the list', () => {
    const [short, long] = row('append-bytes').ours.bytesAt ?? [0, 0];
    expect(short).toBeGreaterThan(1000);
    expect(long).toBeLessThanOrEqual(short * 1.05 + 64);
  });

  it("the seed's pattern: 6 round trips an append (one INSERT per item), 18 a turn in 3 transactions with GET_LOCK; the whole list for last: 50", () => {
    expect(row('append-hash').reference).toMatchObject({ trips: 6, transactions: 1 });
    expect(row('turn').reference).toMatchObject({ trips: 18, transactions: 3, leaseStatements: 2 });
    expect(row('last50').ours.bytes).toBeLessThan(row('last50').reference.bytes / 2);
  });
});
