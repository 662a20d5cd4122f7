/**
 * The session console in Debian's chromium (driven by playwright-core), against the local server
 * (`dist/local/server.mjs`, as `npm start` runs it: fs storage, the in-process lock) with seeded data:
 * a session with values, a 20,000-item list with two archives, a held lease, a workspace. It clicks
 * through every view and checks what is on screen against the API's answers, runs axe-core on each
 * view (0 serious or critical violations), measures the first render of the big list and the rows
 * in the DOM, checks where the token goes, and saves a screenshot of each view under
 * test-artifacts/console/ (gitignored).
 *
 * Skipped, with a line that says so, where chromium is not installed; under `CI=true` its absence
 * fails (.ci/run installs it).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../lib/client/node/index.js';
import { restoring } from '../../lib/http/problems.js';
import { encodeUrlId } from '../../lib/protocol/url-ids.js';
import { hsToken, SECRET } from '../http/harness.js';

// The page's globals, as the functions run in it use them (this file is type-checked without the DOM's types).
// biome-ignore lint/suspicious/noExplicitAny: the page's objects, checked by what the page does
type InPage = any;
declare const document: InPage;
declare const window: InPage;
declare const sessionStorage: InPage;
declare const requestAnimationFrame: (f: () => void) => void;

const CHROMIUM = '/usr/bin/chromium';
const installed = existsSync(CHROMIUM) && existsSync('/usr/lib/chromium/chromium');
const inCi = process.env.CI === 'true';
if (!installed && !inCi)
  console.log('console browser test skipped: Debian chromium is not installed (apt-get install -y chromium)');

const ARTIFACTS = 'test-artifacts/console';
const ITEMS = 20_000;
const SESSION = 'support/ticket-4711';
const OTHER = 'nightly-eval';
const run = promisify(execFile);
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

describe.runIf(installed || inCi)('the session console in Debian chromium', () => {
  let server: ChildProcess | undefined;
  let dataDir: string;
  let base: string;
  let token: string;
  let browser: Browser;
  let page: Page;
  const requests: Array<{ method: string; url: string; headers: Record<string, string> }> = [];
  const logged: string[] = [];
  const api = async (p: string) => {
    const res = await fetch(`${base}${p}`, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, etag: res.headers.get('etag'), body: (await res.json()) as InPage };
  };
  const sid = encodeUrlId(SESSION);
  const view = (...parts: string[]) => `${base}/console/#/${parts.map(encodeURIComponent).join('/')}`;

  /** axe-core on the page as it is: its serious and critical violations, by rule. */
  async function axe(): Promise<string[]> {
    await page.addScriptTag({ url: `${base}/console/axe-under-test.js` });
    const found = await page.evaluate(async () => {
      const w = window as unknown as {
        axe: { run(): Promise<{ violations: Array<{ id: string; impact: string; nodes: unknown[] }> }> };
      };
      const result = await w.axe.run();
      return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
    });
    return found
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.nodes})`);
  }
  const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}/${name}.png`, fullPage: false });

  beforeAll(async () => {
    if (!installed) throw new Error(`CI=true and ${CHROMIUM} is missing: .ci/run installs Debian's chromium`);
    await run(process.execPath, ['scripts/build.mjs', '--quiet', 'local/server', 'console']);
    await mkdir(ARTIFACTS, { recursive: true });
    dataDir = await mkdtemp(path.join(tmpdir(), 'console-test-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = spawn(process.execPath, ['dist/local/server.mjs'], {
      env: {
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        AUTH_JWT_SECRET: SECRET,
        LOG_LEVEL: 'SILENT',
        NODE_OPTIONS: '',
      },
      stdio: 'ignore',
    });
    for (let i = 0; ; i++) {
      const ok = await fetch(`${base}/v1/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (i > 100) throw new Error('the local server did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    token = await hsToken({ sub: 'dev-alice' });

    // The seed, through the API.
    const client = createHttpClient({ baseUrl: base, token: () => token });
    await client.save(SESSION, 'profile', {
      name: 'Ada',
      plan: 'pro',
      flags: { beta: true },
      visits: [1, 2, 3],
    });
    await client.save(SESSION, 'last-tool', 'search_docs');
    await client.save(OTHER, 'score', 0.93);
    const item = (i: number) => ({ role: i % 2 ? 'assistant' : 'user', text: `turn ${i}` });
    await client.saveList(
      SESSION,
      'history',
      Array.from({ length: 10 }, (_, i) => ({ draft: i })),
    );
    // A rewrite archives the first ten; a truncate archives the ten above 20,000.
    const all = Array.from({ length: ITEMS + 10 }, (_, i) => item(i));
    for (let at = 0; at < all.length; ) {
      const chunk = all.slice(at, at + 1000);
      const written = await (at === 0
        ? client.saveList(SESSION, 'history', chunk)
        : client.appendList(SESSION, 'history', chunk, { expectedCount: at }));
      expect(written.count).toBe(at + chunk.length);
      at += chunk.length;
    }
    const whole = await api(`/v1/sessions/${sid}/lists/history?offset=0&limit=1`);
    await client.truncateList(SESSION, 'history', { count: ITEMS, expectedHash: whole.body.hash });
    await client.acquireLock(SESSION, { owner: 'worker-7', leaseMs: 900_000 });
    await client.uploadWorkspace(SESSION, 'repo', new TextEncoder().encode('x'.repeat(100_000)));

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    // axe-core, served same-origin, so the console's CSP stays as it is.
    const axeSource = await readFile(AXE);
    await context.route('**/console/axe-under-test.js', (route) =>
      route.fulfill({ status: 200, contentType: 'text/javascript', body: axeSource }),
    );
    page = await context.newPage();
    await page.addInitScript(() => {
      const w = window as unknown as { cspViolations: string[] };
      w.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (e: { violatedDirective: string }) =>
        w.cspViolations.push(e.violatedDirective),
      );
    });
    page.on('request', (r) => {
      if (!r.url().endsWith('axe-under-test.js'))
        requests.push({ method: r.method(), url: r.url(), headers: r.headers() });
    });
    page.on('console', (m) => logged.push(m.text()));
    page.on('pageerror', (e) => logged.push(String(e)));
  });

  afterAll(async () => {
    await browser?.close();
    if (server?.pid) server.kill('SIGTERM');
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('asks for a token once, then lists the sessions with how many are loaded', async () => {
    await page.goto(`${base}/console/`);
    await page.getByLabel('Bearer token', { exact: true }).waitFor();
    expect(await axe()).toEqual([]);
    await shot('token');
    await page.getByLabel('Bearer token', { exact: true }).fill(token);
    await page.getByRole('button', { name: 'Use token' }).click();
    const listed = (await api('/v1/sessions')).body.sessions.map((s: { sessionId: string }) => s.sessionId);
    await page.getByRole('link', { name: SESSION }).waitFor();
    const onScreen = await page.locator('tbody tr td:first-child').allTextContents();
    expect(onScreen.sort()).toEqual([...listed].sort());
    expect(await page.locator('#loaded').textContent()).toBe(`${listed.length} of ${listed.length} loaded`);
    await page.getByLabel('Filter by id prefix', { exact: true }).fill('support/');
    expect(await page.locator('tbody tr td:first-child').allTextContents()).toEqual([SESSION]);
    expect(await axe()).toEqual([]);
    await shot('sessions');
    await page.getByLabel('Filter by id prefix', { exact: true }).fill('');
    // Keyboard: Tab reaches the session's link, Enter opens it.
    await page.getByRole('link', { name: SESSION }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Session ${SESSION}` }).waitFor();
  });

  it('a session: its keys by kind, the lease counting down, its workspaces', async () => {
    const keys = (await api(`/v1/sessions/${sid}/keys`)).body;
    const lock = await api(`/v1/sessions/${sid}/lock`);
    expect(lock.status).toBe(200);
    expect(await page.locator('#lease-owner').textContent()).toBe(lock.body.owner);
    expect(await page.locator('#lease-token').textContent()).toBe(String(lock.body.token));
    const left = await page.locator('#lease-left').textContent();
    expect(left).toMatch(/^1[45] min \d+ s left$/);
    await page.waitForFunction(
      (before) => document.getElementById('lease-left')?.textContent !== before,
      left,
    );
    const section = (title: string) =>
      page.locator('section', { has: page.getByRole('heading', { name: title }) });
    expect(await section('Values').locator('tbody tr td:first-child').allTextContents()).toEqual(
      keys.values.map((v: { key: string }) => v.key),
    );
    expect(await section('Lists').locator('tbody tr td:nth-child(2)').allTextContents()).toEqual(['20,000']);
    const workspaces = (await api(`/v1/sessions/${sid}/workspaces`)).body.workspaces;
    expect(await section('Workspaces').locator('tbody tr td:first-child').allTextContents()).toEqual(
      workspaces.map((w: { name: string }) => w.name),
    );
    expect(await page.locator('#last-activity').textContent()).toMatch(/^Last activity /);
    expect(await axe()).toEqual([]);
    await shot('session');
  });

  it('a value: collapsible JSON with its etag', async () => {
    await page.getByRole('link', { name: 'profile' }).click();
    const value = await api(`/v1/sessions/${sid}/state/profile`);
    await page.locator('#etag').waitFor();
    expect(`"${await page.locator('#etag').textContent()}"`).toBe(value.etag);
    const json = page.locator('#json');
    expect(await json.textContent()).toContain('"Ada"');
    await json.locator('summary').first().click(); // collapses the object
    expect(await json.locator('details').first().getAttribute('open')).toBeNull();
    expect(await page.getByRole('button', { name: 'Copy as JSON' }).isVisible()).toBe(true);
    expect(await axe()).toEqual([]);
    await shot('value');
  });

  it('the 20,000-item list: first render within 1 s, at most 200 rows in the DOM, newest first, paged as it scrolls', async () => {
    // A navigation of its own (not a hash change), so performance.now() counts from it.
    await page.goto('about:blank');
    await page.goto(view('sessions', SESSION, 'lists', 'history'));
    const firstRowMs = await page.evaluate(
      () =>
        new Promise<number>((resolve) => {
          const check = () => {
            const row = document.querySelector('.vrow[data-position]');
            if (row && !row.textContent?.includes('loading')) resolve(performance.now());
            else requestAnimationFrame(check);
          };
          check();
        }),
    );
    const rows = await page.locator('.vrow').count();
    console.log(
      `console: first row of the ${ITEMS}-item list after ${firstRowMs.toFixed(0)} ms; ${rows} rows in the DOM`,
    );
    expect(firstRowMs).toBeLessThanOrEqual(1000);
    expect(rows).toBeLessThanOrEqual(200);
    const newest = (await api(`/v1/sessions/${sid}/lists/history?offset=${ITEMS - 3}&limit=3`)).body;
    const first = page.locator('.vrow').first();
    expect(await first.getAttribute('data-position')).toBe(String(ITEMS - 1));
    expect(await first.textContent()).toBe(`#${ITEMS - 1}${JSON.stringify(newest.items[2])}`);
    expect(await page.locator('#hash').textContent()).toBe(newest.hash);
    expect(await page.locator('#count').textContent()).toBe('20,000');
    // Scrolled to the middle: another page loads, still few rows.
    await page.locator('#items').evaluate((el) => {
      el.scrollTop = 10_000 * 28;
    });
    await page.waitForFunction(() =>
      document.querySelector('.vrow[data-position="9999"]')?.textContent?.includes('turn'),
    );
    const middle = (await api(`/v1/sessions/${sid}/lists/history?offset=9999&limit=1`)).body.items[0];
    expect(await page.locator('.vrow[data-position="9999"]').textContent()).toBe(
      `#9999${JSON.stringify(middle)}`,
    );
    expect(await page.locator('.vrow').count()).toBeLessThanOrEqual(200);
    // Keyboard: Home selects the newest, ArrowDown the next; the item shows with a link to it.
    await page.locator('#items').focus();
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowDown');
    await page.getByRole('heading', { name: `Item #${ITEMS - 2}` }).waitFor();
    expect(await page.getByRole('link', { name: 'Link to this item' }).getAttribute('href')).toContain(
      `?item=${ITEMS - 2}`,
    );
    // The text filter, over what is loaded.
    await page.getByLabel('Filter loaded items by text', { exact: true }).fill('turn 19990');
    await page.waitForFunction(() => document.getElementById('list-status')?.textContent?.includes('match'));
    expect(await page.locator('.vrow').allTextContents()).toEqual([
      `#19990${JSON.stringify({ role: 'user', text: 'turn 19990' })}`,
    ]);
    await page.getByLabel('Filter loaded items by text', { exact: true }).fill('');
    expect(await axe()).toEqual([]);
    await shot('list');
  });

  it("the list's archives, opened the same way", async () => {
    const { archives } = (await api(`/v1/sessions/${sid}/lists/history/archives`)).body;
    expect(archives).toHaveLength(2);
    const shown = await page.locator('#archives li').allTextContents();
    expect(shown).toHaveLength(2);
    for (const a of archives)
      expect(
        shown.some(
          (t) => t.startsWith(a.archiveId) && t.includes(`${a.count} items from position ${a.offset}`),
        ),
      ).toBe(true);
    const truncated = archives.find((a: { offset: number }) => a.offset === ITEMS);
    await page.getByRole('link', { name: truncated.archiveId, exact: true }).click();
    await page.getByRole('heading', { name: `Archive ${truncated.archiveId} of list history` }).waitFor();
    const items = (
      await api(`/v1/sessions/${sid}/lists/history/archives/${truncated.archiveId}?offset=0&limit=10`)
    ).body;
    await page.waitForFunction(() => !document.querySelector('.vrow')?.textContent?.includes('loading'));
    expect(await page.locator('.vrow').first().textContent()).toBe(
      `#${ITEMS + 9}${JSON.stringify(items.items[9])}`,
    );
    expect(await page.locator('.vrow').count()).toBe(10);
    expect(await axe()).toEqual([]);
    await shot('archive');
  });

  it('a workspace: size, storage class and restore state', async () => {
    await page.goto(view('sessions', SESSION));
    await page.getByRole('link', { name: 'repo' }).click();
    await page.locator('#ws-class').waitFor();
    const [w] = (await api(`/v1/sessions/${sid}/workspaces`)).body.workspaces;
    expect(await page.locator('#ws-size').textContent()).toContain(`(${w.size.toLocaleString('en')} bytes)`);
    expect(await page.locator('#ws-class').textContent()).toBe(w.storageClass);
    expect(await page.locator('#ws-restore').textContent()).toBe('readable now');
    expect(await axe()).toEqual([]);
    await shot('workspace');
  });

  it('errors a person understands: a 404 names what is missing; a refused token asks for a new one', async () => {
    await page.goto(view('sessions', SESSION, 'values', 'nothing-here'));
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toBe(
      `Not found: value nothing-here of session ${SESSION}.`,
    );
    await page.goto(view('sessions', 'no-such-session'));
    await page.getByText('Not found: session no-such-session (it has no data).').waitFor();
    expect(await page.getByRole('alert').count()).toBe(1);
    await page.evaluate(() => sessionStorage.setItem('agent-state-console-token', 'not.a.token'));
    await page.goto(view('sessions'));
    await page.getByText('The token was refused or has run out: paste a new one.').waitFor();
    await page.getByLabel('Bearer token', { exact: true }).fill(token);
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.getByRole('link', { name: SESSION }).waitFor();
  });

  it('usable at 375 px: nothing wider than the screen', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    const views: Array<[string[], string]> = [
      [['sessions'], 'tbody tr'],
      [['sessions', SESSION], '#lease-owner'],
      [['sessions', SESSION, 'lists', 'history'], '.vrow[data-position]'],
    ];
    for (const [parts, shown] of views) {
      await page.goto(view(...parts));
      await page.locator(shown).first().waitFor();
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, parts.join('/')).toBeLessThanOrEqual(375);
    }
    expect(await axe()).toEqual([]);
    await shot('list-375');
    await page.goto(view('sessions', SESSION));
    await page.locator('#lease-owner').waitFor();
    await shot('session-375');
  });

  it('sent only GET and HEAD; the token only ever in Authorization; no CSP violation; nothing logged', async () => {
    expect(requests.length).toBeGreaterThan(20);
    expect(new Set(requests.map((r) => r.method))).toEqual(new Set(['GET', 'HEAD']));
    for (const r of requests) {
      expect(r.url).not.toContain(token);
      expect(new URL(r.url).origin).toBe(base);
      for (const [name, value] of Object.entries(r.headers))
        if (name !== 'authorization') expect(value, name).not.toContain(token);
      if (new URL(r.url).pathname.startsWith('/v1/')) expect(r.headers.authorization).toMatch(/^Bearer /);
      else expect(r.headers.authorization).toBeUndefined();
    }
    expect(requests.some((r) => r.headers.authorization === `Bearer ${token}`)).toBe(true);
    expect(page.url()).not.toContain(token);
    expect(
      await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations),
    ).toEqual([]);
    expect(logged.filter((l) => l.includes(token))).toEqual([]);
    // The only console lines are the 404s and 401 the errors test asked for.
    expect(logged.filter((l) => !/status of (404|401)/.test(l))).toEqual([]);
  });

  // After the test that checks nothing else is logged: an aborted request logs a line of its own.
  it('a restore in progress shows as such, a network failure offers a retry; both recover', async () => {
    const wsPath = `/v1/sessions/${sid}/workspaces/repo`;
    const { body: ready } = await api(wsPath);
    const { download: _, expiresAt: __, status: ___, ...about } = ready as Record<string, unknown>;
    // The server's own 202 (lib/http/problems.ts), as an archived workspace answers it.
    const answer = restoring('archived; a restore is in progress', about);
    let mode: 'restoring' | 'offline' | 'through' = 'restoring';
    await page.route(`**${wsPath}`, (route) =>
      mode === 'restoring'
        ? route.fulfill({ status: answer.status, headers: answer.headers, body: answer.body as string })
        : mode === 'offline'
          ? route.abort('internetdisconnected')
          : route.continue(),
    );
    try {
      await page.goto(view('sessions', SESSION, 'workspaces', 'repo'));
      await page.locator('#ws-restore').waitFor();
      expect(await page.locator('#ws-restore').textContent()).toBe(
        'restoring: archived; a restore is in progress',
      );
      expect(await page.locator('#ws-class').textContent()).toBe(String(about.storageClass));

      mode = 'offline';
      await page.goto('about:blank');
      await page.goto(view('sessions', SESSION, 'workspaces', 'repo'));
      await page.getByRole('alert').waitFor();
      expect(await page.getByRole('alert').textContent()).toContain(
        'The API could not be reached while reading workspace repo.',
      );
      expect(await axe()).toEqual([]);
      mode = 'through';
      await page.getByRole('button', { name: 'Retry' }).click();
      await page.locator('#ws-restore').waitFor();
      expect(await page.locator('#ws-restore').textContent()).toBe('readable now');
    } finally {
      await page.unroute(`**${wsPath}`);
    }
  });

  it('all its assets together are at most 150 kB gzipped', async () => {
    const sizes = await Promise.all(
      ['index.html', 'console.js', 'console.css'].map(
        async (f) => gzipSync(await readFile(`dist/console/${f}`), { level: 9 }).length,
      ),
    );
    const total = sizes.reduce((a, b) => a + b, 0);
    console.log(`console: assets ${(total / 1024).toFixed(1)} kB gzipped (${sizes.join(' + ')} bytes)`);
    expect(total).toBeLessThanOrEqual(150 * 1024);
    expect(total).toBeGreaterThan(1000);
  });
});
