/**
 * Debian's redis-server, started by a test on free ports in a temporary folder and stopped by its
 * PID (../shared/LOCAL-SERVERS.md): a standalone server, a Cluster of three masters, or a master,
 * a replica and three Sentinels.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A port free now on 127.0.0.1 (and, with `bus`, its Cluster bus port too). */
async function freePort(bus = false): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    if (!bus) return port;
    if (port + 10000 > 65535) continue;
    const busFree = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port + 10000, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (busFree) return port;
  }
}

/** A running redis-server. */
export interface RedisProcess {
  readonly port: number;
  readonly dir: string;
  readonly child: ChildProcess;
  /** SIGKILL (a crash), then wait for the exit. */
  kill9(): Promise<void>;
  /** Starts it again on the same port and folder (after `kill9`). */
  restart(): Promise<RedisProcess>;
}

const cli = (port: number, ...args: string[]) =>
  run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args]).then((r) => r.stdout.trim());

async function waitFor(check: () => Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not come up`);
}

async function startOne(port: number, dir: string, extra: readonly string[]): Promise<RedisProcess> {
  const child = spawn(
    '/usr/bin/redis-server',
    [
      '--bind',
      '127.0.0.1',
      '--port',
      String(port),
      '--dir',
      dir,
      '--save',
      '',
      '--daemonize',
      'no',
      '--protected-mode',
      'yes',
      '--logfile',
      path.join(dir, 'redis.log'),
      ...extra,
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(async () => (await cli(port, 'PING')) === 'PONG', `redis-server on ${port}`).catch(
    async (error) => {
      child.kill('SIGKILL'); // one that never answered is not left behind
      await exited;
      throw error;
    },
  );
  return {
    port,
    dir,
    child,
    kill9: async () => {
      child.kill('SIGKILL');
      await exited;
    },
    restart: () => startOne(port, dir, extra),
  };
}

/** Stops a server by its PID (SIGTERM) and waits for it. */
async function stop(p: RedisProcess): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => p.child.once('exit', () => resolve()));
  p.child.kill('SIGTERM');
  await exited;
}

/**
 * A standalone server (`appendonly`: `always`-fsynced AOF, for the crash test; `args`: more
 * configuration, e.g. `['--rename-command', 'EVAL', '']`).
 */
export async function startRedis(options: { appendonly?: boolean; args?: readonly string[] } = {}) {
  const dir = await mkdtemp(path.join(tmpdir(), 'redis-'));
  const port = await freePort(options.args?.includes('--cluster-enabled'));
  const extra = [
    ...(options.appendonly ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
    ...(options.args ?? []),
  ];
  let server = await startOne(port, dir, extra);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get server() {
      return server;
    },
    async crashAndRestart() {
      await server.kill9();
      server = await server.restart();
    },
    async close() {
      await stop(server);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A Cluster of three masters, no replicas. */
export async function startRedisCluster() {
  const root = await mkdtemp(path.join(tmpdir(), 'redis-cluster-'));
  const nodes: RedisProcess[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freePort(true);
      const dir = path.join(root, `n${i}`);
      await run('mkdir', ['-p', dir]);
      nodes.push(
        await startOne(port, dir, [
          '--appendonly',
          'no',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          path.join(dir, 'nodes.conf'),
          '--cluster-node-timeout',
          '5000',
        ]),
      );
    }
    const addresses = nodes.map((n) => `127.0.0.1:${n.port}`);
    await run('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes']);
    for (const n of nodes)
      await waitFor(
        async () => (await cli(n.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok'),
        'the cluster',
      );
    return {
      nodes: addresses,
      ports: nodes.map((n) => n.port),
      async close() {
        await Promise.all(nodes.map(stop));
        await rm(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await Promise.all(nodes.map(stop));
    await rm(root, { recursive: true, force: true });
    throw error;
  }
}

/** Commands the server ran since the last reset (INFO commandstats), without the counting's own. */
export async function commandsSince(port: number): Promise<Record<string, number>> {
  const info = await cli(port, 'INFO', 'commandstats');
  const out: Record<string, number> = {};
  for (const line of info.split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m && !['info', 'config|resetstat', 'config'].includes(m[1] as string))
      out[m[1] as string] = Number(m[2]);
  }
  return out;
}

/** Resets the server's command counters. */
export const resetCommands = (port: number) => cli(port, 'CONFIG', 'RESETSTAT');

/**
 * A master, one replica of it and three Sentinels (redis-server --sentinel: the same binary as redis-sentinel) watching it as `name` (quorum 2, down after 1 s),
 * each on a free port (Sentinels cannot take port 0) with a writable config file of its own.
 */
export async function startRedisSentinels(name = 'agentstate') {
  const root = await mkdtemp(path.join(tmpdir(), 'redis-sentinel-'));
  const servers: RedisProcess[] = [];
  const sentinels: Array<{ port: number; child: ChildProcess }> = [];
  const stopAll = async () => {
    await Promise.all(sentinels.map((s) => stop({ child: s.child } as RedisProcess)));
    await Promise.all(servers.map(stop));
    await rm(root, { recursive: true, force: true });
  };
  try {
    const dirOf = async (n: string) => {
      const dir = path.join(root, n);
      await mkdir(dir, { recursive: true });
      return dir;
    };
    const masterPort = await freePort();
    servers.push(await startOne(masterPort, await dirOf('master'), ['--appendonly', 'no']));
    const replicaPort = await freePort();
    const replicaArgs = ['--appendonly', 'no', '--replicaof', '127.0.0.1', String(masterPort)];
    servers.push(await startOne(replicaPort, await dirOf('replica'), replicaArgs));
    await waitFor(
      async () => /slave0:.*state=online/.test(await cli(masterPort, 'INFO', 'replication')),
      'the replica',
    );
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const dir = await dirOf(`sentinel${i}`);
      const conf = path.join(dir, 'sentinel.conf');
      await writeFile(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `logfile ${path.join(dir, 'sentinel.log')}`,
          'sentinel resolve-hostnames no',
          `sentinel monitor ${name} 127.0.0.1 ${masterPort} 2`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 10000`,
          '',
        ].join('\n'),
      );
      const child = spawn('/usr/bin/redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
      sentinels.push({ port, child });
      await waitFor(async () => (await cli(port, 'PING')) === 'PONG', `redis-sentinel on ${port}`);
      // Hellos every 100 ms (not 2 s): the Sentinels find each other in a moment.
      await cli(port, 'SENTINEL', 'DEBUG', 'publish-period', '100');
    }
    // Every Sentinel knows the replica and the two other Sentinels (else no failover).
    for (const { port } of sentinels)
      await waitFor(
        async () =>
          (await cli(port, 'SENTINEL', 'REPLICAS', name)).includes(String(replicaPort)) &&
          (await cli(port, 'SENTINEL', 'SENTINELS', name)).split('\n').filter((l) => l === 'runid').length ===
            2,
        'the Sentinels',
      );
    const masterAt = async () =>
      Number(
        (await cli(sentinels[0]?.port as number, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)).split('\n')[1],
      );
    return {
      name,
      sentinels: sentinels.map((s) => `127.0.0.1:${s.port}`),
      /** The ports of the two data servers, the first master first. */
      ports: [masterPort, replicaPort] as const,
      /** The port of the master, as the Sentinels say. */
      masterPort: masterAt,
      /**
       * A planned failover (SENTINEL FAILOVER): resolves once the Sentinels name the replica as the
       * master and it says so itself; answers the new master's port.
       */
      async failover(): Promise<number> {
        const before = await masterAt();
        const answer = await cli(sentinels[0]?.port as number, 'SENTINEL', 'FAILOVER', name);
        if (answer !== 'OK') throw new Error(`SENTINEL FAILOVER answered ${answer}`);
        let after = before;
        await waitFor(
          async () => {
            after = await masterAt();
            return after !== before && /^role:master/m.test(await cli(after, 'INFO', 'replication'));
          },
          'the failover',
          30_000,
        ).catch(async (error) => {
          const { readFile } = await import('node:fs/promises');
          const log = await readFile(path.join(root, 'sentinel0', 'sentinel.log'), 'utf8');
          throw new Error(`${(error as Error).message}: ${log.split('\n').slice(-30).join('\n')}`);
        });
        // Redis 7's knobs for tests: INFO and hellos every 100 ms (not 10 s and 2 s), so that they turn
        // the old master into a replica of the new one in a moment rather than ~15 s (set only now:
        // set before, a promotion timed out here now and then).
        for (const { port } of sentinels)
          await cli(port, 'SENTINEL', 'DEBUG', 'info-period', '100', 'publish-period', '100');
        return after;
      },
      close: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
