/**
 * A throwaway MariaDB server for tests (Debian's mariadb-server, no systemd): a data directory in a
 * temporary folder, a free port on 127.0.0.1, one database and one user; `stop` ends exactly the
 * server it started (by its PID) and removes the folder. The commands are those of
 * ../shared/LOCAL-SERVERS.md.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface MariaDb {
  /** `mysql://user:password@127.0.0.1:<port>/<database>`. */
  readonly url: string;
  readonly port: number;
  readonly database: string;
  /** Runs SQL as root over the socket (grants, KILL, inspection). */
  root(sql: string): Promise<string>;
  /** Kills the server with SIGKILL (a crash), then starts it again on the same data and port. */
  crashAndRestart(): Promise<void>;
  stop(): Promise<void>;
}

/** Whether this machine has the MariaDB server binaries. */
export const hasMariaDb = (): boolean =>
  existsSync('/usr/sbin/mariadbd') && existsSync('/usr/bin/mariadb-install-db');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts MariaDB (about 2 s); `database` and a user `agent` with all rights on it. */
export async function startMariaDb(database = 'agent_state'): Promise<MariaDb> {
  const dir = await mkdtemp(path.join(tmpdir(), 'mariadb-'));
  const datadir = path.join(dir, 'db');
  const socket = path.join(dir, 'mysql.sock');
  await run('mariadb-install-db', [
    '--no-defaults',
    `--datadir=${datadir}`,
    '--user=root',
    '--auth-root-authentication-method=socket',
    '--skip-test-db',
  ]);
  const port = await freePort();
  const spawnServer = (): { child: ChildProcess; exited: Promise<void> } => {
    const child = spawn(
      '/usr/sbin/mariadbd',
      [
        '--no-defaults',
        `--datadir=${datadir}`,
        '--user=root',
        '--bind-address=127.0.0.1',
        `--port=${port}`,
        `--socket=${socket}`,
        `--pid-file=${path.join(dir, 'mysql.pid')}`,
        `--log-error=${path.join(dir, 'mysql.err')}`,
        '--skip-log-bin',
        '--skip-name-resolve',
        '--innodb-buffer-pool-size=64M',
        // The test server trades durability for speed (docs/backends.md says what production sets);
        // a process crash (SIGKILL) still loses no committed transaction with 2.
        '--innodb-flush-log-at-trx-commit=2',
      ],
      { stdio: 'ignore' },
    );
    return { child, exited: new Promise<void>((resolve) => child.once('exit', () => resolve())) };
  };
  let server = spawnServer();
  const root = async (sql: string) =>
    (await run('mariadb', ['--no-defaults', '-S', socket, '-uroot', '-N', '-B', '-e', sql])).stdout;
  const ready = async () => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        await root('SELECT 1');
        return;
      } catch (error) {
        if (server.child.exitCode !== null || Date.now() > deadline) {
          const log = await readFile(path.join(dir, 'mysql.err'), 'utf8').catch(() => '');
          server.child.kill('SIGKILL');
          await rm(dir, { recursive: true, force: true });
          throw new Error(`MariaDB did not start: ${String(error)}\n${log.slice(-2000)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  };
  await ready();
  const password = 'agent-test-password';
  await root(
    `CREATE DATABASE ${database}; CREATE USER 'agent'@'127.0.0.1' IDENTIFIED BY '${password}'; ` +
      `GRANT ALL ON ${database}.* TO 'agent'@'127.0.0.1'; GRANT PROCESS ON *.* TO 'agent'@'127.0.0.1';`,
  );
  return {
    url: `mysql://agent:${password}@127.0.0.1:${port}/${database}`,
    port,
    database,
    root,
    async crashAndRestart() {
      server.child.kill('SIGKILL');
      await server.exited;
      server = spawnServer();
      await ready();
    },
    async stop() {
      server.child.kill('SIGTERM');
      await server.exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
