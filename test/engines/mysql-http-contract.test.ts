/**
 * The HTTP contract suites (test/http/*-suite.ts: routes, turns, the write path, revisions, keys
 * and truncate) on the MySQL engine — a MariaDB the test starts, and a real MySQL when MYSQL_URL is
 * set — with the store and the lock on the engine (STORE_BACKEND=mysql, LOCK_BACKEND=mysql: one
 * pool, fencing inside the store's transactions), through each adapter (local node:http, API
 * Gateway v2 events, FC 3 events). Each API gets tables of its own on the file's server.
 */
import { afterAll, beforeAll } from 'vitest';
import { createMysqlLock } from '../../lib/engines/mysql/lock.js';
import { createMysqlStateStore, MYSQL_CAPABILITIES } from '../../lib/engines/mysql/store.js';
import { type ContractBackend, contractHarnesses } from '../http/harness.js';
import { keysTruncateSuite } from '../http/keys-truncate-suite.js';
import { revisionsSuite } from '../http/revisions-suite.js';
import { routesSuite } from '../http/routes-suite.js';
import { turnsSuite } from '../http/turns-suite.js';
import { writePathSuite } from '../http/write-path-suite.js';
import { type MysqlServer, type MysqlTarget, mysqlTargets, openTables } from './mysql-target.js';

const servers = new Map<MysqlTarget, MysqlServer>();
const targets = mysqlTargets();
beforeAll(async () => {
  for (const target of targets) servers.set(target, await target.open());
});
afterAll(async () => {
  for (const server of servers.values()) await server.stop();
});

/** The engine as lib/engines/mysql/index.ts wires it (the lock the store's authority), on fresh tables. */
const mysqlBackend = (target: MysqlTarget): ContractBackend => ({
  name: `mysql (${target.name})`,
  capabilities: MYSQL_CAPABILITIES,
  deleteFaults: false,
  make: async (options = {}) => {
    const server = servers.get(target);
    if (!server) throw new Error(`${target.name} is not open`);
    const { conn: connection, admin } = await openTables(server.url);
    await admin.end();
    const lock = createMysqlLock({ connection, ...(options.now ? { now: options.now } : {}) });
    return {
      parts: {
        engine: (metrics) => ({
          store: createMysqlStateStore({ connection, metrics, authority: lock }),
          lock,
        }),
      },
      lock,
      close: () => connection.close(),
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
