/**
 * `npm start` prints the console's URL and serves it with its CSP; it stops when it is signalled,
 * and no server is left behind holding the port.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';

/** A port nothing listens on: listen on 0, note the port, close. */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

/** Whether a new server can listen on `port` now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

let child: ChildProcess | undefined;
let dir: string | undefined;

afterAll(async () => {
  // Whatever the test saw, leave nothing running: the spawned process group is npm, sh and node.
  if (child?.pid) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {}
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('npm start prints the console URL and serves it; SIGTERM frees the port within 2 s', async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'npm-start-'));
  const port = await freePort();
  child = spawn('npm', ['start'], {
    env: {
      ...process.env,
      DATA_DIR: dir,
      PORT: String(port),
      HOST: '127.0.0.1',
      ALLOW_ANONYMOUS: 'true',
      NODE_OPTIONS: '',
      npm_config_update_notifier: 'false',
    },
    // Its own process group, so the cleanup above reaches a server npm left behind.
    detached: true,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let printed = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    printed += chunk.toString();
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    const status = await fetch(`${base}/v1/health`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    if (Date.now() > deadline) throw new Error('npm start did not answer health within 20 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  const consoleUrl = `${base}/console/`;
  expect(printed).toContain(`console:      ${consoleUrl}`);
  const page = await fetch(consoleUrl);
  expect(page.status).toBe(200);
  expect(page.headers.get('content-security-policy')).toBe("default-src 'self'; frame-ancestors 'none'");
  expect(await page.text()).toContain('<script type="module" src="console.js"></script>');
  expect((await fetch(`${base}/console/console.js`)).headers.get('content-type')).toMatch(
    /^text\/javascript/,
  );
  // A keep-alive connection is open from the health check: stopping must not wait for it.
  child.kill('SIGTERM');
  const stopBy = Date.now() + 2000;
  let free = false;
  while (!free && Date.now() < stopBy) {
    await new Promise((r) => setTimeout(r, 100));
    free = await canListen(port);
  }
  expect(free).toBe(true);
});
