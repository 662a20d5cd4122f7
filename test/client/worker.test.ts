/**
 * The universal client in a browser: the entry bundled by esbuild for `platform: 'browser'` runs in
 * a Web Worker of Debian's chromium (driven by playwright-core), served from a page on another
 * 127.0.0.1 origin than the API, which allows it by CORS_ORIGINS. The worker gets a token, saves
 * and reads a value, appends to a list, and runs a turn (begin, append, save, commit with
 * release); the store holds what it wrote, the chain hash it computes is the server's, and an
 * error from a bad token carries its status and request id (CORS exposes `X-Request-Id`). The
 * browser keeps its own User-Agent.
 *
 * Skipped, with a line that says so, where chromium is not installed; under `CI=true` its absence
 * is a failure (CI installs it: .ci/run).
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { build } from 'esbuild';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { chainHash, EMPTY_HASH } from '../../lib/contract/hash.js';
import type { SessionStore } from '../../lib/contract/types.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { createStateStore } from '../../lib/store/store.js';
import { hsToken, SECRET } from '../http/harness.js';

/** Debian's wrapper, and the binary it runs. */
const CHROMIUM = '/usr/bin/chromium';
const installed = existsSync(CHROMIUM) && existsSync('/usr/lib/chromium/chromium');
const inCi = process.env.CI === 'true';
if (!installed && !inCi)
  console.log('worker test skipped: Debian chromium is not installed (apt-get install -y chromium)');

/** The worker: the universal entry, and a smoke run of it on the message's URL and token. */
const WORKER = `
import { chainHash, createHttpClient, EMPTY_HASH, USER_AGENT } from ${JSON.stringify(path.resolve('lib/entries/client.ts'))};
self.onmessage = async ({ data: { baseUrl, token, sessionId } }) => {
  try {
    const client = createHttpClient({ baseUrl, token });
    const saved = await client.save(sessionId, 'greeting', { hello: 'from a worker' });
    const value = await client.get(sessionId, 'greeting');
    const appended = await client.appendList(sessionId, 'messages', [{ role: 'user', content: 'hi' }], { expectedCount: 0 });
    const turn = await client.beginTurn(sessionId, { leaseMs: 10000, values: ['greeting'], lists: [{ key: 'messages' }] });
    const seen = { greeting: await turn.get('greeting'), messages: turn.list('messages').count };
    turn.append('messages', [{ role: 'assistant', content: 'hello' }]).save('greeting', { hello: 'again' });
    const committed = await turn.commit({ release: true });
    const list = await client.getList(sessionId, 'messages');
    let refused;
    try {
      await createHttpClient({ baseUrl, token: 'not-a-token' }).get(sessionId, 'greeting');
    } catch (e) {
      refused = { name: e.name, status: e.status, requestId: e.requestId };
    }
    postMessage({
      ok: true, saved: typeof saved.version, value, appended, seen,
      committed: { lists: committed.lists, lease: committed.lease },
      list: { items: list.items, count: list.count, hash: list.hash },
      localHash: chainHash(EMPTY_HASH, list.items), refused, userAgent: USER_AGENT,
    });
  } catch (e) {
    postMessage({ ok: false, error: String(e && e.stack || e), status: e && e.status, code: e && e.code });
  }
};
`;

/** What the test uses of a page's `Worker`. */
interface PageWorker {
  onmessage: (event: { data: Record<string, unknown> }) => void;
  onerror: (event: { message: string }) => void;
  postMessage(message: unknown): void;
}

const PAGE = '<!doctype html><meta charset="utf-8"><title>agent-state-store worker smoke</title>';

