/**
 * The store suite (what is not about object storage) on the MySQL engine, as a library and through
 * the HTTP adapter: a MariaDB the test starts (and a real MySQL when MYSQL_URL is set), fresh
 * tables each, the "nothing written" checks counted by the server's own InnoDB row counters.
 */
import { createMysqlStateStore } from '../../lib/engines/mysql/store.js';
import { describeStoreSuite } from '../store/store-suite.js';
import { mysqlTargets, openTables, rowChanges } from './mysql-target.js';

for (const target of mysqlTargets()) {
  for (const via of ['library', 'http'] as const) {
    describeStoreSuite(
      {
        name: `mysql (${target.name})`,
        makeStore: async ({ metrics }) => {
          const server = await target.open();
          const { conn, admin } = await openTables(server.url);
          return {
            store: createMysqlStateStore({ connection: conn, metrics }),
            changes: () => rowChanges(admin),
            close: async () => {
              await admin.end();
              await conn.close();
              await server.stop();
            },
          };
        },
      },
      via,
    );
  }
}
