/** The lock conformance suite on the MySQL lease lock (test/lock/lock-suite.ts). */
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { LockKey } from '../../lib/contract/lock.js';
import type { MysqlConnection } from '../../lib/engines/mysql/connection.js';
import { createMysqlLock } from '../../lib/engines/mysql/lock.js';
import { describeLockSuite } from '../lock/lock-suite.js';
import { mysqlTargets, openTables } from './mysql-target.js';

const targets = mysqlTargets();
if (targets.length === 0)
  describe('MySQL lease lock', () => it.skip('needs MariaDB (mariadb-server) or MYSQL_URL'));

for (const target of targets) {
  describe(`MySQL lease lock on ${target.name}`, () => {
    let server: { url: string; stop(): Promise<void> };
    let conn: MysqlConnection;
    let closeAdmin: () => Promise<void>;
    let forgetRow: (key: LockKey) => Promise<void>;
    beforeAll(async () => {
      server = await target.open();
      const opened = await openTables(server.url);
      conn = opened.conn;
      closeAdmin = () => opened.admin.end();
      forgetRow = async (key) => {
        await opened.admin.query(`DELETE FROM ${conn.tables.leases} WHERE user_id = ? AND session_id = ?`, [
          Buffer.from(key.userId ?? ''),
          Buffer.from(key.sessionId),
        ]);
      };
    });
    afterAll(async () => {
      await closeAdmin?.();
      await conn?.close();
      await server?.stop();
    });
    describeLockSuite(`mysql (${target.name})`, async () => {
      const clock = { t: Date.now() };
      const make = () => createMysqlLock({ connection: conn, now: () => clock.t });
      return {
        lock: make(),
        clock,
        forget: async (key) => {
          await forgetRow(key);
          return make();
        },
      };
    });
  });
}
