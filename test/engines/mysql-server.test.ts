/**
 * The app on STORE_BACKEND=mysql and LOCK_BACKEND=mysql (lib/http/app.ts), as the local server
 * builds it, on a MariaDB the test starts: the configuration's checks, a missing schema named by
 * the readiness check and its log line, `npm run bootstrap`'s step creating it (then finding it
 * there), and the typed client saving, appending and reading back through the routes, a turn
 * fenced by the MySQL lease lock.
 */
import type { AddressInfo } from 'node:net';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHttpClient } from '../../lib/client/index.js';
import { ConfigError, loadConfig } from '../../lib/config.js';
import { FencedError } from '../../lib/contract/errors.js';
import { EMPTY_HASH } from '../../lib/contract/hash.js';
import { connectMysql, type MysqlConnection, tablesOf } from '../../lib/engines/mysql/index.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { backendsFrom } from '../../lib/http/backends/local.js';
import { bootstrap } from '../../lib/lifecycle/bootstrap.js';
import { hsToken, SECRET } from '../http/harness.js';
import { type MariaDb, startMariaDb } from '../servers/mariadb.js';

const TABLES = Object.values(tablesOf()).map((quoted) => quoted.slice(1, -1));

describe('the local server on MySQL (store and lock)', () => {
  let db: MariaDb;
  let conn: MysqlConnection;
  let stop: () => Promise<void>;
  let baseUrl = '';
  const env = () => ({
    STORE_BACKEND: 'mysql',
    LOCK_BACKEND: 'mysql',
    MYSQL_URL: db.url,
    AUTH_JWT_SECRET: SECRET,
    LOG_LEVEL: 'SILENT',
  });
  const client = (user: string) => createHttpClient({ baseUrl, token: () => hsToken({ sub: user }) });
  const serve = async (app: ReturnType<typeof createApp>) => {
    const server = createNodeServer(app.handle, 1024 * 1024);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  };

  beforeAll(async () => {
    db = await startMariaDb();
    conn = connectMysql({ url: db.url });
    stop = async () => {
      await conn.close();
      await db.stop();
    };
  });
  afterAll(() => stop());

  it('needs MYSQL_URL, a mysql:// URL naming a database, for either backend', () => {
    for (const [variable, value] of [
      ['STORE_BACKEND', 'mysql'],
      ['LOCK_BACKEND', 'mysql'],
    ] as const) {
      const refused = (() => {
        try {
          return loadConfig({ ALLOW_ANONYMOUS: 'true', [variable]: value });
        } catch (error) {
          return error;
        }
      })();
      expect(refused).toBeInstanceOf(ConfigError);
      expect((refused as ConfigError).problems).toEqual([
        'MYSQL_URL: required when STORE_BACKEND or LOCK_BACKEND is mysql',
      ]);
    }
    for (const bad of ['postgres://u:p@h:1/db', 'mysql://u:p@h:1/', 'mysql://u:p@h:1/bad-db'])
      expect(
        () => loadConfig({ ALLOW_ANONYMOUS: 'true', STORE_BACKEND: 'mysql', MYSQL_URL: bad }),
        bad,
      ).toThrow(/MYSQL_URL: must be a mysql:/);
    const config = loadConfig(env());
    // No driver and no lock of lib/lock/: the engine makes both.
    expect(Object.keys(backendsFrom(config))).toEqual(['engine']);
  });

  it('without the schema: GET /v1/ready is 503 backend-misconfigured (store), one ERROR line naming the table', async () => {
    const logger = new Logger({ logLevel: 'SILENT' });
    const errors = vi.spyOn(logger, 'error');
    const app = createApp(loadConfig(env()), { ...backendsFrom(loadConfig(env())), logger });
    expect(app.driver).toBeUndefined();
    const { server, url } = await serve(app);
    try {
      const answer = await fetch(`${url}/v1/ready`);
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBeNull();
      expect(await answer.json()).toMatchObject({ code: 'backend-misconfigured', dependency: 'store' });
      expect(errors).toHaveBeenCalledTimes(1);
      const line = String(errors.mock.calls[0]?.[0]);
      expect(line).toMatch(/agent_state_\w+' doesn't exist/);
      expect(line).toContain('npm run bootstrap');
      expect(line).toContain("check MYSQL_URL's database");
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('bootstrap creates every table, then finds them there', async () => {
    const config = loadConfig(env());
    const first = await bootstrap({ config, clients: { mysql: conn } });
    expect(first.find((s) => s.step === 'mysql schema')).toEqual({
      step: 'mysql schema',
      status: 'created',
      detail: TABLES.join(', '),
    });
    const second = await bootstrap({ config, clients: { mysql: conn } });
    expect(second.find((s) => s.step === 'mysql schema')).toEqual({
      step: 'mysql schema',
      status: 'already there',
    });
    expect(second.find((s) => s.step === 'lock table')).toMatchObject({ status: 'skipped' });
  });

  describe('served, with the schema', () => {
    let close: () => Promise<void>;
    beforeAll(async () => {
      await conn.bootstrap();
      const config = loadConfig(env());
      const app = createApp(config, backendsFrom(config));
      await app.store.checkReady();
      const { server, url } = await serve(app);
      baseUrl = url;
      close = () => new Promise((r) => server.close(() => r()));
    });
    afterAll(() => close());

    it('is ready, and answers its capabilities: atomic commits, no presigned transfer', async () => {
      expect((await fetch(`${baseUrl}/v1/ready`)).status).toBe(200);
      const caps = (await (await fetch(`${baseUrl}/v1/capabilities`)).json()) as Record<string, unknown>;
      expect(caps).toMatchObject({
        atomicCommits: true,
        presignedTransfer: false,
        conditionalOverwrite: true,
      });
    });

    it('saves, appends and reads back through the routes, rows in the tables', async () => {
      const alice = client('alice');
      const { version } = await alice.save('s1', 'plan', { step: 1 });
      expect(await alice.getVersioned('s1', 'plan')).toEqual({ value: { step: 1 }, version, revision: 1 });
      const appended = await alice.appendList('s1', 'm', [{ n: 1 }, { n: 2 }], {
        expectedCount: 0,
        expectedHash: EMPTY_HASH,
      });
      expect(appended.count).toBe(2);
      expect((await alice.getList('s1', 'm', { last: 50 })).items).toEqual([{ n: 1 }, { n: 2 }]);
      expect((await alice.listSessionIds()).sessions.map((s) => s.sessionId)).toEqual(['s1']);
      expect((await client('bob').listSessionIds()).sessions).toEqual([]);
      // The rows a person can query, the JSON as it was sent.
      const rows = await db.root(
        `SELECT CONVERT(list_key USING utf8mb4), position, body FROM ${db.database}.agent_state_list_items ORDER BY position`,
      );
      expect(rows.trim().split('\n')).toEqual(['m\t0\t{"n":1}', 'm\t1\t{"n":2}']);
    });

    it('a turn with the MySQL lock: the commit fences a stale lease out, the live one commits', async () => {
      const alice = client('alice');
      const first = await alice.acquireLock('turn', { leaseMs: 1000 });
      await new Promise((r) => setTimeout(r, 1100));
      const second = await alice.acquireLock('turn', { leaseMs: 60_000 });
      expect(second.token).toBeGreaterThan(first.token);
      const stale = await alice
        .commit('turn', { commitId: 'c-stale', token: first.token, values: [{ key: 'k', value: 'old' }] })
        .catch((e: unknown) => e);
      expect(stale).toBeInstanceOf(FencedError);
      const done = await alice.commit('turn', {
        commitId: 'c-live',
        token: second.token,
        values: [{ key: 'k', value: 'new' }],
      });
      expect(done.values[0]?.etag).toBeTruthy();
      expect(await alice.get('turn', 'k')).toBe('new');
    });
  });
});
