/**
 * The HTTP contract suites (test/http/*-suite.ts: routes, turns, the write path, revisions, keys
 * and truncate) on the MySQL engine — a MariaDB the test starts, and a real MySQL when MYSQL_URL is
 * set — with the store and the lock on the engine (STORE_BACKEND=mysql, LOCK_BACKEND=mysql: one
 * pool, fencing inside the store's transactions), through each adapter (local node:http, API
 * Gateway v2 events, FC 3 events). The file's APIs share one set of tables per server, each case
 * its own sessions.
 */
import { afterAll, beforeAll } from 'vitest';
import type { MysqlConnection } from '../../lib/engines/mysql/connection.js';
import { createMysqlLock } from '../../lib/engines/mysql/lock.js';
import { createMysqlStateStore, MYSQL_CAPABILITIES } from '../../lib/engines/mysql/store.js';
import { type ContractBackend, contractHarnesses } from '../http/harness.js';
import { keysTruncateSuite } from '../http/keys-truncate-suite.js';
import { revisionsSuite } from '../http/revisions-suite.js';
import { routesSuite } from '../http/routes-suite.js';
import { turnsSuite } from '../http/turns-suite.js';
import { writePathSuite } from '../http/write-path-suite.js';
import { type MysqlServer, type MysqlTarget, mysqlTargets, openTables } from './mysql-target.js';

const targets = mysqlTargets();
/** Per target: its server, and the tables (bootstrapped) every API of the file shares. */
const opened = new Map<MysqlTarget, { server: MysqlServer; connection: MysqlConnection }>();
beforeAll(async () => {
  for (const target of targets) {
    const server = await target.open();
    const { conn, admin } = await openTables(server.url);
    await admin.end();
    opened.set(target, { server, connection: conn });
  }
});
afterAll(async () => {
  for (const { server, connection } of opened.values()) {
    await connection.close();
    await server.stop();
  }
});

/** The engine as lib/engines/mysql/index.ts wires it: one pool, the lock the store's authority. */
const mysqlBackend = (target: MysqlTarget): ContractBackend => ({
  name: `mysql (${target.name})`,
  capabilities: MYSQL_CAPABILITIES,
  deleteFaults: false,
  make: async (options = {}) => {
    const connection = opened.get(target)?.connection;
    if (!connection) throw new Error(`${target.name} is not open`);
    const lock = createMysqlLock({ connection, ...(options.now ? { now: options.now } : {}) });
    return {
      parts: {
        engine: (metrics) => ({
          store: createMysqlStateStore({ connection, metrics, authority: lock }),
          lock,
        }),
      },
      lock,
      close: async () => {},
    };
  },
});

for (const target of targets)
  for (const h of contractHarnesses(mysqlBackend(target))) {
    routesSuite(h);
    turnsSuite(h);
    writePathSuite(h);
    revisionsSuite(h);
    keysTruncateSuite(h);
  }
