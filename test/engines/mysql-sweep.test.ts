/**
 * The scheduled sweep (lib/lifecycle/sweep.ts) on a MariaDB the test starts: expired sessions
 * deleted in bounded batches and live ones kept, a second run finding nothing, the time budget
 * stopping it between batches; the Lambda and Function Compute sweep handlers invoked in-process
 * on the same database; the built local server's timer (SWEEP_INTERVAL_MINUTES) sweeping by itself.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectMysql, createMysqlStateStore, type MysqlConnection } from '../../lib/engines/mysql/index.js';
import { runSweep, SWEEP_BATCH, type SweepLogger } from '../../lib/lifecycle/sweep.js';
import { DAY_MS } from '../../lib/util/units.js';
import { type MariaDb, startMariaDb } from '../servers/mariadb.js';

describe('the sweep on MySQL', () => {
  let db: MariaDb;
  let conn: MysqlConnection;

  beforeAll(async () => {
    db = await startMariaDb();
    conn = connectMysql({ url: db.url });
    await conn.bootstrap();
  });
  afterAll(async () => {
    await conn?.close();
    await db?.stop();
  });
  beforeEach(async () => {
    await createMysqlStateStore({ connection: conn, allowTruncate: true }).truncateAllSessions?.();
  });

  /** Sessions of alice written `daysAgo` days ago (the retention is 30 days), one value each. */
  const seed = async (prefix: string, count: number, daysAgo: number) => {
    const user = createMysqlStateStore({
      connection: conn,
      now: () => Date.now() - daysAgo * DAY_MS,
    }).forUser('alice');
    for (let i = 0; i < count; i += 1) await user.save(`${prefix}-${i}`, 'plan', { i });
  };
  const sessionRows = async () =>
    Number(
      (await db.root(`SELECT COUNT(*) FROM ${db.database}.${conn.tables.sessions.slice(1, -1)}`)).trim(),
    );
  const logged: Array<[string, Record<string, unknown>]> = [];
  const logger: SweepLogger = { info: (message, extra) => logged.push([message, extra]) };

  it('deletes expired sessions in bounded batches, keeps live ones, and finds nothing the second time', async () => {
    await seed('old', 25, 40);
    await seed('live', 3, 1);
    const store = createMysqlStateStore({ connection: conn });
    logged.length = 0;
    const first = await runSweep({ store, logger }, { batch: 10 });
    expect(first).toMatchObject({ expiredSessions: 25, batches: 3, complete: true });
    expect(first.packs).toBeUndefined();
    expect(logged).toEqual([['sweep', expect.objectContaining({ expiredSessions: 25, batches: 3 })]]);
    expect(await sessionRows()).toBe(3);
    const alice = store.forUser('alice');
    for (let i = 0; i < 3; i += 1) expect(await alice.get(`live-${i}`, 'plan')).toEqual({ i });
    expect(await alice.exists('old-0')).toBe(false);
    const second = await runSweep({ store, logger }, { batch: 10 });
    expect(second).toMatchObject({ expiredSessions: 0, batches: 1, complete: true });
    expect(await sessionRows()).toBe(3);
  });

  it('starts no batch once the budget is spent, and the next run goes on', async () => {
    await seed('old', 12, 40);
    const store = createMysqlStateStore({ connection: conn });
    const cut = await runSweep({ store, logger }, { batch: 5, budgetMs: 0 });
    expect(cut).toMatchObject({ expiredSessions: 5, batches: 1, complete: false });
    expect(await sessionRows()).toBe(7);
    const rest = await runSweep({ store, logger }, { batch: 5 });
    expect(rest).toMatchObject({ expiredSessions: 7, batches: 2, complete: true });
    expect(await sessionRows()).toBe(0);
  });

  describe('the sweep functions, invoked in-process', () => {
    const env = () => ({
      STORE_BACKEND: 'mysql',
      LOCK_BACKEND: 'mysql',
      MYSQL_URL: db.url,
      LOG_LEVEL: 'SILENT',
    });
    const withEnv = async <T>(vars: Record<string, string>, load: () => Promise<T>): Promise<T> => {
      const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
      Object.assign(process.env, vars);
      try {
        return await load();
      } finally {
        for (const [k, v] of Object.entries(saved))
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
      }
    };

    it('the Lambda handler (functions/aws/sweep.ts) sweeps the configured engine', async () => {
      await seed('old', SWEEP_BATCH + 2, 40);
      await seed('live', 1, 0);
      const { handler } = await withEnv(
        { ...env(), AWS_LAMBDA_FUNCTION_NAME: 'sweep' },
        () => import('../../functions/aws/sweep.js'),
      );
      expect(await handler()).toMatchObject({ expiredSessions: SWEEP_BATCH + 2, batches: 2, complete: true });
      expect(await sessionRows()).toBe(1);
      expect(await handler()).toMatchObject({ expiredSessions: 0 });
    });

    it('the Function Compute handler (functions/aliyun/sweep.ts) sweeps the configured engine', async () => {
      await seed('old', 4, 40);
      const { handler } = await withEnv(
        { ...env(), FC_FUNCTION_NAME: 'sweep', AUTH_JWKS_URL: 'https://127.0.0.1:9/jwks' },
        () => import('../../functions/aliyun/sweep.js'),
      );
      expect(await handler()).toMatchObject({ expiredSessions: 4, batches: 1, complete: true });
      expect(await sessionRows()).toBe(0);
    });
  });

  it('the built sweep bundles (dist/aws/sweep.mjs, dist/aliyun/sweep.mjs, its chunks beside it) load mysql2 and sweep', async () => {
    await promisify(execFile)('node', ['scripts/build.mjs', 'aws/sweep', 'aliyun/sweep']);
    for (const [bundle, platform] of [
      ['dist/aws/sweep.mjs', { AWS_LAMBDA_FUNCTION_NAME: 'sweep' }],
      ['dist/aliyun/sweep.mjs', { FC_FUNCTION_NAME: 'sweep', AUTH_JWKS_URL: 'https://127.0.0.1:9/jwks' }],
    ] as const) {
      await seed('old', 2, 40);
      const script = `const m = await import(${JSON.stringify(path.resolve(bundle))}); const r = await m.handler(); process.stdout.write(JSON.stringify({ report: r }) + '\\n', () => process.exit(0));`;
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
        env: {
          ...process.env,
          NODE_OPTIONS: '',
          STORE_BACKEND: 'mysql',
          LOCK_BACKEND: 'mysql',
          MYSQL_URL: db.url,
          LOG_LEVEL: 'SILENT',
          ...platform,
        },
      });
      const line = stdout.split('\n').find((l) => l.startsWith('{"report"')) as string;
      expect(JSON.parse(line).report, bundle).toMatchObject({ expiredSessions: 2, complete: true });
      expect(await sessionRows(), bundle).toBe(0);
    }
  });

  it("the local server's timer runs the sweep every SWEEP_INTERVAL_MINUTES", async () => {
    await promisify(execFile)('node', ['scripts/build.mjs', 'local/server']);
    await seed('old', 3, 40);
    await seed('live', 2, 0);
    const dir = await mkdtemp(path.join(tmpdir(), 'sweep-server-'));
    const server = spawn('node', ['dist/local/server.mjs'], {
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        PORT: '0',
        DATA_DIR: dir,
        ALLOW_ANONYMOUS: 'true',
        STORE_BACKEND: 'mysql',
        LOCK_BACKEND: 'mysql',
        MYSQL_URL: db.url,
        // 60 ms.
        SWEEP_INTERVAL_MINUTES: '0.001',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    server.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    try {
      // The effect, not the time: the expired rows go, by the server's own sweep.
      for (let i = 0; i < 300 && (await sessionRows()) > 2; i += 1)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await sessionRows()).toBe(2);
      for (let i = 0; i < 100 && !/"expiredSessions":3/.test(out); i += 1)
        await new Promise((resolve) => setTimeout(resolve, 50));
      const line = out.split('\n').find((l) => l.includes('"expiredSessions":3')) as string;
      expect(JSON.parse(line)).toMatchObject({ level: 'INFO', message: 'sweep', expiredSessions: 3 });
    } finally {
      server.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