describe.runIf(installed || inCi)('universal client in a Web Worker of Debian chromium', () => {
  let site: Server;
  let api: Server;
  let browser: Browser;
  let origin: string;
  let baseUrl: string;
  let store: SessionStore;
  const seen: Array<{ method: string; origin?: string; userAgent?: string }> = [];

  beforeAll(async () => {
    if (!installed) throw new Error(`CI=true and ${CHROMIUM} is missing: .ci/run installs Debian's chromium`);
    const bundled = await build({
      stdin: { contents: WORKER, resolveDir: process.cwd(), loader: 'js', sourcefile: 'worker.mjs' },
      bundle: true,
      platform: 'browser',
      format: 'iife',
      target: 'es2022',
      write: false,
      logLevel: 'silent',
    });
    const worker = bundled.outputFiles[0]?.text ?? '';
    site = createServer((request, response) => {
      if (request.url === '/worker.js')
        response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(worker);
      else if (request.url === '/')
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
      else response.writeHead(404).end();
    });
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;

    // The local server (memory storage, HS256 tokens), allowing the page's origin.
    const config = loadConfig({
      STORE_BACKEND: 'memory',
      AUTH_JWT_SECRET: SECRET,
      LOG_LEVEL: 'SILENT',
      CORS_ORIGINS: origin,
    });
    const driver = createMemoryDriver();
    store = createStateStore({ driver, prefix: config.STATE_PREFIX }).forUser('alice');
    const app = createApp(config, { driver, lock: createMemoryLock() });
    api = createNodeServer(async (request) => {
      seen.push({
        method: request.method,
        ...(request.headers.origin ? { origin: request.headers.origin } : {}),
        ...(request.headers['user-agent'] ? { userAgent: request.headers['user-agent'] } : {}),
      });
      return app.handle(request);
    }, config.BODY_LIMIT_BYTES);
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    baseUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => (api ? api.close(r) : r(undefined)));
    await new Promise((r) => (site ? site.close(r) : r(undefined)));
  });

  it('gets a token, saves and reads a value, appends, runs a turn; the store holds it all', async () => {
    const page = await browser.newPage();
    const logs: string[] = [];
    page.on('console', (m) => logs.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => logs.push(`page error: ${e.message}`));
    await page.goto(`${origin}/`);
    const token = await hsToken({ sub: 'alice' });
    const sessionId = `worker-${Date.now()}`;
    const result = await page.evaluate(
      (message) =>
        new Promise<Record<string, unknown>>((resolve) => {
          // The page's Worker (this file is type-checked without the DOM's types).
          const { Worker } = globalThis as unknown as { Worker: new (url: string) => PageWorker };
          const worker = new Worker('/worker.js');
          worker.onmessage = (event) => resolve(event.data);
          worker.onerror = (event) => resolve({ ok: false, error: `worker error: ${event.message}` });
          worker.postMessage(message);
        }),
      { baseUrl, token, sessionId },
    );
    await page.close();
    expect(result, logs.join('\n')).toMatchObject({ ok: true });
    const items = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
    ];
    expect(result).toMatchObject({
      saved: 'string',
      value: { hello: 'from a worker' },
      appended: { action: 'created', count: 1, hash: chainHash(EMPTY_HASH, items.slice(0, 1)) },
      seen: { greeting: { hello: 'from a worker' }, messages: 1 },
      committed: { lists: [{ key: 'messages', count: 2, hash: chainHash(EMPTY_HASH, items) }] },
      list: { items, count: 2, hash: chainHash(EMPTY_HASH, items) },
      localHash: chainHash(EMPTY_HASH, items),
      refused: { name: 'UnauthorizedError', status: 401 },
    });
    expect((result.committed as { lease?: { released?: boolean } }).lease?.released).toBe(true);
    expect((result.refused as { requestId?: string }).requestId).toMatch(/\S/);
    // What the store holds, read in process.
    expect(await store.get(sessionId, 'greeting')).toEqual({ hello: 'again' });
    expect((await store.getList(sessionId, 'messages')).items).toEqual(items);
    // Cross-origin calls, preflighted, from the page's origin, with the browser's own User-Agent.
    expect(seen.some((s) => s.method === 'OPTIONS')).toBe(true);
    const calls = seen.filter((s) => s.method !== 'OPTIONS');
    expect(calls.length).toBeGreaterThanOrEqual(7);
    for (const call of calls) {
      expect(call.origin).toBe(origin);
      expect(call.userAgent).toMatch(/Chrome/);
      expect(call.userAgent).not.toContain(String(result.userAgent));
    }
  });
});
