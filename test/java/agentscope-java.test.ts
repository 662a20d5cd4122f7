/**
 * The AgentScope Java client (clients/java), an `AgentStateStore` over this API. This
 * file starts the local API in-process three times: on the memory driver, requiring tokens; on the
 * fs driver (a temporary folder, its presigned URLs served by the same server), allowing anonymous
 * access too; and on a memory driver declaring no conditional overwrite, as OSS. It mints a token per user the JUnit tests act as, and runs clients/java/build.sh
 * (javac against Debian's jars, then the JUnit console launcher), printing the JUnit test count;
 * any failing JUnit test fails it. Without javac (or the jars) it skips with one line, except
 * under CI=true, where it fails.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import type { SessionLock } from '../../lib/contract/lock.js';
import type { FsDriver } from '../../lib/drivers/fs.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { backendsFrom } from '../../lib/http/backends/local.js';
import { hsToken, SECRET } from '../http/harness.js';

const BUILD = path.resolve('clients/java/build.sh');
const JARS = ['junit-platform-console-standalone.jar', 'jackson-databind.jar', 'jackson-core.jar'].map(
  (jar) => `/usr/share/java/${jar}`,
);
/** What is missing to build the Java client here, if anything. */
const missing =
  spawnSync('javac', ['-version']).status !== 0
    ? 'javac (openjdk-17-jdk-headless)'
    : JARS.filter((jar) => !existsSync(jar)).join(', ') || undefined;
const CI = process.env.CI === 'true';
/** The users the JUnit tests act as (the anonymous user needs no token). */
const USERS = [
  'alice',
  'bob',
  'carol',
  'dave',
  'erin',
  'frank',
  'grace',
  'heidi',
  'ivan',
  'judy',
  'trudy',
  // The ported AgentScope tests, each a user of its own.
  'olivia',
  'peggy',
  'rupert',
  'sybil',
  'anon',
  '__anon__',
  'a',
  'a/b',
  '用户-ü',
];

/**
 * A driver that declares no conditional overwrite, as OSS: the store keeps its lists by position
 * append, and a save conditioned on a version is refused (501 `precondition-unsupported`).
 */
function withoutConditionalOverwrite(driver: ObjectStoreDriver): ObjectStoreDriver {
  const capabilities = { ...driver.capabilities, conditionalOverwrite: false };
  return new Proxy(driver, {
    get: (target, name, receiver) =>
      name === 'capabilities' ? capabilities : Reflect.get(target, name, receiver),
  });
}

/**
 * The local API: on the memory driver, or with `DATA_DIR` on the fs driver, whose presigned URLs
 * (values over the body limit) the same server answers; `env` adds to its configuration; with
 * `noConditionalOverwrite`, over a driver without conditional overwrite (as OSS).
 */
async function startApi(env: Record<string, string> = {}, noConditionalOverwrite = false) {
  const config = loadConfig({
    STORE_BACKEND: env.DATA_DIR ? 'fs' : 'memory',
    AUTH_JWT_SECRET: SECRET,
    LOG_LEVEL: 'SILENT',
    ...env,
  });
  let url = '';
  const made = backendsFrom(config, () => url);
  if (!made.driver) throw new Error('the Java interop runs on an object store');
  const backends: { driver: ObjectStoreDriver | FsDriver; lock?: SessionLock } = {
    ...made,
    driver: noConditionalOverwrite ? withoutConditionalOverwrite(made.driver) : made.driver,
  };
  const app = createApp(config, backends);
  const driver = backends.driver;
  const blobs =
    'serveBlob' in driver && driver.serveBlob
      ? { serveBlob: driver.serveBlob, limitBytes: config.MAX_BLOB_BYTES }
      : undefined;
  const server: Server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES, blobs);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, url };
}

/** Runs a command to its end (asynchronously: the servers above answer it meanwhile). */
function run(command: string, args: string[], env: Record<string, string>) {
  return new Promise<{ code: number | null; out: string }>((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.stderr.on('data', (chunk) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

if (missing && !CI)
  console.log(`[java] skipped: ${missing} not found; the AgentScope Java client is not built`);

describe.skipIf(missing !== undefined && !CI)('AgentScope Java client (clients/java) [java]', () => {
  let authenticated: Awaited<ReturnType<typeof startApi>>;
  let anonymous: Awaited<ReturnType<typeof startApi>>;
  let noCas: Awaited<ReturnType<typeof startApi>>;
  let dataDir: string;

  beforeAll(async () => {
    authenticated = await startApi();
    // The second also keeps its data on fs, so values over the body limit go through presigned URLs.
    dataDir = await mkdtemp(path.join(tmpdir(), 'agentscope-java-'));
    anonymous = await startApi({ ALLOW_ANONYMOUS: 'true', DATA_DIR: dataDir });
    noCas = await startApi({}, true);
  });
  afterAll(async () => {
    for (const api of [authenticated, anonymous, noCas]) {
      api?.server.closeAllConnections();
      await new Promise<void>((r) => (api ? api.server.close(() => r()) : r()));
    }
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('builds with javac and passes every JUnit test against the local API', async () => {
    expect(missing, 'CI runs the Java tests: .ci/run installs the JDK and the jars').toBeUndefined();
    const tokens = Object.fromEntries(
      await Promise.all(USERS.map(async (u) => [u, await hsToken({ sub: u })])),
    );
    const { code, out } = await run('bash', [BUILD], {
      AGENT_STATE_URL: authenticated.url,
      AGENT_STATE_ANON_URL: anonymous.url,
      AGENT_STATE_NO_CAS_URL: noCas.url,
      AGENT_STATE_TOKENS: JSON.stringify(tokens),
    });
    const count = (what: string) =>
      Number(new RegExp(`\\[\\s*(\\d+) tests ${what}\\s*\\]`).exec(out)?.[1] ?? NaN);
    const [found, successful, failed] = [count('found'), count('successful'), count('failed')];
    console.log(`[java] JUnit: ${found} tests, ${successful} successful, ${failed} failed`);
    if (code !== 0 || failed !== 0) console.log(out);
    expect(code, 'build.sh exit code').toBe(0);
    expect(failed).toBe(0);
    expect(successful).toBe(found);
    expect(found).toBeGreaterThanOrEqual(50);
    // The count clients/java/README.md states is the count there is.
    const readme = readFileSync(path.resolve('clients/java/README.md'), 'utf8');
    expect(Number(/\((\d+) tests, which that file checks/.exec(readme)?.[1]), 'README count').toBe(found);
  });
});
